package geo

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/paulmach/orb"
)

// WKBError reports a WKB geometry that cannot be read. It matches
// ErrInvalidGeometry.
type WKBError struct{ Reason string }

func (e *WKBError) Error() string { return "wkb: " + e.Reason }

// Unwrap returns ErrInvalidGeometry.
func (e *WKBError) Unwrap() error { return ErrInvalidGeometry }

func wkbErr(format string, args ...any) error { return &WKBError{Reason: fmt.Sprintf(format, args...)} }

// DecodeWKB reads one of the six GeoJSON geometry types from WKB as
// GeoPackage, PostGIS and GDAL write it: OGC/ISO WKB with optional Z, M or
// ZM (type codes +1000, +2000, +3000) or the EWKB flags (0x80000000 Z,
// 0x40000000 M, 0x20000000 SRID), either byte order. Z and M values are
// dropped. Geometry collections, curves and empty points are refused, as is
// input with more than maxVertices positions or bytes after the geometry.
// Never panics; every error is a *WKBError (ErrInvalidGeometry). Safe for
// concurrent use. It is the strict caller of WKBWalker.
func DecodeWKB(b []byte, maxVertices int) (orb.Geometry, error) {
	d := &wkbDecoder{w: NewWKBWalker(b, WKBWalkOptions{Containers: true}), max: maxVertices}
	g, err := d.geometry()
	if err != nil {
		return nil, err
	}
	if d.w.Off != len(b) {
		return nil, wkbErr("%d bytes after the geometry", len(b)-d.w.Off)
	}
	return g, nil
}

// WKB geometry types (the base type, without Z/M/SRID flags).
const (
	WKBPoint              = 1
	WKBLineString         = 2
	WKBPolygon            = 3
	WKBMultiPoint         = 4
	WKBMultiLineString    = 5
	WKBMultiPolygon       = 6
	WKBGeometryCollection = 7
)

// WKBHeader is what a WKB geometry's header says: byte order, base type
// and ordinates per position.
type WKBHeader struct {
	Order binary.ByteOrder
	Type  uint32 // WKBPoint .. WKBGeometryCollection
	Dims  int    // 2, 3 or 4 ordinates per position; only X and Y are read
	Len   int    // bytes the header takes (5, or 9 with an EWKB SRID)
}

// ReadWKBHeader reads the header at the start of b. It is the one reading
// of WKB type codes: OGC/ISO (+1000 Z, +2000 M, +3000 ZM) and EWKB flags
// (0x80000000 Z, 0x40000000 M, 0x20000000 SRID), either byte order.
// WKBWalker calls it, so a type code means the same to both of its callers
// (DecodeWKB, ingest's GeoPackage rows, and the engine's tile walk).
// Errors are *WKBError.
func ReadWKBHeader(b []byte) (WKBHeader, error) {
	if len(b) < 5 {
		return WKBHeader{}, wkbErr("truncated")
	}
	// The common case first: little-endian 2D OGC WKB, as orb and the
	// tiles write it (every walk reads a header a geometry).
	if t := binary.LittleEndian.Uint32(b[1:5]); b[0] == 1 && t >= WKBPoint && t <= WKBGeometryCollection {
		return WKBHeader{Order: binary.LittleEndian, Type: t, Dims: 2, Len: 5}, nil
	}
	var h WKBHeader
	switch b[0] {
	case 0:
		h.Order = binary.BigEndian
	case 1:
		h.Order = binary.LittleEndian
	default:
		return WKBHeader{}, wkbErr("bad byte order %d", b[0])
	}
	t := h.Order.Uint32(b[1:])
	h.Len, h.Dims = 5, 2
	if t&0x80000000 != 0 {
		h.Dims++
	}
	if t&0x40000000 != 0 {
		h.Dims++
	}
	if t&0x20000000 != 0 { // EWKB SRID
		if len(b) < 9 {
			return WKBHeader{}, wkbErr("truncated")
		}
		h.Len = 9
	}
	t &^= 0xE0000000
	switch t / 1000 {
	case 0:
	case 1, 2:
		h.Dims++
	case 3:
		h.Dims += 2
	default:
		return WKBHeader{}, wkbErr("unknown geometry type %d", t)
	}
	if h.Dims > 4 {
		return WKBHeader{}, wkbErr("geometry type %d has too many dimensions", t)
	}
	if t%1000 < WKBPoint || t%1000 > WKBGeometryCollection {
		return WKBHeader{}, wkbErr("unknown geometry type %d", t)
	}
	h.Type = t % 1000
	return h, nil
}

