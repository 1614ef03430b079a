package geo

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// CRS is one of the coordinate reference systems of the contract. Its value
// is the EPSG code, except CRS84 which has none of its own. The zero value
// is not a valid CRS. CRS is a plain value: safe for concurrent use.
//
// OGC:CRS84, EPSG:4326 and EPSG:7844 are the same geographic CRS for this
// service: positions are always longitude, latitude in degrees, even though
// the EPSG definitions of 4326 and 7844 nominally order latitude first. The
// difference between the WGS 84 and GDA2020 datums (under 2 m in Australia,
// and zero by the service's convention) is not modelled. EPSG:7847..7858 are
// the GDA2020 MGA zones 47..58: easting, northing in metres.
type CRS int

// The geographic CRSs of the contract. MGA zones are MGA(zone) or
// CRSFromEPSG(7800 + zone).
const (
	CRS84    CRS = 1    // OGC:CRS84, longitude then latitude
	EPSG4326 CRS = 4326 // WGS 84, used in longitude, latitude order
	EPSG7844 CRS = 7844 // GDA2020 geographic, used in longitude, latitude order
)

const (
	mgaFirstZone = 47
	mgaLastZone  = 58
	mgaEPSGBase  = 7800 // EPSG code of MGA zone z is 7800 + z
)

// UnsupportedCRSError reports a CRS name or code outside the contract's
// list. It matches ErrUnsupportedCRS.
type UnsupportedCRSError struct {
	Input string // the name or code as given, truncated to 64 bytes
	// Source: the name was read as a source CRS of ingest
	// (ParseSourceCRS), and the message lists those.
	Source bool
}

func (e *UnsupportedCRSError) Error() string {
	if e.Source {
		return fmt.Sprintf("unsupported crs %q: supported are %s", e.Input, SourceCRSList)
	}
	return fmt.Sprintf("unsupported crs %q: supported are OGC:CRS84, EPSG:4326, EPSG:7844 and EPSG:7847..EPSG:7858 (GDA2020 MGA zones 47..58)", e.Input)
}

// Unwrap returns ErrUnsupportedCRS.
func (e *UnsupportedCRSError) Unwrap() error { return ErrUnsupportedCRS }

func unsupported(s string) error {
	if len(s) > 64 {
		s = s[:64]
	}
	return &UnsupportedCRSError{Input: s}
}

// ParseCRS parses a CRS name. It accepts, ignoring ASCII case,
// "OGC:CRS84", "urn:ogc:def:crs:OGC:1.3:CRS84", "EPSG:<code>" and
// "urn:ogc:def:crs:EPSG::<code>" for the codes of SupportedEPSG. The code is
// plain decimal digits without sign or leading zeros. Anything else gives an
// *UnsupportedCRSError (errors.Is(err, ErrUnsupportedCRS)).
func ParseCRS(s string) (CRS, error) {
	switch {
	case strings.EqualFold(s, "OGC:CRS84"), strings.EqualFold(s, "urn:ogc:def:crs:OGC:1.3:CRS84"):
		return CRS84, nil
	}
	var digits string
	switch {
	case len(s) > 5 && strings.EqualFold(s[:5], "EPSG:"):
		digits = s[5:]
	case len(s) > 21 && strings.EqualFold(s[:21], "urn:ogc:def:crs:EPSG:"):
		digits = s[21:]
		if digits[0] != ':' {
			return 0, unsupported(s)
		}
		digits = digits[1:]
	default:
		return 0, unsupported(s)
	}
	if len(digits) == 0 || len(digits) > 6 || digits[0] == '0' {
		return 0, unsupported(s)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, unsupported(s)
		}
	}
	code, err := strconv.Atoi(digits)
	if err != nil {
		return 0, unsupported(s)
	}
	c, err := CRSFromEPSG(code)
	if err != nil {
		return 0, unsupported(s)
	}
	return c, nil
}

// CRSFromEPSG returns the CRS of an EPSG code of SupportedEPSG, or an
// *UnsupportedCRSError.
func CRSFromEPSG(code int) (CRS, error) {
	c := CRS(code)
	if c == CRS84 || !c.Valid() {
		return 0, unsupported("EPSG:" + strconv.Itoa(code))
	}
	return c, nil
}

// MGA returns the CRS of GDA2020 MGA zone 47..58, or an *UnsupportedCRSError.
func MGA(zone int) (CRS, error) {
	if zone < mgaFirstZone || zone > mgaLastZone {
		return 0, unsupported("MGA zone " + strconv.Itoa(zone))
	}
	return CRS(mgaEPSGBase + zone), nil
}

