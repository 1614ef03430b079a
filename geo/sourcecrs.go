package geo

import (
	"math"
	"strconv"
	"strings"
)

// Source CRSs: the coordinate systems publishers ship Australian data in,
// which ingest accepts besides the contract's (see ParseSourceCRS). None of
// them is a CRS of the API: ParseCRS, CRSFromEPSG and Valid keep to the
// contract's list, while ToCRS84, FromCRS84 and ReprojectToCRS84 take every
// source CRS.
//
// GDA94 positions (EPSG:4283, the MGA94 zones 28348..28358, Australian
// Albers EPSG:3577) are carried to GDA2020 by the 7-parameter
// transformation EPSG:8048, as PROJ applies it when no grid is installed.
// EPSG:9473 is Albers on GDA2020. EPSG:3857 (Web Mercator, WGS 84) is taken
// as GDA2020, like EPSG:4326 (the service's convention: WGS 84 = GDA2020).
const (
	EPSG4283 CRS = 4283 // GDA94 geographic, used in longitude, latitude order
	EPSG3577 CRS = 3577 // GDA94 Australian Albers
	EPSG9473 CRS = 9473 // GDA2020 Australian Albers
	EPSG3857 CRS = 3857 // WGS 84 Pseudo-Mercator (Web Mercator)
)

const mga94EPSGBase = 28300 // EPSG code of MGA94 zone z is 28300 + z

// ParseSourceCRS parses a CRS name as ParseCRS does, and also accepts the
// source CRSs of ingest: EPSG:4283, EPSG:28348..28358, EPSG:3577,
// EPSG:9473 and EPSG:3857. Anything else gives an *UnsupportedCRSError
// naming every supported code.
func ParseSourceCRS(s string) (CRS, error) {
	if c, err := ParseCRS(s); err == nil {
		return c, nil
	}
	var digits string
	switch {
	case len(s) > 5 && strings.EqualFold(s[:5], "EPSG:"):
		digits = s[5:]
	case len(s) > 22 && strings.EqualFold(s[:22], "urn:ogc:def:crs:EPSG::"):
		digits = s[22:]
	default:
		return 0, unsupportedSource(s)
	}
	if len(digits) == 0 || len(digits) > 6 || digits[0] == '0' {
		return 0, unsupportedSource(s)
	}
	code, err := strconv.Atoi(digits)
	if err != nil || strconv.Itoa(code) != digits {
		return 0, unsupportedSource(s)
	}
	c, err := SourceCRSFromEPSG(code)
	if err != nil {
		return 0, unsupportedSource(s)
	}
	return c, nil
}

// SourceCRSFromEPSG returns the CRS of an EPSG code of SourceEPSG, or an
// *UnsupportedCRSError.
func SourceCRSFromEPSG(code int) (CRS, error) {
	c := CRS(code)
	if c == CRS84 || !c.IsSource() {
		return 0, unsupportedSource("EPSG:" + strconv.Itoa(code))
	}
	return c, nil
}

// SourceEPSG returns every EPSG code ingest accepts, ascending. The slice
// is new on every call.
func SourceEPSG() []int {
	codes := []int{3577, 3857, 4283, 4326, 7844}
	for z := mgaFirstZone; z <= mgaLastZone; z++ {
		codes = append(codes, mgaEPSGBase+z)
	}
	codes = append(codes, 9473)
	for z := mgaFirstZone + 1; z <= mgaLastZone; z++ {
		codes = append(codes, mga94EPSGBase+z)
	}
	return codes
}

// SourceCRSList is the human-readable list of SourceEPSG, for messages.
const SourceCRSList = "OGC:CRS84, EPSG:4326, EPSG:7844, EPSG:7847..7858 (MGA2020), EPSG:4283 (GDA94), " +
	"EPSG:28348..28358 (MGA94), EPSG:3577 (GDA94 Albers), EPSG:9473 (GDA2020 Albers), EPSG:3857 (Web Mercator)"

func unsupportedSource(s string) error {
	if len(s) > 64 {
		s = s[:64]
	}
	return &UnsupportedCRSError{Input: s, Source: true}
}

