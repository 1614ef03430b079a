package engine

import (
	"math"

	"github.com/paulmach/orb"
	"github.com/tidwall/geodesic"

	"siteenv/geo"
)

// Point in polygon with geodesic edges.
//
// The test casts a ray due east along the parallel of the point in
// longitude, latitude and counts, per polygon, the edges it crosses, taking
// each edge as the straight line between its ends in degrees (exact and
// cheap, and it needs no projection of far-away edges). A geodesic edge and
// its straight chord share their ends and enclose a thin lens (bulgeDeg
// bounds its width); the ray crosses the geodesic and the chord the same
// number of times modulo 2 unless the point lies inside that lens. So for
// the few edges whose lens could hold the point, the point's side of the
// geodesic is found from exact geodesic azimuths, and the edge's crossing
// is flipped when that side differs from its side of the chord. The result
// is exact for geodesic edges up to a point within nanometres of an edge.

// ringContains reports whether p lies inside the polygons formed by the
// ring elements of f (rings of the same polygon: even-odd; polygons:
// union). Positions on a chord count as inside or outside arbitrarily;
// callers decide touching separately through distances.
func flatContains(f *flat, p orb.Point) bool {
	scale := boundScale(f.box)
	inside := false
	poly := int32(-1)
	for _, e := range f.elems {
		if e.kind != elemRing {
			continue
		}
		if e.poly != poly {
			if inside {
				return true
			}
			poly = e.poly
		}
		for i := e.start; i+1 < e.end; i++ {
			if crosses(f.pts[i], f.pts[i+1], p, scale) {
				inside = !inside
			}
		}
	}
	return inside
}

// crosses reports whether the geodesic from a to b crosses the ray due
// east of p along its parallel (half-open rule on latitude); scale is a
// bulgeScale valid for the edge.
func crosses(a, b, p orb.Point, scale float64) bool {
	c := false
	if (a[1] > p[1]) != (b[1] > p[1]) {
		o := geo.Orient(a, b, p)
		c = (b[1] > a[1] && o > 0) || (b[1] < a[1] && o < 0)
	}
	if a[0] == b[0] {
		return c // a meridian: the geodesic is the chord
	}
	// Lens correction: only for points within the bulge of the chord.
	m := bulgeWith(a, b, scale)
	if p[0] < math.Min(a[0], b[0])-m || p[0] > math.Max(a[0], b[0])+m ||
		p[1] < math.Min(a[1], b[1])-m || p[1] > math.Max(a[1], b[1])+m {
		return c
	}
	q := closestOnSeg(p, a, b)
	if math.Abs(p[0]-q[0]) > m || math.Abs(p[1]-q[1]) > m {
		return c
	}
	chord := geo.Orient(a, b, p)
	side := geodesicSide(a, b, p)
	if chord != 0 && side != 0 && chord != side {
		c = !c
	}
	return c
}

// geodesicSide returns +1 when p lies left of the geodesic from a to b
// (counter-clockwise, as geo.Orient), -1 when right and 0 when on it, from the
// azimuths at a of b and of p.
func geodesicSide(a, b, p orb.Point) int {
	var azB, azP float64
	geodesic.WGS84.Inverse(a[1], a[0], b[1], b[0], nil, &azB, nil)
	geodesic.WGS84.Inverse(a[1], a[0], p[1], p[0], nil, &azP, nil)
	d := math.Remainder(azP-azB, 360)
	switch {
	case d > 0: // clockwise from the edge's direction: right
		return -1
	case d < 0:
		return 1
	}
	return 0
}

// ringSet is a site's polygons prepared for many point-in-polygon tests:
// edges bucketed by latitude band.
type ringSet struct {
	f     *flat
	box   orb.Bound
	scale float64
	npoly int
	bands [][]int32 // edge start indices (into f.pts) per latitude band; nil for few edges
	lat0  float64
	dlat  float64
}

// Edges per latitude band, on average: a site's ring set is built per
// query, a release coverage's once and then tested by every query.
const (
	ringSetBandEdges  = 8
	coverageBandEdges = 2
)

func newRingSet(f *flat, perBand int) *ringSet {
	rs := &ringSet{f: f, npoly: int(f.polys), scale: boundScale(f.box)}
	rs.box = orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
	edges := 0
	for _, e := range f.elems {
		if e.kind != elemRing {
			continue
		}
		for i := e.start; i+1 < e.end; i++ {
			rs.box = rs.box.Union(edgeBox(f.pts[i], f.pts[i+1], rs.scale))
			edges++
		}
	}
	if edges < 64 {
		return rs
	}
	nb := min(edges/perBand, 1<<14)
	rs.lat0 = rs.box.Min[1]
	rs.dlat = (rs.box.Max[1] - rs.box.Min[1]) / float64(nb)
	if !(rs.dlat > 0) {
		return rs
	}
	rs.bands = make([][]int32, nb)
	for _, e := range f.elems {
		if e.kind != elemRing {
			continue
		}
		for i := e.start; i+1 < e.end; i++ {
			b := edgeBox(f.pts[i], f.pts[i+1], rs.scale)
			lo, hi := rs.band(b.Min[1]), rs.band(b.Max[1])
			for k := lo; k <= hi; k++ {
				rs.bands[k] = append(rs.bands[k], i)
			}
		}
	}
	return rs
}

func (rs *ringSet) band(lat float64) int {
	k := int(math.Floor((lat - rs.lat0) / rs.dlat))
	return max(0, min(k, len(rs.bands)-1))
}

// polyOf returns the polygon of the ring holding edge start i.
func (rs *ringSet) polyOf(i int32) int32 {
	// Rings are few relative to edges; a binary search over elements.
	els := rs.f.elems
	lo, hi := 0, len(els)
	for lo < hi {
		m := (lo + hi) / 2
		if els[m].end <= i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return els[lo].poly
}

// contains reports whether p lies inside the site's polygons. Not safe for
// concurrent use (it reuses a buffer): a ringSet belongs to one query.
func (rs *ringSet) contains(p orb.Point) bool {
	if !rs.box.Contains(p) {
		return false
	}
	if rs.bands == nil || p[1] < rs.lat0 || p[1] > rs.box.Max[1] {
		return flatContains(rs.f, p)
	}
	// Per call, not per ringSet: a query's layers share the site.
	var buf [16]bool
	parity := buf[:]
	if rs.npoly > len(buf) {
		parity = make([]bool, rs.npoly)
	}
	pts := rs.f.pts
	for _, i := range rs.bands[rs.band(p[1])] {
		if crosses(pts[i], pts[i+1], p, rs.scale) {
			k := rs.polyOf(i)
			parity[k] = !parity[k]
		}
	}
	for _, in := range parity {
		if in {
			return true
		}
	}
	return false
}
