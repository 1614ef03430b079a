package geo

import (
	"github.com/paulmach/orb"

	"siteenv/internal/jsonscan"
	"siteenv/internal/memo"
)

// Stored geometry is GeoJSON text the service wrote itself and keeps in the
// ledger: a site's boundary, a release's coverage, a gazetteer parcel. It
// was checked when it came in, so it is read leniently (ReadOptions.Source)
// and quickly; one that cannot be read is damaged data or a bug, never the
// client's input.

// StoredError is a stored geometry that cannot be decoded. It matches none
// of the package's sentinels (in particular not ErrInvalidGeometry, which
// the API answers as the client's invalid_geometry): it reaches the API's
// error map as an internal error.
type StoredError struct {
	What   string // which geometry, e.g. "coverage of layer x release y"
	Reason string
}

func (e *StoredError) Error() string {
	return "geo: stored " + e.What + " cannot be decoded: " + e.Reason
}

// DecodeStored decodes a stored GeoJSON geometry of one of the six GeoJSON
// types. Absent, null or anything but one geometry object is a
// *StoredError naming what. Safe for concurrent use; raw is only read.
func DecodeStored(what string, raw []byte) (orb.Geometry, error) {
	g, err := decodeStored(what, raw)
	if err == nil && g == nil {
		return nil, &StoredError{What: what, Reason: "no geometry (null)"}
	}
	return g, err
}

func decodeStored(what string, raw []byte) (orb.Geometry, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	s := jsonscan.Scanner{B: raw}
	g, err := ReadGeometry(&s, ReadOptions{Source: true})
	if err == nil && !s.AtEnd() {
		err = s.Syntax("the end of input after the geometry")
	}
	if err != nil {
		return nil, &StoredError{What: what, Reason: err.Error()}
	}
	return g, nil
}

// CoverageKey names a release's coverage in the coverage cache.
type CoverageKey struct{ Layer, Release string }

// maxCoverages bounds the coverage cache (as the engine's prepared covers).
const maxCoverages = 1024

// coverages is the process's one cache of decoded coverage polygons. A
// release's coverage is immutable and kilobytes of GeoJSON, frozen into
// every query of the release and read by catalogue listings, maps and
// reports; decoding it took more of a small query's CPU than the engine.
// Sharing one decoded value also lets the engine find its prepared cover by
// identity instead of comparing every vertex.
var coverages = memo.New[CoverageKey, orb.Geometry](maxCoverages)

// DecodeCoverage decodes a release's stored coverage, once per key and
// bytes: absent or null is (nil, nil), a coverage not known. The geometry
// is shared between callers, who must not change it. Errors are
// *StoredError. Safe for concurrent use.
func DecodeCoverage(k CoverageKey, raw []byte) (orb.Geometry, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return coverages.Get(k, raw, func(raw []byte) (orb.Geometry, error) {
		return decodeStored("coverage of layer "+k.Layer+" release "+k.Release, raw)
	})
}
