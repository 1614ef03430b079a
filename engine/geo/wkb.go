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
// concurrent use.
func DecodeWKB(b []byte, maxVertices int) (orb.Geometry, error) {
	d := &wkbDecoder{b: b, max: maxVertices}
	g, err := d.geometry(0, 0)
	if err != nil {
		return nil, err
	}
	if d.i != len(d.b) {
		return nil, wkbErr("%d bytes after the geometry", len(d.b)-d.i)
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
// (0x80000000 Z, 0x40000000 M, 0x20000000 SRID), either byte order. Both
// DecodeWKB (ingest's GeoPackage rows) and the engine's tile walk call it,
// so a type code means the same on both sides. Errors are *WKBError.
func ReadWKBHeader(b []byte) (WKBHeader, error) {
	if len(b) < 5 {
		return WKBHeader{}, wkbErr("truncated")
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

type wkbDecoder struct {
	b     []byte
	i     int
	max   int
	count int
}

func (d *wkbDecoder) need(n int) error {
	if n < 0 || len(d.b)-d.i < n {
		return wkbErr("truncated")
	}
	return nil
}

// geometry reads a geometry; want, when not 0, is the base type a
// multi-geometry's member must have.
func (d *wkbDecoder) geometry(depth int, want uint32) (orb.Geometry, error) {
	if depth > 1 {
		return nil, wkbErr("nested too deeply")
	}
	h, err := ReadWKBHeader(d.b[d.i:])
	if err != nil {
		return nil, err
	}
	d.i += h.Len
	bo, dims, t := h.Order, h.Dims, h.Type
	if want != 0 && t != want {
		return nil, wkbErr("a multi-geometry holds a geometry of type %d", t)
	}
	pt := func() (orb.Point, error) {
		if err := d.need(8 * dims); err != nil {
			return orb.Point{}, err
		}
		p := orb.Point{math.Float64frombits(bo.Uint64(d.b[d.i:])), math.Float64frombits(bo.Uint64(d.b[d.i+8:]))}
		d.i += 8 * dims
		return p, nil
	}
	count := func(per int) (int, error) {
		if err := d.need(4); err != nil {
			return 0, err
		}
		n := int(bo.Uint32(d.b[d.i:]))
		d.i += 4
		if n < 0 || n > (len(d.b)-d.i)/per {
			return 0, wkbErr("count %d is larger than the input", n)
		}
		return n, nil
	}
	points := func() ([]orb.Point, error) {
		n, err := count(8 * dims)
		if err != nil {
			return nil, err
		}
		if d.count += n; d.count > d.max {
			return nil, wkbErr("more than %d positions", d.max)
		}
		ps := make([]orb.Point, n)
		for k := range ps {
			if ps[k], err = pt(); err != nil {
				return nil, err
			}
		}
		return ps, nil
	}
	polygon := func() (orb.Polygon, error) {
		n, err := count(4)
		if err != nil {
			return nil, err
		}
		pg := make(orb.Polygon, n)
		for k := range pg {
			r, err := points()
			if err != nil {
				return nil, err
			}
			pg[k] = r
		}
		return pg, nil
	}
	switch t {
	case 1:
		p, err := pt()
		if err != nil {
			return nil, err
		}
		if math.IsNaN(p[0]) && math.IsNaN(p[1]) {
			return nil, wkbErr("empty point")
		}
		if d.count++; d.count > d.max {
			return nil, wkbErr("more than %d positions", d.max)
		}
		return p, nil
	case 2:
		ps, err := points()
		return orb.LineString(ps), err
	case 3:
		return polygon()
	case 4, 5, 6:
		n, err := count(5)
		if err != nil {
			return nil, err
		}
		var mp orb.MultiPoint
		var ml orb.MultiLineString
		var mg orb.MultiPolygon
		for k := 0; k < n; k++ {
			g, err := d.geometry(depth+1, t-3)
			if err != nil {
				return nil, err
			}
			switch g := g.(type) {
			case orb.Point:
				mp = append(mp, g)
			case orb.LineString:
				ml = append(ml, g)
			case orb.Polygon:
				mg = append(mg, g)
			}
		}
		switch t {
		case 4:
			if mp == nil {
				mp = orb.MultiPoint{}
			}
			return mp, nil
		case 5:
			if ml == nil {
				ml = orb.MultiLineString{}
			}
			return ml, nil
		}
		if mg == nil {
			mg = orb.MultiPolygon{}
		}
		return mg, nil
	}
	return nil, wkbErr("geometry type %d is not one of Point, LineString, Polygon and their Multi types", t)
}