// SupportedEPSG returns the EPSG codes the contract supports, ascending:
// 4326, 7844 and 7847..7858. The slice is new on every call.
func SupportedEPSG() []int {
	codes := []int{4326, 7844}
	for z := mgaFirstZone; z <= mgaLastZone; z++ {
		codes = append(codes, mgaEPSGBase+z)
	}
	return codes
}

// Valid reports whether c is one of the supported CRSs.
func (c CRS) Valid() bool { return c.IsGeographic() || c.IsProjected() }

// IsGeographic reports whether c is CRS84, EPSG:4326 or EPSG:7844.
func (c CRS) IsGeographic() bool { return c == CRS84 || c == EPSG4326 || c == EPSG7844 }

// IsProjected reports whether c is an MGA zone.
func (c CRS) IsProjected() bool { return c.Zone() != 0 }

// Zone returns the MGA zone 47..58 of c, or 0 when c is not an MGA zone.
func (c CRS) Zone() int {
	z := int(c) - mgaEPSGBase
	if z < mgaFirstZone || z > mgaLastZone {
		return 0
	}
	return z
}

// EPSG returns the EPSG code of c: 4326 for CRS84 (its EPSG equivalent up
// to axis order), 0 for a CRS that is not a source CRS (IsSource).
func (c CRS) EPSG() int {
	switch {
	case c == CRS84:
		return 4326
	case c.IsSource():
		return int(c)
	}
	return 0
}

