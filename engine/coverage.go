package engine

import (
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
	return newEvaluator(prepareSite(area, geo.NewLocal), 0).coverage(cover)
}

func isPolygonal(g orb.Geometry) bool {
	switch g.(type) {
	case orb.Polygon, orb.MultiPolygon:
		return true
	}
	return false
}

// coverage classifies the search area, the site buffered by the radius,
// against cover. With d the distance from the site to the cover's boundary
// (its rings): d <= r means the search area reaches across the boundary
// (partial); otherwise each connected component of the site lies wholly
// inside or outside the cover, and so does each cover polygon with respect
// to the site: a cover polygon inside the site makes it partial; otherwise
// the site's components decide: all inside is complete, none is none.
func (ev *evaluator) coverage(cover orb.Geometry) Coverage {
	if !isPolygonal(cover) {
		return CoverageUnknown
	}
	var f flat
	f.setOrb(cover)
	if !f.hasArea() {
		return CoverageUnknown
	}
	for k := range ev.s.parts {
		n := near{d: ev.limit}
		ev.partDistance(k, &f, &n)
		if n.found && n.d <= ev.r {
			return CoveragePartial
		}
	}
	// A cover polygon inside the site's polygons.
	if ev.s.area != nil {
		for _, i := range f.comps {
			if ev.s.area.contains(f.pts[i]) {
				return CoveragePartial
			}
		}
	}
	in := 0
	for _, u := range ev.s.comps {
		if flatContains(&f, u) {
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
