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
	// planar.MultiPolygonContains, with each outer ring's bound computed
	// once: RingContains computes it on every call, and a polygon whose
	// outer ring's bound excludes the point does not contain it (the same
	// answer, without a pass over every vertex of every state per point).
	type bounded struct {
		poly  orb.Polygon
		outer orb.Bound
	}
	all := States()
	var states [][]bounded
	for _, s := range all {
		var bs []bounded
		for _, poly := range s.Geometry {
			bs = append(bs, bounded{poly, poly[0].Bound()})
		}
		states = append(states, bs)
	}
	contains := func(bs []bounded, p orb.Point) bool {
		for _, b := range bs {
			if b.outer.Contains(p) && planar.PolygonContains(b.poly, p) {
				return true
			}
		}
		return false
	}
	check := func(p orb.Point) {
		want := ""
		for i, s := range all {
			if contains(states[i], p) {
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
