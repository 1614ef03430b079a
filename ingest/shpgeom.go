package ingest

import (
	"encoding/binary"
	"math"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

// Shape types of the ESRI Shapefile Technical Description (1998). Z and M
// variants carry the same 2D part first; their Z and M values are dropped.
const (
	shpNull        = 0
	shpPoint       = 1
	shpPolyLine    = 3
	shpPolygon     = 5
	shpMultiPoint  = 8
	shpPointZ      = 11
	shpPolyLineZ   = 13
	shpPolygonZ    = 15
	shpMultiPointZ = 18
	shpPointM      = 21
	shpPolyLineM   = 23
	shpPolygonM    = 25
	shpMultiPointM = 28
	shpMultiPatch  = 31
)

// shpKind folds Z and M variants onto their 2D shape type; 0 for an
// unknown type.
func shpKind(t int32) int32 {
	switch t {
	case shpNull:
		return shpNull
	case shpPoint, shpPointZ, shpPointM:
		return shpPoint
	case shpPolyLine, shpPolyLineZ, shpPolyLineM:
		return shpPolyLine
	case shpPolygon, shpPolygonZ, shpPolygonM:
		return shpPolygon
	case shpMultiPoint, shpMultiPointZ, shpMultiPointM:
		return shpMultiPoint
	case shpMultiPatch:
		return shpMultiPatch
	}
	return -1
}

// decodeShape parses one record's content (after the 8-byte record header)
// into a GeoJSON-type geometry in the file's coordinates. Polygons follow
// the format's rule: clockwise rings are outer rings, counter-clockwise
// ones holes of the outer ring that contains them; the result is oriented
// as RFC 7946 wants (outer counter-clockwise). A record that cannot be
// used gives a *geomError (the row is rejected). Never panics.
func decodeShape(b []byte, fileType int32, maxVertices int) (orb.Geometry, error) {
	if len(b) < 4 {
		return nil, badGeom("", "shape record is shorter than its type")
	}
	le := binary.LittleEndian
	t := int32(le.Uint32(b))
	if t == shpNull {
		return nil, badGeom("", "geometry is null")
	}
	if t != fileType {
		return nil, badGeom("", "shape type %d in a file of shape type %d", t, fileType)
	}
	pt := func(off int) orb.Point {
		return orb.Point{math.Float64frombits(le.Uint64(b[off:])), math.Float64frombits(le.Uint64(b[off+8:]))}
	}
	switch shpKind(t) {
	case shpPoint:
		if len(b) < 20 {
			return nil, badGeom("", "point record is truncated")
		}
		return pt(4), nil
	case shpMultiPoint:
		if len(b) < 40 {
			return nil, badGeom("", "multipoint record is truncated")
		}
		n := int64(le.Uint32(b[36:]))
		if n > int64(maxVertices) {
			return nil, tooManyPositions(maxVertices)
		}
		if n == 0 {
			return nil, badGeom("", "multipoint has no points")
		}
		if int64(len(b)) < 40+16*n {
			return nil, badGeom("", "multipoint record is truncated")
		}
		mp := make(orb.MultiPoint, n)
		for i := range mp {
			mp[i] = pt(40 + 16*i)
		}
		return mp, nil
	case shpPolyLine, shpPolygon:
		if len(b) < 44 {
			return nil, badGeom("", "record is truncated")
		}
		np, npts := int64(le.Uint32(b[36:])), int64(le.Uint32(b[40:]))
		if npts > int64(maxVertices) {
			return nil, tooManyPositions(maxVertices)
		}
		if np == 0 || npts == 0 {
			return nil, badGeom("", "shape has no parts")
		}
		if np > npts || int64(len(b)) < 44+4*np+16*npts {
			return nil, badGeom("", "record is truncated or its part count is wrong")
		}
		pts := make([]orb.Point, npts)
		base := 44 + 4*int(np)
		for i := range pts {
			pts[i] = pt(base + 16*i)
		}
		parts := make([][]orb.Point, np)
		for i := range parts {
			start := int64(le.Uint32(b[44+4*i:]))
			end := npts
			if i+1 < int(np) {
				end = int64(le.Uint32(b[44+4*(i+1):]))
			}
			if start >= end || end > npts || (i == 0 && start != 0) {
				return nil, badGeom("", "part %d has bad start index %d", i, start)
			}
			parts[i] = pts[start:end:end]
		}
		if shpKind(t) == shpPolyLine {
			if len(parts) == 1 {
				return orb.LineString(parts[0]), nil
			}
			mls := make(orb.MultiLineString, len(parts))
			for i, p := range parts {
				mls[i] = p
			}
			return mls, nil
		}
		return assembleRings(parts), nil
	case shpMultiPatch:
		return nil, badGeom("", "MultiPatch shapes are not supported")
	}
	return nil, badGeom("", "unknown shape type %d", t)
}

// assembleRings groups shapefile rings into polygons: clockwise rings are
// outer, counter-clockwise ones holes of the smallest outer ring containing
// their first vertex (a hole that no outer ring contains becomes an outer
// ring, as GDAL reads it). Rings are returned counter-clockwise (outer) and
// clockwise (holes).
func assembleRings(parts [][]orb.Point) orb.Geometry {
	type outer struct {
		ring  orb.Ring
		area  float64
		holes []orb.Ring
	}
	var outers []*outer
	var holes []orb.Ring
	for _, p := range parts {
		r := orb.Ring(p)
		a := signedArea(r)
		if a <= 0 { // clockwise (or degenerate, for validation to judge)
			outers = append(outers, &outer{ring: r, area: -a})
		} else {
			holes = append(holes, r)
		}
	}
	for _, h := range holes {
		var best *outer
		for _, o := range outers {
			if o.ring.Bound().Contains(h[0]) && planar.RingContains(o.ring, h[0]) && (best == nil || o.area < best.area) {
				best = o
			}
		}
		if best == nil {
			outers = append(outers, &outer{ring: h, area: signedArea(h)})
			h.Reverse() // held counter-clockwise; reversed back below
			continue
		}
		best.holes = append(best.holes, h)
	}
	mp := make(orb.MultiPolygon, len(outers))
	for i, o := range outers {
		o.ring.Reverse()
		pg := orb.Polygon{o.ring}
		for _, h := range o.holes {
			h.Reverse()
			pg = append(pg, h)
		}
		mp[i] = pg
	}
	if len(mp) == 1 {
		return mp[0]
	}
	return mp
}

// signedArea is the shoelace area: positive counter-clockwise.
func signedArea(r orb.Ring) float64 {
	if len(r) < 3 {
		return 0
	}
	var s float64
	x0, y0 := r[0][0], r[0][1]
	for i := 1; i+1 < len(r); i++ {
		s += (r[i][0]-x0)*(r[i+1][1]-y0) - (r[i+1][0]-x0)*(r[i][1]-y0)
	}
	return s / 2
}
