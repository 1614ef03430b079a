package bench

import (
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
)

func TestWKBVertices(t *testing.T) {
	ring := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 0}}
	for _, c := range []struct {
		g    orb.Geometry
		want int64
	}{
		{orb.Point{1, 2}, 1},
		{orb.MultiPoint{{1, 2}, {3, 4}, {5, 6}}, 3},
		{orb.LineString{{0, 0}, {1, 1}}, 2},
		{orb.Polygon{ring, ring}, 8},
		{orb.MultiPolygon{{ring}, {ring, ring}}, 12},
		{orb.MultiLineString{{{0, 0}, {1, 1}, {2, 2}}}, 3},
	} {
		b, err := wkb.Marshal(c.g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wkbVertices(b)
		if err != nil || got != c.want {
			t.Errorf("%T: %d, %v; want %d", c.g, got, err, c.want)
		}
		if _, err := wkbVertices(b[:len(b)-1]); err == nil && len(b) > 5 {
			t.Errorf("%T: truncated WKB accepted", c.g)
		}
	}
}
