package geo

import (
	"iter"

	"github.com/paulmach/orb"
)

// Points yields every vertex of g in order (rings with their closing
// vertex), descending into collections; a break stops the walk. The one
// vertex walk of the code base: the renderer, the tile codec and the state
// lookup all use it.
func Points(g orb.Geometry) iter.Seq[orb.Point] {
	return func(yield func(orb.Point) bool) { eachPoint(g, yield) }
}

func eachPoint(g orb.Geometry, f func(orb.Point) bool) bool {
	switch g := g.(type) {
	case orb.Point:
		return f(g)
	case orb.MultiPoint:
		return eachOf(g, f)
	case orb.LineString:
		return eachOf(g, f)
	case orb.Ring:
		return eachOf(g, f)
	case orb.MultiLineString:
		for _, l := range g {
			if !eachOf(l, f) {
				return false
			}
		}
	case orb.Polygon:
		for _, r := range g {
			if !eachOf(r, f) {
				return false
			}
		}
	case orb.MultiPolygon:
		for _, p := range g {
			for _, r := range p {
				if !eachOf(r, f) {
					return false
				}
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

func eachOf[S ~[]orb.Point](s S, f func(orb.Point) bool) bool {
	for _, p := range s {
		if !f(p) {
			return false
		}
	}
	return true
}
