package geo

import (
	"math"
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

// CoastalWatersM is how far past its land a state's jurisdiction is
// taken to reach: the states administer their coastal waters to 3 nautical
// miles (Coastal Waters (State Powers) Act 1980).
const CoastalWatersM = 3 * 1852.0

// StatesOf returns, sorted, the codes of the states (or any regions) that
// the centroid of g or any of its vertices lies in or within
// CoastalWatersM of (what outlines.At says of each, with that reach). A
// point within 3 nautical miles of exactly one state's land is that
// state's; one as near two states is both's (undetermined: the customer
// names one); one farther from every state is nobody's. The reach also
// absorbs the outlines' generalisation: Natural Earth's 1:10m coast runs
// 400 m inland of Darwin's CBD, and its borders stray by up to 4 km
// (Queanbeyan, NSW, lies in its ACT), so a point that near a border is
// undetermined rather than put in the wrong state. It stops at two: more
// tell nothing new.
//
// Testing 10,000 vertices against whole state outlines costs about half a
// second, so only the state edges that cross the site's bound are used: a
// state contains a vertex p exactly when it contains the bound's centre c
// and the segment c-p crosses its edges an even number of times, or does
// not contain c and crosses them an odd number of times; every edge the
// segment crosses crosses the bound. A segment that touches an edge's end
// or runs along it is degenerate: that vertex is asked of outlines.At.
// The reach looks only at the edges within it of the bound.
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
	coast := newCoastalProbe(outlines, b)
	visit := func(p orb.Point) bool {
		for _, code := range append(regionsAt(outlines, probes, c, p), coast.near(p)...) {
			if !slices.Contains(out, code) {
				out = append(out, code)
			}
		}
		return len(out) < 2
	}
	centroid, _ := planar.CentroidArea(g)
	if visit(centroid) {
		for p := range Points(g) {
			if !visit(p) {
				break
			}
		}
	}
	slices.Sort(out)
	if len(out) > 2 {
		out = out[:2]
	}
	return out
}

// coastalProbe finds the regions whose outline lies within CoastalWatersM
// of a point near a site: the region edges within that distance of the site's bound, in a
// metric projection about the bound's centre (exact distances from it, and
// within millimetres of the geodesic for the few kilometres involved).
type coastalProbe struct {
	local   Local
	regions []projectedEdges
}

type projectedEdges struct {
	code  string
	edges [][2][2]float64
}

func newCoastalProbe(outlines RegionOutlines, b orb.Bound) *coastalProbe {
	c := b.Center()
	// Degrees of latitude and longitude that surely exceed the reach, with
	// 10% to spare (a degree of latitude is at least 110.5 km).
	dLat := CoastalWatersM / 110500 * 1.1
	dLon := dLat / max(math.Cos(math.Max(math.Abs(b.Min[1]), math.Abs(b.Max[1]))*math.Pi/180), 0.01)
	pb := orb.Bound{Min: orb.Point{b.Min[0] - dLon, b.Min[1] - dLat}, Max: orb.Point{b.Max[0] + dLon, b.Max[1] + dLat}}
	cp := &coastalProbe{local: NewLocal(c)}
	for _, s := range outlines.Within(pb) {
		r := projectedEdges{code: s.Code}
		for _, poly := range s.Geometry {
			for _, ring := range poly {
				for i := 1; i < len(ring); i++ {
					if e := [2]orb.Point{ring[i-1], ring[i]}; segmentBound(e).Intersects(pb) {
						x0, y0 := cp.local.Forward(e[0])
						x1, y1 := cp.local.Forward(e[1])
						r.edges = append(r.edges, [2][2]float64{{x0, y0}, {x1, y1}})
					}
				}
			}
		}
		if len(r.edges) > 0 {
			cp.regions = append(cp.regions, r)
		}
	}
	return cp
}

// near returns the codes of the regions whose outline lies within
// CoastalWatersM of p.
func (cp *coastalProbe) near(p orb.Point) []string {
	x, y := cp.local.Forward(p)
	var out []string
	for _, r := range cp.regions {
		for _, e := range r.edges {
			if segmentDistance(x, y, e) <= CoastalWatersM {
				out = append(out, r.code)
				break
			}
		}
	}
	return out
}

// segmentDistance is the planar distance from (x, y) to the segment e.
func segmentDistance(x, y float64, e [2][2]float64) float64 {
	ax, ay, bx, by := e[0][0], e[0][1], e[1][0], e[1][1]
	dx, dy := bx-ax, by-ay
	t := 0.0
	if l2 := dx*dx + dy*dy; l2 > 0 {
		t = min(1, max(0, ((x-ax)*dx+(y-ay)*dy)/l2))
	}
	return math.Hypot(x-ax-t*dx, y-ay-t*dy)
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
