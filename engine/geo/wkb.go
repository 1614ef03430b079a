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
	if err := d.need(5); err != nil {
		return nil, err
	}
	var bo binary.ByteOrder
	switch d.b[d.i] {
	case 0:
		bo = binary.BigEndian
	case 1:
		bo = binary.LittleEndian
	default:
		return nil, wkbErr("bad byte order %d", d.b[d.i])
	}
	t := bo.Uint32(d.b[d.i+1:])
	d.i += 5
	dims := 2
	if t&0x80000000 != 0 {
		dims++
	}
	if t&0x40000000 != 0 {
		dims++
	}
	if t&0x20000000 != 0 { // EWKB SRID
		if err := d.need(4); err != nil {
			return nil, err
		}
		d.i += 4
	}
	t &^= 0xE0000000
	switch t / 1000 {
	case 0:
	case 1, 2:
		dims++
	case 3:
		dims += 2
	default:
		return nil, wkbErr("unknown geometry type %d", t)
	}
	if dims > 4 {
		return nil, wkbErr("geometry type %d has too many dimensions", t)
	}
	t %= 1000
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
