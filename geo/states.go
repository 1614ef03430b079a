package geo

import (
	"slices"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

// Which states a site lies in, over state outlines the caller supplies
// (geo/austates', in the API), so that this package holds the rule
// without embedding the data.

// Region is one outline of RegionOutlines: a state or territory.
type Region struct {
	Code     string
	Geometry orb.MultiPolygon // CRS84
}

// RegionOutlines is a set of non-overlapping outlines.
type RegionOutlines interface {
	// Within returns the regions whose bound intersects b.
	Within(b orb.Bound) []Region
	// At returns the code of the region containing p, or "".
	At(p orb.Point) string
}

// StatesOf returns, sorted, the codes of the states (or any regions) of
// outlines containing the centroid of g or any of its vertices (what
// outlines.At says of each). It stops at two: more tell nothing new.
//
// Testing 10,000 vertices against whole state outlines costs about half a
// second, so only the state edges that cross the site's bound are used: a
// state contains a vertex p exactly when it contains the bound's centre c
// and the segment c-p crosses its edges an even number of times, or does
// not contain c and crosses them an odd number of times; every edge the
// segment crosses crosses the bound. A segment that touches an edge's end
// or runs along it is degenerate: that vertex is asked of outlines.At.
func StatesOf(g orb.Geometry, outlines RegionOutlines) []string {
	b := g.Bound()
	c := b.Center()
	var probes []regionProbe
	for _, s := range outlines.Within(b) {
		p := regionProbe{code: s.Code, inRef: planar.MultiPolygonContains(s.Geometry, c)}
		for _, poly := range s.Geometry {
			for _, ring := range poly {
				for i := 1; i < len(ring); i++ {
					if e := [2]orb.Point{ring[i-1], ring[i]}; segmentBound(e).Intersects(b) {
						p.edges = append(p.edges, e)
					}
				}
			}
		}
		probes = append(probes, p)
	}
	var out []string
	visit := func(p orb.Point) bool {
		for _, code := range regionsAt(outlines, probes, c, p) {
			if !slices.Contains(out, code) {
				out = append(out, code)
			}
		}
		return len(out) < 2
	}
	centroid, _ := planar.CentroidArea(g)
	if visit(centroid) {
		eachPoint(g, visit)
	}
	slices.Sort(out)
	if len(out) > 2 {
		out = out[:2]
	}
	return out
}

// regionProbe is one region near a site: whether it contains the site's
// bound centre, and its edges that cross the bound.
type regionProbe struct {
	code  string
	inRef bool
	edges [][2]orb.Point
}

// regionsAt returns the codes of the probed regions containing p, or, when
// the segment from the centre c to p is degenerate for any of them, what
// outlines.At says of p.
func regionsAt(outlines RegionOutlines, probes []regionProbe, c, p orb.Point) []string {
	var out []string
	for _, s := range probes {
		in := s.inRef
		for _, e := range s.edges {
			crosses, degenerate := segmentsCross(c, p, e[0], e[1])
			if degenerate {
				if code := outlines.At(p); code != "" {
					return []string{code}
				}
				return nil
			}
			if crosses {
				in = !in
			}
		}
		if in {
			out = append(out, s.code)
		}
	}
	return out
}

func segmentBound(e [2]orb.Point) orb.Bound {
	return orb.Bound{Min: orb.Point{min(e[0][0], e[1][0]), min(e[0][1], e[1][1])}, Max: orb.Point{max(e[0][0], e[1][0]), max(e[0][1], e[1][1])}}
}

// segmentsCross says whether segments pq and ab cross at one point inside
// both; degenerate when they touch (an end of one on the other, or
// collinear and overlapping), where counting crossings cannot decide.
func segmentsCross(p, q, a, b orb.Point) (crosses, degenerate bool) {
	if !segmentBound([2]orb.Point{p, q}).Intersects(segmentBound([2]orb.Point{a, b})) {
		return false, false
	}
	o1, o2 := orient(p, q, a), orient(p, q, b)
	o3, o4 := orient(a, b, p), orient(a, b, q)
	if o1 == 0 || o2 == 0 || o3 == 0 || o4 == 0 {
		// Collinear with an end (exactly: orient is robust): touching only if
		// the bounds overlap, which they do here; a degenerate p == q (the
		// centre itself) is too.
		return false, true
	}
	return o1 != o2 && o3 != o4, false
}

// eachPoint calls f on every vertex of g until f returns false.
func eachPoint(g orb.Geometry, f func(orb.Point) bool) bool {
	switch g := g.(type) {
	case orb.Point:
		return f(g)
	case orb.MultiPoint:
		for _, p := range g {
			if !f(p) {
				return false
			}
		}
	case orb.LineString:
		return eachPoint(orb.MultiPoint(g), f)
	case orb.Ring:
		return eachPoint(orb.MultiPoint(g), f)
	case orb.MultiLineString:
		for _, l := range g {
			if !eachPoint(l, f) {
				return false
			}
		}
	case orb.Polygon:
		for _, r := range g {
			if !eachPoint(r, f) {
				return false
			}
		}
	case orb.MultiPolygon:
		for _, p := range g {
			if !eachPoint(p, f) {
				return false
			}
		}
	case orb.Collection:
		for _, x := range g {
			if !eachPoint(x, f) {
				return false
			}
		}
	}
	return true
}

// PolygonalContains reports whether the Polygon or MultiPolygon g contains
// p in the plane of its coordinates (a boundary point counts as orb's
// planar package counts it); any other geometry contains nothing.
func PolygonalContains(g orb.Geometry, p orb.Point) bool {
	switch g := g.(type) {
	case orb.Polygon:
		return planar.PolygonContains(g, p)
	case orb.MultiPolygon:
		return planar.MultiPolygonContains(g, p)
	}
	return false
}