// IsSource reports whether c is a contract CRS (Valid) or one of the
// source CRSs of ParseSourceCRS.
func (c CRS) IsSource() bool {
	switch {
	case c.Valid(), c == EPSG4283, c == EPSG3577, c == EPSG9473, c == EPSG3857, c.MGA94Zone() != 0:
		return true
	}
	return false
}

// MGA94Zone returns the MGA94 zone 48..58 of c, or 0 when c is not one.
func (c CRS) MGA94Zone() int {
	z := int(c) - mga94EPSGBase
	if z < mgaFirstZone+1 || z > mgaLastZone {
		return 0
	}
	return z
}

// IsGDA94 reports whether c's datum is GDA94: its positions move to GDA2020
// by the Helmert transformation EPSG:8048.
func (c CRS) IsGDA94() bool { return c == EPSG4283 || c == EPSG3577 || c.MGA94Zone() != 0 }

// IsProjectedSource reports whether c is a source CRS whose coordinates are
// metres on a map projection (MGA2020, MGA94, Albers, Web Mercator), as
// opposed to longitude, latitude in degrees.
func (c CRS) IsProjectedSource() bool {
	return c.IsSource() && !c.IsGeographic() && c != EPSG4283
}

// sourceToCRS84 converts a position of a source CRS outside the contract's
// list to GDA2020 longitude, latitude. c.IsSource() && !c.Valid().
func sourceToCRS84(c CRS, x, y float64) (lon, lat float64, err error) {
	switch {
	case c == EPSG4283:
		if err := checkLonLat(c, x, y); err != nil {
			return 0, 0, err
		}
		lon, lat = x, y
	case c.MGA94Zone() != 0:
		z := c.MGA94Zone()
		lon, lat = MGAInverse(z, x, y)
		if !finite(lon) || !finite(lat) || math.Abs(angDiff(mgaCentralMeridian(z), lon)) > mgaMaxOffsetDeg {
			return 0, 0, &DomainError{CRS: c, X: x, Y: y, Reason: "more than 30 degrees of longitude from the zone's central meridian"}
		}
	case c == EPSG3577, c == EPSG9473:
		var ok bool
		if lon, lat, ok = australianAlbers.inverse(x, y); !ok {
			return 0, 0, &DomainError{CRS: c, X: x, Y: y, Reason: "outside the Albers projection"}
		}
	case c == EPSG3857:
		lon, lat = WebMercatorInverse(x, y)
		if math.Abs(x) > webMercatorMaxX {
			return 0, 0, &DomainError{CRS: c, X: x, Y: y, Reason: "beyond 180 degrees of longitude"}
		}
	default:
		return 0, 0, unsupported(c.String())
	}
	if c.IsGDA94() {
		lon, lat = GDA94ToGDA2020(lon, lat)
	}
	if !finite(lon) || !finite(lat) {
		return 0, 0, &DomainError{CRS: c, X: x, Y: y, Reason: "outside the projection's domain"}
	}
	return lon, lat, nil
}

// sourceFromCRS84 is the inverse of sourceToCRS84.
func sourceFromCRS84(c CRS, lon, lat float64) (x, y float64, err error) {
	if c.IsGDA94() {
		lon, lat = GDA2020ToGDA94(lon, lat)
	}
	switch {
	case c == EPSG4283:
		return lon, lat, nil
	case c.MGA94Zone() != 0:
		z := c.MGA94Zone()
		if math.Abs(angDiff(mgaCentralMeridian(z), lon)) > mgaMaxOffsetDeg {
			return 0, 0, &DomainError{CRS: CRS84, X: lon, Y: lat, Reason: "more than 30 degrees of longitude from the central meridian of " + c.String()}
		}
		x, y = MGAForward(z, lon, lat)
		return x, y, nil
	case c == EPSG3577, c == EPSG9473:
		x, y = australianAlbers.forward(lon, lat)
		return x, y, nil
	case c == EPSG3857:
		if math.Abs(lat) > webMercatorMaxLat {
			return 0, 0, &DomainError{CRS: CRS84, X: lon, Y: lat, Reason: "beyond the Web Mercator latitude limit"}
		}
		x, y = WebMercatorForward(lon, lat)
		return x, y, nil
	}
	return 0, 0, unsupported(c.String())
}
