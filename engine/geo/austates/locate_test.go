package austates

import (
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"

	"github.com/paulmach/orb/planar"
)

// TestStateAtMatchesPlanar: StateAt answers as planar.MultiPolygonContains over
// the outlines (in Code order) for random
// points over Australia and for the outlines' own vertices and edge
// midpoints (the boundary cases).
func TestStateAtMatchesPlanar(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 3))
	check := func(p orb.Point) {
		want := ""
		for _, s := range States() {
			if planar.MultiPolygonContains(s.Geometry, p) {
				want = s.Code
				break
			}
		}
		if got := StateAt(p); got != want {
			t.Fatalf("%v: StateAt %q, planar %q", p, got, want)
		}
	}
	for range 100_000 {
		check(orb.Point{112 + 42*rng.Float64(), -44 + 34*rng.Float64()})
	}
	for _, s := range States() {
		for _, poly := range s.Geometry {
			for _, r := range poly {
				for i := 0; i < len(r); i += 7 {
					check(r[i])
					if i+1 < len(r) {
						check(orb.Point{(r[i][0] + r[i+1][0]) / 2, (r[i][1] + r[i+1][1]) / 2})
					}
				}
			}
		}
	}
}
