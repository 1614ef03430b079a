package geo

import (
	"math"
	"testing"

	"github.com/paulmach/orb"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		name string
		a, b orb.Point
		want float64
		tol  float64
	}{
		// a * pi / 180 on the WGS 84 / GRS80 equator.
		{"1 degree along the equator", orb.Point{0, 0}, orb.Point{1, 0}, 111319.490793, 1e-6},
		{"same point", orb.Point{151.2, -33.8}, orb.Point{151.2, -33.8}, 0, 0},
		// GeographicLib: GeodSolve -i <<< "33.4911 -112.4223 32.1189 -113.1123"
		{"Arizona", orb.Point{-112.4223, 33.4911}, orb.Point{-113.1123, 32.1189}, 165330.214571, 1e-6},
		// GeographicLib test suite, GeodSolve78 (the NGS calculator fails on it).
		{"nearly antipodal", orb.Point{0, 27.2}, orb.Point{179.5, -27.1}, 19974354.765767, 0.5e-6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Distance(tt.a, tt.b); math.Abs(got-tt.want) > tt.tol {
				t.Errorf("Distance = %.6f, want %.6f", got, tt.want)
			}
			if got := Distance(tt.b, tt.a); math.Abs(got-tt.want) > tt.tol {
				t.Errorf("reversed Distance = %.6f, want %.6f", got, tt.want)
			}
		})
	}
}

// TestAreaGeographicLib uses the expected values of GeographicLib's own
// test suite (Planimeter0; lat, lon there, lon, lat here).
func TestAreaGeographicLib(t *testing.T) {
	ring := func(latlon ...[2]float64) orb.Polygon {
		r := orb.Ring{}
		for _, p := range latlon {
			r = append(r, orb.Point{p[1], p[0]})
		}
		return orb.Polygon{r}
	}
	tests := []struct {
		name string
		g    orb.Geometry
		want float64
	}{
		{"north polar square", ring([2]float64{89, 0}, [2]float64{89, 90}, [2]float64{89, 180}, [2]float64{89, -90}), 24952305678.0},
		{"south polar square, clockwise", ring([2]float64{-89, 0}, [2]float64{-89, 90}, [2]float64{-89, 180}, [2]float64{-89, -90}), 24952305678.0},
		{"diamond on the equator", ring([2]float64{0, -1}, [2]float64{-1, 0}, [2]float64{0, 1}, [2]float64{1, 0}), 24619419146.0},
		{"octant", ring([2]float64{90, 0}, [2]float64{0, 0}, [2]float64{0, 90}), 63758202715511.0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Area(tt.g); math.Abs(got-tt.want) > 1 {
				t.Errorf("Area = %.1f, want %.1f", got, tt.want)
			}
		})
	}
}

// latLonBoxArea integrates the area of the region between two parallels
// and two meridians on the ellipsoid: dA = M N cos(phi) dphi dlambda,
// M N = a^2 (1-e^2) / (1 - e^2 sin^2 phi)^2, by composite Simpson's rule.
func latLonBoxArea(lat1, lat2, lon1, lon2 float64) float64 {
	a, f := ellipsoid.Radius(), ellipsoid.Flattening()
	e2 := f * (2 - f)
	g := func(phi float64) float64 {
		s := math.Sin(phi)
		w := 1 - e2*s*s
		return a * a * (1 - e2) * math.Cos(phi) / (w * w)
	}
	const n = 2000
	p1, p2 := lat1*deg, lat2*deg
	h := (p2 - p1) / n
	sum := g(p1) + g(p2)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * g(p1+float64(i)*h)
	}
	return sum * h / 3 * (lon2 - lon1) * deg
}

