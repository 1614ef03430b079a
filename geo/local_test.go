package geo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
)

// around returns a point at distance s (metres) and azimuth azi (degrees)
// from c, exactly.
func around(c orb.Point, azi, s float64) orb.Point {
	var lat, lon float64
	ellipsoid.Direct(c[1], c[0], azi, s, &lat, &lon, nil)
	return orb.Point{lon, lat}
}

func randomAround(rng *rand.Rand, c orb.Point, maxDist float64) orb.Point {
	return around(c, 360*rng.Float64()-180, maxDist*math.Sqrt(rng.Float64()))
}

var testCentres = []orb.Point{
	{151.2108, -33.8523}, // Sydney
	{130.8456, -12.4634}, // Darwin
	{147.3272, -42.8821}, // Hobart
	{115.8605, -31.9505}, // Perth
	{153.6200, -28.6400}, // Byron Bay, near a zone edge
	{113.6600, -24.8800}, // Carnarvon
	{141.0000, -10.5000}, // Torres Strait
	{158.9400, -54.6300}, // Macquarie Island
}

func localCentres(rng *rand.Rand, n int) []orb.Point {
	cs := append([]orb.Point(nil), testCentres...)
	for len(cs) < n {
		cs = append(cs, orb.Point{113 + 41*rng.Float64(), -44 + 34*rng.Float64()})
	}
	return cs
}

// TestLocalAccuracy measures the planar distance error against the exact
// geodesic distance (Distance) on random pairs within 12 km of Australian
// centres.
func TestLocalAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	centres := localCentres(rng, 40)
	const pairs = 2000
	var maxFit, maxCentre, maxSite, maxAny, maxRatio float64
	for _, c := range centres {
		l := NewLocal(c)
		for i := 0; i < pairs; i++ {
			a := randomAround(rng, c, 700) // the site: up to ~1.4 km across
			b := randomAround(rng, c, 12000)
			pa, pb := l.ForwardPoint(a), l.ForwardPoint(b)
			// The fitted tables against the exact projection.
			ex, ey := l.exactForward(b)
			maxFit = math.Max(maxFit, math.Hypot(pb[0]-ex, pb[1]-ey))
			// Distances from the centre.
			maxCentre = math.Max(maxCentre, math.Abs(math.Hypot(pb[0], pb[1])-Distance(c, b)))
			// Site to surroundings.
			maxSite = math.Max(maxSite, math.Abs(planarDist(pa, pb)-Distance(a, b)))
			// Any two points within 12 km.
			b2 := randomAround(rng, c, 12000)
			pb2 := l.ForwardPoint(b2)
			err := math.Abs(planarDist(pb, pb2) - Distance(b, b2))
			maxAny = math.Max(maxAny, err)
			if bound := l.ErrorBound(pb, pb2); err > bound {
				t.Errorf("centre %v: error %.3g m above ErrorBound %.3g m", c, err, bound)
			} else {
				maxRatio = math.Max(maxRatio, err/bound)
			}
			if bound := l.ErrorBound(pa, pb); math.Abs(planarDist(pa, pb)-Distance(a, b)) > bound {
				t.Errorf("centre %v: site error above ErrorBound %.3g m", c, bound)
			}
		}
	}
	t.Logf("%d centres x %d pairs: fit vs exact projection %.3g m; from centre %.3g m; site (<=700 m) to <=12 km %.3g m; any two within 12 km %.3g m (max error/ErrorBound %.2f)",
		len(centres), pairs, maxFit, maxCentre, maxSite, maxAny, maxRatio)
	if maxFit > 1e-6 || maxCentre > 1e-6 || maxSite > 1e-3 {
		t.Errorf("accuracy: fit %.3g m, centre %.3g m, site %.3g m", maxFit, maxCentre, maxSite)
	}
}

func planarDist(p, q orb.Point) float64 { return math.Hypot(q[0]-p[0], q[1]-p[1]) }

func TestLocalInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	var worst float64
	for _, c := range localCentres(rng, 20) {
		l := NewLocal(c)
		for i := 0; i < 500; i++ {
			p := randomAround(rng, c, 20000) // partly beyond the fitted square
			x, y := l.Forward(p)
			q := l.Inverse(x, y)
			d := Distance(p, q)
			worst = math.Max(worst, d)
			if d > 1e-6 {
				t.Fatalf("centre %v: Inverse(Forward(%v)) = %v, %.3g m off", c, p, q, d)
			}
		}
		if got := l.Inverse(0, 0); Distance(got, c) > 1e-8 {
			t.Errorf("Inverse(0, 0) = %v, want %v", got, c)
		}
	}
	t.Logf("worst round trip %.3g m", worst)
}

func TestLocalExactPath(t *testing.T) {
	tests := []struct {
		name   string
		l      Local
		p      orb.Point
		expect float64 // distance from the centre
	}{
		{"zero Local", Local{}, orb.Point{1, 0}, 111319.490793},
		{"50 km away", NewLocal(orb.Point{151, -34}), around(orb.Point{151, -34}, 30, 50000), 50000},
		{"500 km away", NewLocal(orb.Point{151, -34}), around(orb.Point{151, -34}, -100, 500000), 500000},
		{"near the pole", NewLocal(orb.Point{0, -89.5}), around(orb.Point{0, -89.5}, 10, 5000), 5000},
		{"across the antimeridian", NewLocal(orb.Point{179.99, -16}), around(orb.Point{179.99, -16}, 90, 5000), 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, y := tt.l.Forward(tt.p)
			if d := math.Hypot(x, y); math.Abs(d-tt.expect) > 1e-6 {
				t.Errorf("distance from centre %.9f, want %.9f", d, tt.expect)
			}
			if q := tt.l.Inverse(x, y); Distance(q, tt.p) > 1e-6 {
				t.Errorf("Inverse = %v, want %v", q, tt.p)
			}
		})
	}
	// Directions: x east, y north.
	l := NewLocal(orb.Point{151, -34})
	if x, y := l.Forward(around(orb.Point{151, -34}, 90, 1000)); math.Abs(x-1000) > 1e-6 || math.Abs(y) > 1e-6 {
		t.Errorf("east: %v, %v", x, y)
	}
	if x, y := l.Forward(around(orb.Point{151, -34}, 0, 1000)); math.Abs(x) > 1e-6 || math.Abs(y-1000) > 1e-6 {
		t.Errorf("north: %v, %v", x, y)
	}
	if l.Center() != (orb.Point{151, -34}) || l.Distance(orb.Point{0, 0}, orb.Point{1, 0}) != Distance(orb.Point{0, 0}, orb.Point{1, 0}) {
		t.Error("Center or Distance")
	}
}

func TestLocalConcurrentInverse(t *testing.T) {
	l := NewLocal(orb.Point{151.2, -33.8})
	done := make(chan orb.Point, 8)
	for i := 0; i < 8; i++ {
		go func() { done <- l.Inverse(1000, 2000) }()
	}
	first := <-done
	for i := 1; i < 8; i++ {
		if p := <-done; p != first {
			t.Errorf("concurrent Inverse: %v vs %v", p, first)
		}
	}
}

func BenchmarkLocalForward(b *testing.B) {
	c := orb.Point{151.2108, -33.8523}
	l := NewLocal(c)
	pts := make([]orb.Point, 1024)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range pts {
		pts[i] = randomAround(rng, c, 12000)
	}
	b.ReportAllocs()
	var s float64
	for i := 0; b.Loop(); i++ {
		x, y := l.Forward(pts[i&1023])
		s += x + y
	}
	_ = s
}

func BenchmarkLocalForwardExact(b *testing.B) {
	c := orb.Point{151.2108, -33.8523}
	l := NewLocal(c)
	p := around(c, 40, 50000)
	b.ReportAllocs()
	for b.Loop() {
		l.Forward(p)
	}
}