// String returns "OGC:CRS84" or "EPSG:<code>"; an invalid CRS prints as
// "CRS(<n>)".
func (c CRS) String() string {
	switch {
	case c == CRS84:
		return "OGC:CRS84"
	case c.IsSource():
		return "EPSG:" + strconv.Itoa(int(c))
	}
	return "CRS(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText implements encoding.TextMarshaler with String. An invalid CRS
// gives an *UnsupportedCRSError.
func (c CRS) MarshalText() ([]byte, error) {
	if !c.Valid() {
		return nil, unsupported(c.String())
	}
	return []byte(c.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseCRS.
func (c *CRS) UnmarshalText(b []byte) error {
	v, err := ParseCRS(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// DomainError reports a coordinate that a CRS conversion cannot take. It
// matches ErrOutOfDomain.
type DomainError struct {
	CRS    CRS
	X, Y   float64
	Reason string
}

func (e *DomainError) Error() string {
	return fmt.Sprintf("coordinate (%g, %g) in %s: %s", e.X, e.Y, e.CRS, e.Reason)
}

// Unwrap returns ErrOutOfDomain.
func (e *DomainError) Unwrap() error { return ErrOutOfDomain }

// mgaMaxOffsetDeg bounds |longitude - central meridian| for MGA
// conversions. The order-6 Krüger series are accurate to a few nanometres
// within 3,900 km of the central meridian (Karney 2011); 30 degrees stays
// inside that everywhere, and is far wider than any legitimate use of a
// 6-degree zone.
const mgaMaxOffsetDeg = 30

// ToCRS84 converts a position of c to longitude, latitude in degrees.
// Geographic CRSs take x = longitude, y = latitude and are returned as they
// are after a range check (longitude -180..180, latitude -90..90). MGA zones
// take x = easting, y = northing in metres. Non-finite input, or a position
// whose longitude would be more than 30 degrees from the zone's central
// meridian, gives a *DomainError; an invalid c gives an
// *UnsupportedCRSError. The source CRSs of ParseSourceCRS are converted
// too (GDA94 ones through EPSG:8048 to GDA2020, see sourcecrs.go).
func ToCRS84(c CRS, x, y float64) (lon, lat float64, err error) {
	if !c.IsSource() {
		return 0, 0, unsupported(c.String())
	}
	if !finite(x) || !finite(y) {
		return 0, 0, &DomainError{CRS: c, X: x, Y: y, Reason: "not a finite number"}
	}
	if !c.Valid() {
		return sourceToCRS84(c, x, y)
	}
	if c.IsGeographic() {
		if err := checkLonLat(c, x, y); err != nil {
			return 0, 0, err
		}
		return x, y, nil
	}
	lon, lat = MGAInverse(c.Zone(), x, y)
	if !finite(lon) || !finite(lat) || math.Abs(angDiff(mgaCentralMeridian(c.Zone()), lon)) > mgaMaxOffsetDeg {
		return 0, 0, &DomainError{CRS: c, X: x, Y: y, Reason: fmt.Sprintf("more than %d degrees of longitude from the zone's central meridian", mgaMaxOffsetDeg)}
	}
	return lon, lat, nil
}

// FromCRS84 converts longitude, latitude in degrees to a position of c, the
// inverse of ToCRS84, with the same errors.
func FromCRS84(c CRS, lon, lat float64) (x, y float64, err error) {
	if !c.IsSource() {
		return 0, 0, unsupported(c.String())
	}
	if !finite(lon) || !finite(lat) {
		return 0, 0, &DomainError{CRS: CRS84, X: lon, Y: lat, Reason: "not a finite number"}
	}
	if err := checkLonLat(CRS84, lon, lat); err != nil {
		return 0, 0, err
	}
	if c.IsGeographic() {
		return lon, lat, nil
	}
	if !c.Valid() {
		return sourceFromCRS84(c, lon, lat)
	}
	if math.Abs(angDiff(mgaCentralMeridian(c.Zone()), lon)) > mgaMaxOffsetDeg {
		return 0, 0, &DomainError{CRS: CRS84, X: lon, Y: lat, Reason: fmt.Sprintf("more than %d degrees of longitude from the central meridian of %s", mgaMaxOffsetDeg, c)}
	}
	x, y = MGAForward(c.Zone(), lon, lat)
	return x, y, nil
}

func checkLonLat(c CRS, lon, lat float64) error {
	if lon < -180 || lon > 180 {
		return &DomainError{CRS: c, X: lon, Y: lat, Reason: "longitude out of range -180..180"}
	}
	if lat < -90 || lat > 90 {
		return &DomainError{CRS: c, X: lon, Y: lat, Reason: "latitude out of range -90..90"}
	}
	return nil
}

// ReprojectToCRS84 rewrites every position of g from c to CRS84 in place
// and returns g (a Bound, being a value, is returned as a new Bound: the
// envelope of its densified, reprojected outline). For a geographic c it
// returns g untouched and unchecked (range checks are Validate's job). On
// error g may be partly rewritten. Any orb geometry type is accepted,
// Collections recursively; nil gives nil.
//
// Not safe for concurrent use with anything else touching g.
func ReprojectToCRS84(c CRS, g orb.Geometry) (orb.Geometry, error) {
	if !c.IsSource() {
		return nil, unsupported(c.String())
	}
	if g == nil || c.IsGeographic() {
		return g, nil
	}
	return reproject(c, g)
}

func reproject(c CRS, g orb.Geometry) (orb.Geometry, error) {
	switch g := g.(type) {
	case nil:
		return nil, nil
	case orb.Point:
		lon, lat, err := ToCRS84(c, g[0], g[1])
		if err != nil {
			return g, err
		}
		return orb.Point{lon, lat}, nil
	case orb.MultiPoint:
		return g, reprojectPoints(c, g)
	case orb.LineString:
		return g, reprojectPoints(c, g)
	case orb.Ring:
		return g, reprojectPoints(c, g)
	case orb.MultiLineString:
		for _, ls := range g {
			if err := reprojectPoints(c, ls); err != nil {
				return g, err
			}
		}
		return g, nil
	case orb.Polygon:
		for _, r := range g {
			if err := reprojectPoints(c, r); err != nil {
				return g, err
			}
		}
		return g, nil
	case orb.MultiPolygon:
		for _, p := range g {
			for _, r := range p {
				if err := reprojectPoints(c, r); err != nil {
					return g, err
				}
			}
		}
		return g, nil
	case orb.Bound:
		return reprojectBound(c, g)
	case orb.Collection:
		for i := range g {
			h, err := reproject(c, g[i])
			if err != nil {
				return g, err
			}
			g[i] = h
		}
		return g, nil
	default:
		return g, fmt.Errorf("geo: reproject: unsupported geometry type %T", g)
	}
}

// reprojectPoints rewrites pts in place.
func reprojectPoints(c CRS, pts []orb.Point) error {
	for i, p := range pts {
		lon, lat, err := ToCRS84(c, p[0], p[1])
		if err != nil {
			return err
		}
		pts[i] = orb.Point{lon, lat}
	}
	return nil
}

// boundSteps is how many pieces each edge of a projected Bound is cut into
// before reprojection: grid lines are curves in longitude, latitude.
const boundSteps = 16

func reprojectBound(c CRS, b orb.Bound) (orb.Geometry, error) {
	out := orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
	corners := [5]orb.Point{b.Min, {b.Max[0], b.Min[1]}, b.Max, {b.Min[0], b.Max[1]}, b.Min}
	for e := 0; e < 4; e++ {
		p, q := corners[e], corners[e+1]
		for s := 0; s < boundSteps; s++ {
			t := float64(s) / boundSteps
			lon, lat, err := ToCRS84(c, p[0]+(q[0]-p[0])*t, p[1]+(q[1]-p[1])*t)
			if err != nil {
				return b, err
			}
			out = out.Extend(orb.Point{lon, lat})
		}
	}
	return out, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// angDiff returns b - a in degrees reduced to [-180, 180].
func angDiff(a, b float64) float64 {
	d := math.Mod(b-a, 360)
	if d > 180 {
		d -= 360
	} else if d < -180 {
		d += 360
	}
	return d
}
