package geo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
)

// TestOnGrid: the canonical form of a valid geometry whose coordinates are
// on the canonical grid is valid (so the API need not validate it again,
// OnGrid); off the grid it may not be, and OnGrid says so.
func TestOnGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	grid := func(v float64) float64 { return math.Round(v*1e8) / 1e8 }
	star := func(cx, cy, r float64, n int) orb.Ring {
		ring := make(orb.Ring, 0, n+1)
		for i := 0; i < n; i++ {
			a := 2 * math.Pi * (float64(i) + 0.3*rng.Float64()) / float64(n)
			rad := r * (0.5 + 0.5*rng.Float64())
			q := orb.Point{grid(cx + rad*math.Cos(a)), grid(cy + rad*math.Sin(a))}
			ring = append(ring, q)
			if rng.IntN(8) == 0 {
				ring = append(ring, q) // a repeat, which Canonical drops
			}
		}
		ring = append(ring, ring[0])
		if rng.IntN(2) == 0 {
			return reverseRing(ring)
		}
		return ring
	}
	for iter := 0; iter < 500; iter++ {
		cx, cy := 113+40*rng.Float64(), -44+35*rng.Float64()
		p := orb.Polygon{star(cx, cy, 0.01, 3+rng.IntN(40))}
		for h := 0; h < rng.IntN(4); h++ {
			a := 2 * math.Pi * float64(h) / 4
			p = append(p, star(cx+0.002*math.Cos(a), cy+0.002*math.Sin(a), 0.0008, 3+rng.IntN(8)))
		}
		var g orb.Geometry = p
		if rng.IntN(2) == 0 {
			g = orb.MultiPolygon{p, {star(cx+0.05, cy, 0.01, 3+rng.IntN(20))}}
		}
		if Validate(g, 0) != nil {
			continue // a star's repeat made a spike; not this test's concern
		}
		if !OnGrid(g) {
			t.Fatalf("iteration %d: grid coordinates not on the grid", iter)
		}
		if err := Validate(Canonical(g), 0); err != nil {
			t.Fatalf("iteration %d: canonical form of a valid on-grid geometry invalid: %v", iter, err)
		}
	}

	// Two squares 3e-9 degree apart: valid, but rounding makes them share
	// an edge.
	apart := orb.MultiPolygon{
		{{{150, -34}, {151, -34}, {151, -33}, {150, -33}, {150, -34}}},
		{{{151.000000003, -34}, {152, -34}, {152, -33}, {151.000000003, -33}, {151.000000003, -34}}},
	}
	if err := Validate(apart, 0); err != nil {
		t.Fatal(err)
	}
	if OnGrid(apart) {
		t.Error("151.000000003 reported on the grid")
	}
	if Validate(Canonical(apart), 0) == nil {
		t.Error("the squares' canonical form is valid: the off-grid case needs another example")
	}
	for _, c := range []struct {
		g    orb.Geometry
		want bool
	}{
		{orb.Point{151.12345678, -33.87654321}, true},
		{orb.Point{151.123456789, -33}, false},
		{orb.Point{math.Copysign(0, -1), 0}, true},
		{orb.Point{-180, 90}, true},
		{orb.LineString{{151, -33}, {151.1, -33.000000001}}, false},
	} {
		if got := OnGrid(c.g); got != c.want {
			t.Errorf("OnGrid(%v) = %v, want %v", c.g, got, c.want)
		}
	}
}