func BenchmarkLocalInverse(b *testing.B) {
	l := NewLocal(orb.Point{151.2108, -33.8523})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.Inverse(float64(i%10000), 5000)
	}
}

func BenchmarkNewLocal(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		NewLocal(orb.Point{151.2 + float64(i%100)*1e-3, -33.8})
	}
}

// TestLocalAt: a projection moved along its parallel with At agrees with one
// fitted there (the tables depend on the latitude alone), forward and
// inverse, including across the antimeridian.
func TestLocalAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for _, c := range localCentres(rng, 20) {
		base := NewLocal(orb.Point{0, c[1]})
		for _, lon := range []float64{c[0], 179.99, -179.99, 0} {
			moved, fitted := base.At(lon), NewLocal(orb.Point{lon, c[1]})
			if moved.Center() != fitted.Center() {
				t.Fatalf("centre %v, want %v", moved.Center(), fitted.Center())
			}
			for i := 0; i < 200; i++ {
				p := randomAround(rng, moved.Center(), 20000)
				mx, my := moved.Forward(p)
				fx, fy := fitted.Forward(p)
				if d := math.Hypot(mx-fx, my-fy); d > 1e-7 {
					t.Fatalf("centre %v: Forward(%v) differs by %.3g m", moved.Center(), p, d)
				}
				if d := Distance(moved.Inverse(mx, my), p); d > 1e-6 {
					t.Fatalf("centre %v: Inverse(Forward(%v)) %.3g m off", moved.Center(), p, d)
				}
			}
		}
	}
}

// TestFittedBound: a bound is fitted exactly when every point in it is:
// boxes around a centre, from wholly inside the fitted square to straddling
// its edges, agree with Fitted on their corners and on points within.
func TestFittedBound(t *testing.T) {
	l := NewLocal(orb.Point{151.0, -33.8})
	rng := rand.New(rand.NewPCG(1, 2))
	inside, outside := 0, 0
	for range 5000 {
		c := orb.Point{151.0 + 0.4*(rng.Float64()-0.5), -33.8 + 0.4*(rng.Float64()-0.5)}
		w, h := 0.1*rng.Float64(), 0.1*rng.Float64()
		b := orb.Bound{Min: orb.Point{c[0] - w, c[1] - h}, Max: orb.Point{c[0] + w, c[1] + h}}
		all := true
		for _, p := range []orb.Point{b.Min, b.Max, {b.Min[0], b.Max[1]}, {b.Max[0], b.Min[1]}, c} {
			all = all && l.Fitted(p)
		}
		if got := l.FittedBound(b); got != all {
			t.Fatalf("bound %v: FittedBound %v, its points %v", b, got, all)
		}
		if all {
			inside++
		} else {
			outside++
		}
	}
	if inside < 500 || outside < 500 {
		t.Fatalf("only %d fitted and %d unfitted bounds tried", inside, outside)
	}
}

// TestLocalPowersAgreeWithChebyshev: the power form Forward evaluates is
// the Chebyshev fit, to rounding, over the whole fitted square; and a
// wrong conversion would not pass (the fit's terms are metres to km).
func TestLocalPowersAgreeWithChebyshev(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	for _, c := range localCentres(rng, 20) {
		fit := NewLocal(c).t
		if fit == nil {
			continue
		}
		for i := 0; i < 500; i++ {
			u, v := 2*rng.Float64()-1, 2*rng.Float64()-1
			if i < 4 { // the corners
				u, v = float64(1-2*(i&1)), float64(1-2*(i>>1))
			}
			var tu, tv [localN]float64
			chebBasis(u, &tu)
			chebBasis(v, &tv)
			cx, cy := eval2(&fit.fx, &fit.fy, &tu, &tv)
			px, py := horner2(&fit.px, &fit.py, u, v)
			if d := math.Hypot(cx-px, cy-py); d > 1e-9 {
				t.Fatalf("centre %v at (%v, %v): the power form is %.3g m off the Chebyshev fit", c, u, v, d)
			}
		}
	}
}
