package geo

import (
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"

	"github.com/paulmach/orb"
)

func rotateRing(r orb.Ring, k int) orb.Ring {
	open := r[:len(r)-1]
	k %= len(open)
	out := append(append(orb.Ring{}, open[k:]...), open[:k]...)
	return append(out, out[0])
}

func shift(g orb.Geometry, dx, dy float64) orb.Geometry {
	mv := func(ps []orb.Point) {
		for i := range ps {
			ps[i] = orb.Point{ps[i][0] + dx, ps[i][1] + dy}
		}
	}
	g = orb.Clone(g)
	switch g := g.(type) {
	case orb.Polygon:
		for _, r := range g {
			mv(r)
		}
	case orb.LineString:
		mv(g)
	}
	return g
}

var hexFingerprint = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestFingerprintSame(t *testing.T) {
	shell := orb.Ring{{151.2, -33.8}, {151.21, -33.8}, {151.21, -33.79}, {151.205, -33.785}, {151.2, -33.79}, {151.2, -33.8}}
	hole := orb.Ring{{151.203, -33.797}, {151.203, -33.795}, {151.205, -33.795}, {151.205, -33.797}, {151.203, -33.797}} // clockwise
	hole2 := orb.Ring{{151.206, -33.797}, {151.206, -33.795}, {151.208, -33.795}, {151.208, -33.797}, {151.206, -33.797}}
	base := orb.Polygon{shell, hole, hole2}
	other := orb.Polygon{sqr(151.3, -33.8, 0.01)}
	line := orb.LineString{{151.2, -33.8}, {151.3, -33.7}, {151.4, -33.8}}

	tests := []struct {
		name string
		a, b orb.Geometry
	}{
		{"identical", base, orb.Clone(base)},
		{"ring start vertex", base, orb.Polygon{rotateRing(shell, 2), rotateRing(hole, 3), hole2}},
		{"ring orientation", base, orb.Polygon{reverseRing(shell), reverseRing(hole), reverseRing(hole2)}},
		{"hole order", base, orb.Polygon{shell, hole2, hole}},
		{"noise below 1e-9 degree", base, shift(base, 4e-9, -4.9e-9)},
		{"float noise", base, shift(shift(base, 0.1, 0.2), -0.1, -0.2)},
		{"repeated positions", base, orb.Polygon{{shell[0], shell[0], shell[1], shell[2], shell[2], shell[3], shell[4], shell[5], shell[5]}, hole, hole2}},
		{"multipolygon order", orb.MultiPolygon{base, other}, orb.MultiPolygon{other, base}},
		{"multipolygon of one", orb.MultiPolygon{base}, base},
		{"multipoint order and repeats", orb.MultiPoint{{1, 2}, {0, 5}, {1, 2}}, orb.MultiPoint{{0, 5}, {1, 2}}},
		{"multipoint of one", orb.MultiPoint{{1, 2}}, orb.Point{1, 2}},
		{"negative zero", orb.Point{-0.0 * 1, 1}, orb.Point{math.Copysign(0, -1), 1}},
		{"point noise", orb.Point{151.2108, -33.8523}, orb.Point{151.2108 + 3e-9, -33.8523 - 3e-9}},
		{"linestring direction", line, orb.LineString{line[2], line[1], line[0]}},
		{"linestring repeats", line, orb.LineString{line[0], line[1], line[1], line[2]}},
		{"multilinestring of one", orb.MultiLineString{line}, line},
		{"multilinestring order", orb.MultiLineString{line, {{0, 0}, {1, 1}}}, orb.MultiLineString{{{1, 1}, {0, 0}}, line}},
		{"closed linestring start", orb.LineString(shell), orb.LineString(rotateRing(reverseRing(shell), 1))},
		{"ring as polygon", orb.Ring(shell), orb.Polygon{shell}},
		{"bound as polygon", orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}}, orb.Polygon{sqr(0, 0, 1)}},
		{"collection order", orb.Collection{base, orb.Point{1, 2}}, orb.Collection{orb.MultiPoint{{1, 2}}, base}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fa, fb := Fingerprint(tt.a), Fingerprint(tt.b)
			if !hexFingerprint.MatchString(fa) {
				t.Fatalf("fingerprint %q", fa)
			}
			if fa != fb {
				t.Errorf("fingerprints differ:\n%v\n%v", Canonical(tt.a), Canonical(tt.b))
			}
			if ca, cb := Canonical(tt.a), Canonical(tt.b); !orb.Equal(ca, cb) {
				t.Errorf("canonical forms differ:\n%v\n%v", ca, cb)
			}
		})
	}
}