// TestAreaSmallSquare compares Area with an independent numerical
// integration for a 200 m x 200 m square in Sydney. The geodesic east-west
// edges bow about 0.5 mm poleward of the parallels bounding the integrated
// box, both the same way, so the two areas agree far better than the
// 0.01% asked.
func TestAreaSmallSquare(t *testing.T) {
	lat0, lon0 := -33.8523, 151.2108
	dlat := 100 / 110922.0 // ~100 m of latitude
	dlon := 100 / 92420.0  // ~100 m of longitude at -33.85
	lat1, lat2 := lat0-dlat, lat0+dlat
	lon1, lon2 := lon0-dlon, lon0+dlon
	sq := orb.Polygon{{{lon1, lat1}, {lon2, lat1}, {lon2, lat2}, {lon1, lat2}, {lon1, lat1}}}
	got := Area(sq)
	want := latLonBoxArea(lat1, lat2, lon1, lon2)
	rel := math.Abs(got-want) / want
	t.Logf("200 m square: Area %.4f m2, integrated %.4f m2, relative difference %.2g", got, want, rel)
	if rel > 1e-4 || math.Abs(got-40000) > 200 {
		t.Errorf("Area = %.4f, integrated %.4f", got, want)
	}
}

func TestArea(t *testing.T) {
	// ~100 m squares near Sydney.
	sq := func(lon, lat, d float64) orb.Ring {
		return orb.Ring{{lon, lat}, {lon + d, lat}, {lon + d, lat + d}, {lon, lat + d}, {lon, lat}}
	}
	rev := func(r orb.Ring) orb.Ring {
		out := make(orb.Ring, len(r))
		for i, p := range r {
			out[len(r)-1-i] = p
		}
		return out
	}
	outer := sq(151.2, -33.9, 0.002)
	hole := rev(sq(151.2005, -33.8995, 0.001))
	aOuter, aHole := Area(orb.Polygon{outer}), Area(orb.Polygon{hole})
	if aOuter < 30000 || aOuter > 60000 || math.Abs(aHole*4-aOuter) > 1 {
		t.Fatalf("outer %f, hole %f", aOuter, aHole)
	}
	unclosed := outer[:4]
	tests := []struct {
		name string
		g    orb.Geometry
		want float64
	}{
		{"nil", nil, 0},
		{"point", orb.Point{151, -33}, 0},
		{"multipoint", orb.MultiPoint{{151, -33}}, 0},
		{"linestring", orb.LineString{{151, -33}, {152, -34}}, 0},
		{"multilinestring", orb.MultiLineString{{{151, -33}, {152, -34}}}, 0},
		{"polygon", orb.Polygon{outer}, aOuter},
		{"clockwise polygon", orb.Polygon{rev(outer)}, aOuter},
		{"unclosed ring", orb.Polygon{unclosed}, aOuter},
		{"polygon with hole", orb.Polygon{outer, hole}, aOuter - aHole},
		{"hole with the same orientation", orb.Polygon{outer, rev(hole)}, aOuter - aHole},
		{"hole larger than shell", orb.Polygon{hole, outer}, 0},
		{"multipolygon", orb.MultiPolygon{{outer, hole}, {sq(152, -33, 0.002)}}, aOuter - aHole + Area(orb.Polygon{sq(152, -33, 0.002)})},
		{"ring", outer, aOuter},
		{"bound", orb.Bound{Min: orb.Point{151.2, -33.9}, Max: orb.Point{151.202, -33.898}}, aOuter},
		{"collection", orb.Collection{orb.Polygon{outer}, orb.Point{1, 1}, orb.Polygon{outer}}, 2 * aOuter},
		{"empty polygon", orb.Polygon{}, 0},
		{"degenerate ring", orb.Polygon{{{151, -33}, {152, -33}, {151, -33}}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Area(tt.g); math.Abs(got-tt.want) > 1e-6 {
				t.Errorf("Area = %.6f, want %.6f", got, tt.want)
			}
		})
	}
}

func BenchmarkDistance(b *testing.B) {
	b.ReportAllocs()
	var s float64
	for i := 0; b.Loop(); i++ {
		s += Distance(orb.Point{151.2, -33.8}, orb.Point{151.21 + float64(i%100)*1e-4, -33.81})
	}
	_ = s
}

func BenchmarkArea1000(b *testing.B) {
	r := make(orb.Ring, 0, 1001)
	for i := 0; i < 1000; i++ {
		a := 2 * math.Pi * float64(i) / 1000
		r = append(r, orb.Point{151.2 + 0.005*math.Cos(a), -33.8 + 0.005*math.Sin(a)})
	}
	r = append(r, r[0])
	g := orb.Polygon{r}
	b.ReportAllocs()
	for b.Loop() {
		Area(g)
	}
}
