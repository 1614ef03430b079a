package engine

import (
	"testing"

	"github.com/paulmach/orb"
)

func square(x0, y0, x1, y1 float64) orb.Polygon {
	return orb.Polygon{{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}}}
}

func TestCoverageOf(t *testing.T) {
	cover := square(150, -35, 152, -33)
	cases := []struct {
		name  string
		area  orb.Geometry
		cover orb.Geometry
		want  Coverage
	}{
		{"unknown cover", orb.Point{151, -34}, nil, CoverageUnknown},
		{"point inside", orb.Point{151, -34}, cover, CoverageComplete},
		{"point outside", orb.Point{140, -34}, cover, CoverageNone},
		{"polygon inside", square(151, -34, 151.1, -33.9), cover, CoverageComplete},
		{"polygon straddling", square(151.9, -34, 152.1, -33.9), cover, CoveragePartial},
		{"polygon outside, boxes apart", square(160, -34, 161, -33), cover, CoverageNone},
		{"area containing the whole cover", square(149, -36, 153, -32), cover, CoveragePartial},
		{"multipolygon cover", orb.Point{158, -30}, orb.MultiPolygon{cover, square(157, -31, 159, -29)}, CoverageComplete},
	}
	for _, c := range cases {
		if got := CoverageOf(c.area, c.cover); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