func TestFingerprintDifferent(t *testing.T) {
	base := orb.Polygon{sqr(151.2, -33.8, 0.01)}
	moved := orb.Clone(base).(orb.Polygon)
	moved[0][2] = orb.Point{moved[0][2][0] + 2e-8, moved[0][2][1]} // ~2 mm
	withHole := orb.Polygon{base[0], sqr(151.202, -33.798, 0.001)}
	tests := []struct {
		name string
		a, b orb.Geometry
	}{
		{"vertex moved 2 mm", base, moved},
		{"hole added", base, withHole},
		{"polygon vs its ring as a line", base, orb.LineString(base[0])},
		{"polygon vs multipoint of its vertices", base, orb.MultiPoint(base[0][:4])},
		{"point vs point", orb.Point{1, 2}, orb.Point{2, 1}},
		{"point vs nil", orb.Point{0, 0}, nil},
		{"line vs longer line", orb.LineString{{0, 0}, {1, 1}}, orb.LineString{{0, 0}, {1, 1}, {2, 2}}},
		{"two polygons vs one", orb.MultiPolygon{base, {sqr(152, -33, 0.01)}}, base},
		{"different vertex order (not a rotation)", orb.Polygon{{{0, 0}, {2, 0}, {2, 2}, {1, 1}, {0, 2}, {0, 0}}}, orb.Polygon{{{0, 0}, {2, 0}, {1, 1}, {2, 2}, {0, 2}, {0, 0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if Fingerprint(tt.a) == Fingerprint(tt.b) {
				t.Errorf("same fingerprint for %v and %v", tt.a, tt.b)
			}
		})
	}
}

func TestCanonicalForm(t *testing.T) {
	shell := reverseRing(rotateRing(sqr(151.2, -33.8, 0.01), 2)) // clockwise, starting top right
	hole := rotateRing(sqr(151.202, -33.798, 0.001), 1)          // counter-clockwise
	in := orb.Polygon{shell, hole}
	before := orb.Clone(in)
	g := Canonical(in).(orb.Polygon)
	want := orb.Polygon{
		{{151.2, -33.8}, {151.21, -33.8}, {151.21, -33.79}, {151.2, -33.79}, {151.2, -33.8}},
		{{151.202, -33.798}, {151.202, -33.797}, {151.203, -33.797}, {151.203, -33.798}, {151.202, -33.798}},
	}
	if !orb.Equal(g, want) {
		t.Errorf("Canonical = %v\nwant %v", g, want)
	}
	if signedArea2(g[0]) <= 0 || signedArea2(g[1]) >= 0 {
		t.Errorf("orientation: exterior %v, hole %v", signedArea2(g[0]), signedArea2(g[1]))
	}
	// The input is not modified.
	if !orb.Equal(in, before) {
		t.Errorf("input modified: %v", in)
	}
	// Coordinates are on the 8-decimal grid.
	p := Canonical(orb.Point{151.123456789, -33.000000004}).(orb.Point)
	if p != (orb.Point{151.12345679, -33}) {
		t.Errorf("rounding: %v", p)
	}
	if Canonical(nil) != nil {
		t.Error("Canonical(nil) != nil")
	}
	if mp := Canonical(orb.MultiPolygon{}); !orb.Equal(mp, orb.MultiPolygon{}) {
		t.Errorf("empty multipolygon: %#v", mp)
	}
}

// TestFingerprintStable pins the encoding: fingerprints are stored, so a
// change here breaks every saved site and must come with a new version
// prefix.
func TestFingerprintStable(t *testing.T) {
	tests := []struct {
		g    orb.Geometry
		want string
	}{
		{orb.Point{151.2108, -33.8523}, "25bee1873ed34a898a1e79dbb9255d8e17a1c610dd8242d273288bf935836a1c"},
		{orb.Polygon{sqr(151.2, -33.8, 0.01)}, "7f52dd36b2bef6a462674eb6816efdd4603448dc1295b5a5e5933f856f5776d0"},
	}
	for _, tt := range tests {
		if got := Fingerprint(tt.g); got != tt.want {
			t.Errorf("Fingerprint(%v) = %s, want %s", tt.g, got, tt.want)
		}
	}
}

// TestFingerprintProperty writes random valid polygons in many equivalent
// ways (rotation, orientation, hole order, repeated positions, noise below
// 5e-9 degree on 8-decimal coordinates, MultiPolygon wrapping) and checks
// the fingerprint never changes.
func TestFingerprintProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	grid := func(v float64) float64 { return math.Round(v*1e8) / 1e8 }
	star := func(cx, cy, r float64, n int) orb.Ring {
		ring := make(orb.Ring, 0, n+1)
		for i := 0; i < n; i++ {
			a := 2 * math.Pi * (float64(i) + 0.3*rng.Float64()) / float64(n)
			rad := r * (0.5 + 0.5*rng.Float64())
			ring = append(ring, orb.Point{grid(cx + rad*math.Cos(a)), grid(cy + rad*math.Sin(a))})
		}
		return append(ring, ring[0])
	}
	variant := func(p orb.Polygon) orb.Geometry {
		out := make(orb.Polygon, len(p))
		for i, r := range p {
			r = rotateRing(r, rng.IntN(len(r)-1))
			if rng.IntN(2) == 0 {
				r = reverseRing(r)
			}
			var noisy orb.Ring
			for _, q := range r {
				q = orb.Point{q[0] + (rng.Float64()-0.5)*9.8e-9, q[1] + (rng.Float64()-0.5)*9.8e-9}
				noisy = append(noisy, q)
				if rng.IntN(10) == 0 {
					noisy = append(noisy, q)
				}
			}
			noisy[len(noisy)-1] = noisy[0]
			out[i] = noisy
		}
		rng.Shuffle(len(out)-1, func(i, j int) { out[i+1], out[j+1] = out[j+1], out[i+1] })
		if rng.IntN(2) == 0 {
			return orb.MultiPolygon{out}
		}
		return out
	}
	for iter := 0; iter < 300; iter++ {
		cx, cy := 113+40*rng.Float64(), -44+35*rng.Float64()
		p := orb.Polygon{star(cx, cy, 0.01, 3+rng.IntN(40))}
		for h := 0; h < rng.IntN(4); h++ {
			// Holes on a ring around the centre, small enough to fit.
			a := 2 * math.Pi * float64(h) / 4
			p = append(p, star(cx+0.002*math.Cos(a), cy+0.002*math.Sin(a), 0.0008, 3+rng.IntN(8)))
		}
		if err := Validate(p, 0); err != nil {
			t.Fatalf("generated invalid polygon: %v", err)
		}
		want := Fingerprint(p)
		for k := 0; k < 10; k++ {
			v := variant(p)
			if got := Fingerprint(v); got != want {
				t.Fatalf("iteration %d: variant %v\nof %v\nhas a different fingerprint", iter, v, p)
			}
		}
		c := Canonical(p)
		if !orb.Equal(Canonical(c), c) {
			t.Fatalf("not idempotent: %v", c)
		}
	}
}

func TestCanonicalMultiPointSorted(t *testing.T) {
	mp := Canonical(orb.MultiPoint{{3, 1}, {1, 2}, {1, 1}}).(orb.MultiPoint)
	if !slices.Equal(mp, orb.MultiPoint{{1, 1}, {1, 2}, {3, 1}}) {
		t.Errorf("MultiPoint = %v", mp)
	}
}

func BenchmarkFingerprint10k(b *testing.B) {
	g := comb(2490)
	b.ReportAllocs()
	for b.Loop() {
		Fingerprint(g)
	}
}