// wkbDecoder is DecodeWKB's caller of WKBWalker: it builds orb values and
// applies the strict reading (see WKBWalker for what the engine's lenient
// caller does instead).
type wkbDecoder struct {
	w     WKBWalker
	max   int
	count int
}

// geometry reads the geometry the walk starts at. The members of a
// multi-geometry are read as their concrete types, never boxed in an
// orb.Geometry one by one.
func (d *wkbDecoder) geometry() (orb.Geometry, error) {
	part, n, p, err := d.w.Next()
	if err != nil {
		return nil, err
	}
	switch t := d.w.Type; part {
	case WKBAtPoint:
		return d.point(p)
	case WKBAtLine:
		ps, err := d.points(n)
		return orb.LineString(ps), err
	case WKBAtPolygon:
		return d.polygon(n)
	case WKBAtMulti:
		switch t {
		case WKBMultiPoint:
			mp := make(orb.MultiPoint, n) // n checked against the bytes left
			for k := range mp {
				_, _, p, err := d.member(WKBPoint)
				if err != nil {
					return nil, err
				}
				if mp[k], err = d.point(p); err != nil {
					return nil, err
				}
			}
			return mp, nil
		case WKBMultiLineString:
			ml := make(orb.MultiLineString, n)
			for k := range ml {
				_, m, _, err := d.member(WKBLineString)
				if err != nil {
					return nil, err
				}
				if ml[k], err = d.points(m); err != nil {
					return nil, err
				}
			}
			return ml, nil
		case WKBMultiPolygon:
			mg := make(orb.MultiPolygon, n)
			for k := range mg {
				_, m, _, err := d.member(WKBPolygon)
				if err != nil {
					return nil, err
				}
				if mg[k], err = d.polygon(m); err != nil {
					return nil, err
				}
			}
			return mg, nil
		}
	}
	return nil, wkbErr("geometry type %d is not one of Point, LineString, Polygon and their Multi types", d.w.Type)
}

// member walks to the next member of a multi-geometry, which must be a
// want.
func (d *wkbDecoder) member(want uint32) (WKBPart, int, orb.Point, error) {
	part, n, p, err := d.w.Next()
	if err == nil && d.w.Type != want {
		err = wkbErr("a multi-geometry holds a geometry of type %d", d.w.Type)
	}
	return part, n, p, err
}

// point counts a point read by the walk, refusing an empty one.
func (d *wkbDecoder) point(p orb.Point) (orb.Point, error) {
	if math.IsNaN(p[0]) && math.IsNaN(p[1]) {
		return p, wkbErr("empty point")
	}
	if d.count++; d.count > d.max {
		return p, wkbErr("more than %d positions", d.max)
	}
	return p, nil
}

// polygon reads the n rings of the polygon the walk stopped at, and its
// end.
func (d *wkbDecoder) polygon(n int) (orb.Polygon, error) {
	pg := make(orb.Polygon, n)
	for k := range pg {
		part, m, _, err := d.w.Next()
		if err != nil {
			return nil, err
		}
		if part != WKBAtRing { // cannot happen: the walker gives n rings
			return nil, wkbErr("polygon ring expected")
		}
		ps, err := d.points(m)
		if err != nil {
			return nil, err
		}
		pg[k] = ps
	}
	if _, _, _, err := d.w.Next(); err != nil { // WKBAtPolygonEnd
		return nil, err
	}
	return pg, nil
}

// points reads the n positions of a LineString or ring.
func (d *wkbDecoder) points(n int) ([]orb.Point, error) {
	if d.count += n; d.count > d.max {
		return nil, wkbErr("more than %d positions", d.max)
	}
	ps := make([]orb.Point, n)
	return ps, d.w.ReadPositions(ps)
}
