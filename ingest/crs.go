package ingest

import (
	"fmt"

	"siteenv/geo"
)

// CRSMismatchError: a file names a CRS other than the --source-crs given.
// Nothing is published.
type CRSMismatchError struct {
	What   string // where the file names its CRS: ".prj", "gpkg_spatial_ref_sys", "crs member"...
	File   geo.CRS
	Option geo.CRS
}

func (e *CRSMismatchError) Error() string {
	return fmt.Sprintf("the file's CRS (%s, from its %s) disagrees with --source-crs %s: fix the flag or the file", e.File, e.What, e.Option)
}

// MissingCRSError: a file whose coordinates are not longitude, latitude
// names no CRS and none was given. Nothing is published.
type MissingCRSError struct {
	What string // what is missing: "no .prj", "srs_id 0"...
}

func (e *MissingCRSError) Error() string {
	return fmt.Sprintf("the coordinate system is unknown (%s) and the coordinates are not longitude, latitude: give --source-crs (supported: %s)", e.What, geo.SourceCRSList)
}

// reconcileCRS returns the CRS a file's coordinates are in, from what the
// file names (named is false when it names none) and cfg's SourceCRS.
func (cfg *config) reconcileCRS(what string, named bool, fileCRS geo.CRS) (geo.CRS, error) {
	if !named {
		return cfg.crs, nil
	}
	if cfg.crsGiven && !sameCRS(fileCRS, cfg.crs) {
		return 0, &CRSMismatchError{What: what, File: fileCRS, Option: cfg.crs}
	}
	return fileCRS, nil
}

// sameCRS: CRS84 and EPSG:4326 are the same CRS for the service.
func sameCRS(a, b geo.CRS) bool {
	norm := func(c geo.CRS) geo.CRS {
		if c == geo.CRS84 {
			return geo.EPSG4326
		}
		return c
	}
	return norm(a) == norm(b)
}

// lonLatBox reports whether a bounding box can hold longitudes, latitudes.
func lonLatBox(minX, minY, maxX, maxY float64) bool {
	return minX >= -180 && maxX <= 180 && minY >= -90 && maxY <= 90
}
