package synth

import (
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/tiles"
)

// TestHeavyShapes checks the heavy layers' shapes against the issue's
// description, that every polygon is valid, and that the same seed gives
// the same data.
func TestHeavyShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 6 million vertices")
	}
	t.Parallel()
	total := 0
	for _, id := range HeavyLayers {
		n, giants, minV, maxV := 0, 0, 1<<30, 0
		err := HeavyFeatures(1, id, func(f tiles.Feature) error {
			if err := geo.Validate(f.Geometry, 1<<20); err != nil {
				t.Errorf("%s %s: %v", id, f.ID, err)
			}
			v := len(f.Geometry.(orb.Polygon)[0]) - 1
			if v == heavyGiantVerts {
				giants++
			} else {
				minV, maxV = min(minV, v), max(maxV, v)
			}
			n++
			total += v
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != HeavyFeatureCount(id) {
			t.Errorf("%s: %d features, HeavyFeatureCount says %d", id, n, HeavyFeatureCount(id))
		}
		lo, hi := 1000, 60_000
		if id == HeavyBushfireLayer {
			lo = 2000
			if giants != heavyGiants {
				t.Errorf("%d giant patches", giants)
			}
		}
		if minV < lo-2 || maxV > hi {
			t.Errorf("%s: vertices %d..%d, want within %d..%d", id, minV, maxV, lo, hi)
		}
		t.Logf("%s: %d polygons, %d..%d vertices (+%d giants)", id, n, minV, maxV, giants)
	}
	t.Logf("%d vertices in all", total)
	s1, err := HeavySites(1, 50)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := HeavySites(1, 50)
	points := 0
	for i := range s1 {
		if !orb.Equal(s1[i].Geometry, s2[i].Geometry) || s1[i].RadiusM != s2[i].RadiusM {
			t.Fatalf("site %d differs between runs", i)
		}
		if _, ok := s1[i].Geometry.(orb.Point); ok {
			points++
		}
		if r := s1[i].RadiusM; r < heavyMinRadiusM || r > heavyMaxRadiusM {
			t.Errorf("radius %v", r)
		}
	}
	if points == 0 || points == len(s1) {
		t.Errorf("%d points of %d sites", points, len(s1))
	}
}
