package engine

import (
	"math"

	"github.com/paulmach/orb"

	"siteenv/engine/geo"
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
	return newEvaluator(prepareSite(area, geo.NewLocal), 0).coverage(newCover(cover))
}

func isPolygonal(g orb.Geometry) bool {
	switch g.(type) {
	case orb.Polygon, orb.MultiPolygon:
		return true
	}
	return false
}

// cover is a release's coverage polygon prepared for coverage tests: its
// positions, a banded point-in-polygon index and each ring edge's box
// padded for its geodesic bow. Queries of a release share one (see
// Engine.coverFor), so a query pays for none of it.
type cover struct {
	geom  orb.Geometry
	f     flat
	rs    *ringSet
	edges []orb.Bound
}

// newCover prepares g; nil when g is not a polygon with area (unknown
// coverage).
func newCover(g orb.Geometry) *cover {
	if !isPolygonal(g) {
		return nil
	}
	c := &cover{geom: g}
	c.f.setOrb(g)
	if !c.f.hasArea() {
		return nil
	}
	c.rs = newRingSet(&c.f)
	// Each edge's box is padded for how far a geodesic can bow from its
	// straight lon/lat chord: under L²·π/1440 degrees for an edge
	// spanning L degrees at latitudes up to 60°, doubled here, plus 0.01°
	// for safety.
	for _, e := range c.f.elems {
		if e.kind != elemRing {
			continue
		}
		for i := e.start; i+1 < e.end; i++ {
			a, b := c.f.pts[i], c.f.pts[i+1]
			seg := orb.Bound{Min: a, Max: a}.Extend(b)
			l := math.Max(seg.Max[0]-seg.Min[0], seg.Max[1]-seg.Min[1])
			c.edges = append(c.edges, padDeg(seg, 0.01+l*l*math.Pi/720))
		}
	}
	return c
}

// boxNear reports whether any ring edge of the cover may pass through box.
func (c *cover) boxNear(box orb.Bound) bool {
	for i := range c.edges {
		e := &c.edges[i]
		if e.Min[0] <= box.Max[0] && e.Max[0] >= box.Min[0] && e.Min[1] <= box.Max[1] && e.Max[1] >= box.Min[1] {
			return true
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
	// Only a cover edge near the search area can come within the radius;
	// most queries are far from their layer's coverage boundary, so skip
	// the exact distance (the costly part) when no edge is near.
	if c.boxNear(ev.union) {
		for k := range ev.s.parts {
			n := near{d: ev.limit}
			ev.partDistance(k, &c.f, &n)
			if n.found && n.d <= ev.r {
				return CoveragePartial
			}
		}
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
