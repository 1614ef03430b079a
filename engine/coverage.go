package engine

import (
	"math"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// Coverage says how much of an area a release's coverage polygon covers.
type Coverage string

// Coverage values of the contract.
const (
	CoverageComplete Coverage = "complete"
	CoveragePartial  Coverage = "partial"
	CoverageNone     Coverage = "none"
	CoverageUnknown  Coverage = "unknown"
)

// CoverageOf classifies area (a site geometry, CRS84) against cover
// (Polygon or MultiPolygon; nil or any other type: unknown): complete when
// area lies inside cover, none when they do not meet, partial otherwise.
// It is the engine's search-area test with radius 0: exact with geodesic
// edges (an area touching the cover's boundary is partial).
func CoverageOf(area, cover orb.Geometry) Coverage {
	if !isPolygonal(cover) {
		return CoverageUnknown
	}
	if area == nil {
		return CoverageNone
	}
	var f flat
	f.setOrb(area)
	if len(f.pts) == 0 {
		return CoverageNone
	}
	for _, p := range f.pts {
		if !finite(p[0]) || !finite(p[1]) {
			return CoverageUnknown
		}
	}
	return newEvaluator(prepareSite(area, geo.NewLocal), 0).coverage(newCover(cover, 0))
}

func isPolygonal(g orb.Geometry) bool {
	switch g.(type) {
	case orb.Polygon, orb.MultiPolygon:
		return true
	}
	return false
}

// cover is a coverage polygon prepared for coverage tests: its positions,
// a banded point-in-polygon index, and its ring edges as pieces under an
// R-tree of their boxes (padded for each geodesic's bow). The engine
// prepares a release's coverage once (Engine.coverFor) with edges cut into
// pieces of at most coverPiece metres: a coverage outline's edges can be
// hundreds of kilometres long, and a query near one then measures a few
// short pieces instead of bisecting the whole geodesic.
type cover struct {
	geom   orb.Geometry
	f      flat
	rs     *ringSet
	pieces [][2]orb.Point
	ix     *index
}

// coverPiece is the longest piece the engine cuts coverage edges into.
const coverPiece = 2000.0

// newCover prepares g, cutting edges longer than maxPiece metres (0: not
// cut); nil when g is not a polygon with area (unknown coverage). The
// point-in-polygon index is built over the cut rings too: a piece's chord
// strays from its geodesic by well under a metre, where a long edge's
// strays by kilometres, and only positions that close to a chord pay the
// exact geodesic side test.
func newCover(g orb.Geometry, maxPiece float64) *cover {
	if !isPolygonal(g) {
		return nil
	}
	c := &cover{geom: g}
	if maxPiece > 0 {
		c.f.setOrb(cutRings(g, maxPiece))
	} else {
		c.f.setOrb(g)
	}
	if !c.f.hasArea() {
		return nil
	}
	c.rs = newRingSet(&c.f, coverageBandEdges)
	var boxes []box32
	for _, e := range c.f.elems {
		if e.kind != elemRing {
			continue
		}
		for i := e.start; i+1 < e.end; i++ {
			a, b := c.f.pts[i], c.f.pts[i+1]
			c.pieces = append(c.pieces, [2]orb.Point{a, b})
			scale := bulgeScale(math.Max(math.Abs(a[1]), math.Abs(b[1])))
			boxes = append(boxes, toBox32(edgeBox(a, b, scale)))
		}
	}
	c.ix = newIndex(boxes)
	return c
}

// cutRings returns the polygon g (Polygon or MultiPolygon) with every ring
// edge cut into geodesic pieces of at most maxPiece metres.
func cutRings(g orb.Geometry, maxPiece float64) orb.Geometry {
	var sub []orb.Point
	poly := func(p orb.Polygon) orb.Polygon {
		out := make(orb.Polygon, len(p))
		for k, r := range p {
			if len(r) == 0 {
				continue
			}
			cr := orb.Ring{r[0]}
			for i := 0; i+1 < len(r); i++ {
				sub = cutGeodesic(sub, r[i], r[i+1], maxPiece)
				cr = append(cr, sub[1:]...)
			}
			out[k] = cr
		}
		return out
	}
	switch g := g.(type) {
	case orb.Polygon:
		return poly(g)
	case orb.MultiPolygon:
		out := make(orb.MultiPolygon, len(g))
		for i, p := range g {
			out[i] = poly(p)
		}
		return out
	}
	return g
}

// boundaryWithin reports whether the cover's boundary comes within the
// radius of the site.
func (ev *evaluator) boundaryWithin(c *cover) bool {
	cands := c.ix.search(toBox32(ev.union), ev.cands[:0])
	ev.cands = cands
	for k, pt := range ev.s.parts {
		sb := toBox32(ev.boxes[k])
		best := near{d: ev.limit}
		for _, i := range cands {
			if !c.ix.boxes[i].intersects(&sb) {
				continue
			}
			A, B := c.pieces[i][0], c.pieces[i][1]
			if pt.loc.Fitted(A) && pt.loc.Fitted(B) {
				ev.edge(pt, A, B, pt.loc.ForwardPoint(A), pt.loc.ForwardPoint(B), &best)
			} else {
				ev.farEdge(pt, A, B, &best)
			}
			if best.found && best.d <= ev.r {
				return true
			}
		}
	}
	return false
}

// coverage classifies the search area, the site buffered by the radius,
// against c (nil: unknown). With d the distance from the site to the
// cover's boundary (its rings): d <= r means the search area reaches
// across the boundary (partial); otherwise each connected component of the
// site lies wholly inside or outside the cover, and so does each cover
// polygon with respect to the site: a cover polygon inside the site makes
// it partial; otherwise the site's components decide: all inside is
// complete, none is none.
func (ev *evaluator) coverage(c *cover) Coverage {
	if c == nil {
		return CoverageUnknown
	}
	if ev.boundaryWithin(c) {
		return CoveragePartial
	}
	// A cover polygon inside the site's polygons.
	if ev.s.area != nil {
		for _, i := range c.f.comps {
			if ev.s.area.contains(c.f.pts[i]) {
				return CoveragePartial
			}
		}
	}
	in := 0
	for _, u := range ev.s.comps {
		if c.rs.contains(u) {
			in++
		}
	}
	switch in {
	case len(ev.s.comps):
		return CoverageComplete
	case 0:
		return CoverageNone
	}
	return CoveragePartial
}
