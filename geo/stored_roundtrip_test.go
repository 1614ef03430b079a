package geo

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
)

// TestStoredRoundTrip: a site's geometry g is stored as
// json.Marshal(geojson.NewGeometry(g)), and DecodeStored of those bytes is
// g again, bit for bit: encoding/json writes a float64 in the shortest
// form that parses back to it, and the reader parses it correctly
// rounded. So a caller holding g (the API, handing the site it decoded to
// a precomputation) holds exactly what a reader of the stored JSON gets,
// and the engine's answer from either is the same.
func TestStoredRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	coord := func(lim float64) float64 {
		switch rng.IntN(6) {
		case 0:
			return math.Round((rng.Float64()*2-1)*lim*1e8) / 1e8 // canonical grid
		case 1:
			return (rng.Float64()*2 - 1) * 1e-7 * float64(rng.IntN(1000)) // tiny
		case 2:
			return float64(rng.IntN(int(2*lim)+1)) - lim // integers
		}
		return (rng.Float64()*2 - 1) * lim // full precision
	}
	pt := func() orb.Point { return orb.Point{coord(180), coord(90)} }
	ring := func() orb.Ring {
		r := orb.Ring{pt(), pt(), pt(), pt()}
		return append(r, r[0])
	}
	gen := []func() orb.Geometry{
		func() orb.Geometry { return pt() },
		func() orb.Geometry { return orb.MultiPoint{pt(), pt(), pt()} },
		func() orb.Geometry { return orb.LineString{pt(), pt(), pt()} },
		func() orb.Geometry { return orb.MultiLineString{{pt(), pt()}, {pt(), pt(), pt()}} },
		func() orb.Geometry { return orb.Polygon{ring(), ring()} },
		func() orb.Geometry { return orb.MultiPolygon{{ring()}, {ring(), ring()}} },
	}
	check := func(g orb.Geometry) {
		t.Helper()
		raw, err := json.Marshal(geojson.NewGeometry(g))
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeStored("site", raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if !sameBits(got, g) {
			t.Fatalf("stored %s decodes to %v, want %v", raw, got, g)
		}
	}
	for i := 0; i < 3000; i++ {
		check(gen[i%len(gen)]())
	}
	for _, v := range []float64{math.Copysign(0, -1), 1e-7, 1e-6, 5e-324, math.SmallestNonzeroFloat64 * 3, 179.99999999999997, -89.99999999999999, 0.1, 1.0 / 3} {
		check(orb.Point{v, -v})
	}
}

// sameBits reports whether a and b are the same geometry with bitwise
// equal coordinates (-0 differs from 0).
func sameBits(a, b orb.Geometry) bool {
	if a.GeoJSONType() != b.GeoJSONType() {
		return false
	}
	var pa, pb []orb.Point
	for p := range Points(a) {
		pa = append(pa, p)
	}
	for p := range Points(b) {
		pb = append(pb, p)
	}
	if len(pa) != len(pb) || !orb.Equal(a, b) {
		return false
	}
	for i := range pa {
		for k := range 2 {
			if math.Float64bits(pa[i][k]) != math.Float64bits(pb[i][k]) {
				return false
			}
		}
	}
	return true
}
