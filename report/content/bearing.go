package content

import (
	"math"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// bearing is the direction from the site's centre (local's origin) to the
// feature's point nearest that centre, clockwise from north in degrees,
// rounded to a tenth; NaN when the feature touches or lies inside the site
// (distance 0), where a direction means nothing.
func bearing(local geo.Local, f *Feature) float64 {
	if f.DistanceM == 0 || f.Geometry == nil {
		return math.NaN()
	}
	x, y, ok := closestXY(local, f.Geometry)
	if !ok || (x == 0 && y == 0) {
		return math.NaN()
	}
	deg := math.Mod(math.Atan2(x, y)*180/math.Pi+360, 360)
	deg = math.Round(deg*10) / 10
	if deg >= 360 {
		deg = 0
	}
	return deg
}

// closestXY is the point of g nearest the origin of local's plane.
func closestXY(local geo.Local, g orb.Geometry) (x, y float64, ok bool) {
	best := math.Inf(1)
	consider := func(px, py float64) {
		if d := px*px + py*py; d < best {
			best, x, y, ok = d, px, py, true
		}
	}
	segment := func(ls []orb.Point) {
		if len(ls) == 1 {
			consider(local.Forward(ls[0]))
			return
		}
		for i := 1; i < len(ls); i++ {
			ax, ay := local.Forward(ls[i-1])
			bx, by := local.Forward(ls[i])
			dx, dy := bx-ax, by-ay
			t := 0.0
			if l2 := dx*dx + dy*dy; l2 > 0 {
				t = math.Max(0, math.Min(1, -(ax*dx+ay*dy)/l2))
			}
			consider(ax+t*dx, ay+t*dy)
		}
	}
	switch g := g.(type) {
	case orb.Point:
		consider(local.Forward(g))
	case orb.MultiPoint:
		for _, p := range g {
			consider(local.Forward(p))
		}
	case orb.LineString:
		segment(g)
	case orb.MultiLineString:
		for _, ls := range g {
			segment(ls)
		}
	case orb.Polygon:
		for _, ring := range g {
			segment(ring)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			for _, ring := range p {
				segment(ring)
			}
		}
	}
	return x, y, ok
}
