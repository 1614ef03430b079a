// Package engine is the in-memory spatial engine over immutable release tiles.
package engine

import (
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
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

// CoverageOf classifies area against cover (nil cover: unknown). An area is
// completely covered when every vertex lies inside cover, not covered when
// none does and their boxes do not meet, and partially covered otherwise.
// The vertex test is exact for convex covers and conservative enough for the
// catalogue; the engine refines it for query search areas.
func CoverageOf(area, cover orb.Geometry) Coverage {
	if cover == nil {
		return CoverageUnknown
	}
	if area == nil || !area.Bound().Intersects(cover.Bound()) {
		return CoverageNone
	}
	in, out := 0, 0
	visit(area, func(p orb.Point) {
		if contains(cover, p) {
			in++
		} else {
			out++
		}
	})
	switch {
	case out == 0 && in > 0:
		return CoverageComplete
	case in == 0 && !anyCoverVertexInside(cover, area):
		return CoverageNone
	}
	return CoveragePartial
}

func contains(cover orb.Geometry, p orb.Point) bool {
	switch c := cover.(type) {
	case orb.Polygon:
		return planar.PolygonContains(c, p)
	case orb.MultiPolygon:
		return planar.MultiPolygonContains(c, p)
	}
	return false
}

// anyCoverVertexInside catches a cover lying wholly inside a polygonal area.
func anyCoverVertexInside(cover, area orb.Geometry) bool {
	found := false
	visit(cover, func(p orb.Point) {
		if !found && contains(area, p) {
			found = true
		}
	})
	return found
}

func visit(g orb.Geometry, fn func(orb.Point)) {
	switch g := g.(type) {
	case orb.Point:
		fn(g)
	case orb.MultiPoint:
		for _, p := range g {
			fn(p)
		}
	case orb.LineString:
		for _, p := range g {
			fn(p)
		}
	case orb.MultiLineString:
		for _, l := range g {
			visit(l, fn)
		}
	case orb.Ring:
		for _, p := range g {
			fn(p)
		}
	case orb.Polygon:
		for _, r := range g {
			visit(r, fn)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			visit(p, fn)
		}
	}
}
