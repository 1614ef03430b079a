package geo

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
)

// marshalled is the bytes AppendGeoJSON must write: encoding/json's.
func marshalled(g orb.Geometry) ([]byte, error) { return json.Marshal(geojson.NewGeometry(g)) }

// checkGeoJSON fails t unless AppendGeoJSON writes g as json.Marshal
// does, after a prefix it keeps, or fails as it does.
func checkGeoJSON(t *testing.T, g orb.Geometry) {
	t.Helper()
	want, wantErr := marshalled(g)
	prefix := []byte("prefix:")
	got, err := AppendGeoJSON(prefix, g)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("%#v: error %v, json.Marshal's %v", g, err, wantErr)
	case err != nil:
		if string(got) != string(prefix) {
			t.Fatalf("%#v: failed with %q appended", g, got[len(prefix):])
		}
	case !bytes.HasPrefix(got, prefix) || string(got[len(prefix):]) != string(want):
		t.Fatalf("%#v:\n got %s\nwant %s", g, got, want)
	}
}

// edgeFloats are values whose formatting has a rule of its own.
var edgeFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 180, -180, 90, -90, 151.2093, -33.8688, 0.1, 1.0 / 3,
	1e-6, -1e-6, math.Nextafter(1e-6, 0), math.Nextafter(1e-6, 1), 1e-7, 1.5e-7, 1e-8, 5e-9, 1e-10, 1.2345678e-9,
	1e-300, 5e-324, -5e-324, math.SmallestNonzeroFloat64, 2.2250738585072014e-308,
	1e7, math.Nextafter(1e7, 0), 9999999.99999999, 1e15, 123456789012345678, 1e20, math.Nextafter(1e21, 0), 1e21, -1e21, 1.5e22, 1e100, math.MaxFloat64, -math.MaxFloat64,
	0.00000123, 0.00001, 12345.6789, 151.00000001, 151.000000011, 151.12345678, 151.123456789, -0.00000001, 0.99999999, 0.999999999,
	179.99999999999997, 1 << 53, 1<<53 + 2, 4503599627370497.5,
}

func TestAppendGeoJSONEdgeCases(t *testing.T) {
	for _, v := range edgeFloats {
		for _, w := range edgeFloats {
			checkGeoJSON(t, orb.Point{v, w})
		}
	}
	p := func(v float64) orb.Point { return orb.Point{v, -v} }
	for _, g := range []orb.Geometry{
		nil,
		orb.MultiPoint{}, orb.MultiPoint(nil), orb.LineString{}, orb.LineString(nil),
		orb.MultiLineString{}, orb.MultiLineString(nil), orb.MultiLineString{nil, {}},
		orb.Polygon{}, orb.Polygon(nil), orb.Polygon{nil}, orb.Polygon{{}}, orb.Polygon{{}, nil, {p(1)}},
		orb.MultiPolygon{}, orb.MultiPolygon(nil), orb.MultiPolygon{nil}, orb.MultiPolygon{{}, {nil}, {{p(2)}}},
		orb.MultiPoint(edgeFloatPoints()), orb.LineString(edgeFloatPoints()),
		orb.MultiLineString{edgeFloatPoints(), {p(3), p(4)}},
		orb.Polygon{orb.Ring(edgeFloatPoints()), {p(0), p(1e-7)}},
		orb.MultiPolygon{{orb.Ring(edgeFloatPoints())}, {{p(1e21)}, {p(-1e-7)}}},
		// Not site geometry types: as json.Marshal writes them.
		orb.Ring{p(1), p(2), p(3), p(1)}, orb.Bound{Min: p(1), Max: p(2)}, orb.Collection{p(1), orb.LineString{p(2), p(3)}},
		// json.Marshal refuses non-finite values, and so does AppendGeoJSON.
		orb.Point{math.NaN(), 0}, orb.Point{0, math.Inf(1)}, orb.LineString{p(1), {math.Inf(-1), 0}},
		orb.Polygon{{p(1), p(2), p(3), p(1)}, {p(1), {2, math.NaN()}}}, orb.MultiPolygon{{{p(1)}}, {{{math.NaN(), 0}}}},
		orb.MultiLineString{{p(1)}, {{0, math.NaN()}}}, orb.MultiPoint{p(1), {math.Inf(1), 1}},
	} {
		checkGeoJSON(t, g)
	}
}

func edgeFloatPoints() []orb.Point {
	ps := make([]orb.Point, len(edgeFloats))
	for i, v := range edgeFloats {
		ps[i] = orb.Point{v, edgeFloats[len(edgeFloats)-1-i]}
	}
	return ps
}

// TestAppendGeoJSONRandom: canonical site geometries (every coordinate on
// the grid, the stored geometry of every drawn site) and geometries of
// arbitrary float64 coordinates are written as json.Marshal writes them.
func TestAppendGeoJSONRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	coord := func() float64 {
		switch rng.IntN(8) {
		case 0:
			return math.Float64frombits(rng.Uint64()) // anything, NaN included
		case 1:
			return (rng.Float64()*2 - 1) * math.Pow(10, float64(rng.IntN(50)-25))
		case 2:
			return float64(rng.IntN(2000) - 1000)
		case 3:
			return (rng.Float64()*2 - 1) * 1e-6 * float64(rng.IntN(20))
		case 4:
			return (rng.Float64()*2 - 1) * 180
		}
		return snap((rng.Float64()*2 - 1) * math.Pow(10, float64(rng.IntN(10)-3)))
	}
	pts := func() []orb.Point {
		ps := make([]orb.Point, rng.IntN(6))
		for i := range ps {
			ps[i] = orb.Point{coord(), coord()}
		}
		return ps
	}
	rings := func() orb.Polygon {
		p := make(orb.Polygon, rng.IntN(3))
		for i := range p {
			p[i] = pts()
		}
		return p
	}
	for i := 0; i < 20000; i++ {
		var g orb.Geometry
		switch i % 6 {
		case 0:
			g = orb.Point{coord(), coord()}
		case 1:
			g = orb.MultiPoint(pts())
		case 2:
			g = orb.LineString(pts())
		case 3:
			g = orb.MultiLineString{pts(), pts()}
		case 4:
			g = rings()
		case 5:
			g = orb.MultiPolygon{rings(), rings()}
		}
		checkGeoJSON(t, g)
	}
	// Canonical sites: polygons and multipolygons drawn at full precision.
	for i := 0; i < 300; i++ {
		c := orb.Point{-180 + 360*rng.Float64(), -90 + 180*rng.Float64()}
		ring := make(orb.Ring, 3+rng.IntN(200))
		r := math.Pow(10, -float64(rng.IntN(8)))
		for k := range len(ring) - 1 {
			a := 2 * math.Pi * float64(k) / float64(len(ring)-1)
			ring[k] = orb.Point{math.Max(-180, math.Min(180, c[0]+r*math.Cos(a))), math.Max(-90, math.Min(90, c[1]+r*math.Sin(a)))}
		}
		ring[len(ring)-1] = ring[0]
		checkGeoJSON(t, Canonical(orb.Polygon{ring}))
		checkGeoJSON(t, Canonical(orb.MultiPolygon{{ring}, {{{1, 1}, {1.5, 1}, {1, 1.5}, {1, 1}}}}))
	}
}

// FuzzAppendGeoJSON: for any coordinates, AppendGeoJSON writes what
// json.Marshal writes (or fails as it does) for each of the six types.
func FuzzAppendGeoJSON(f *testing.F) {
	for _, v := range edgeFloats {
		f.Add(byte(0), binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)), math.Float64bits(-v/3)))
	}
	f.Add(byte(5), []byte("0123456789abcdef0123456789abcdef0123456789abcdef"))
	f.Fuzz(func(t *testing.T, kind byte, data []byte) {
		var ps []orb.Point
		for len(data) >= 16 {
			ps = append(ps, orb.Point{math.Float64frombits(binary.LittleEndian.Uint64(data)), math.Float64frombits(binary.LittleEndian.Uint64(data[8:]))})
			data = data[16:]
		}
		half := len(ps) / 2
		var g orb.Geometry
		switch kind % 6 {
		case 0:
			if len(ps) == 0 {
				return
			}
			g = ps[0]
		case 1:
			g = orb.MultiPoint(ps)
		case 2:
			g = orb.LineString(ps)
		case 3:
			g = orb.MultiLineString{ps[:half], ps[half:]}
		case 4:
			g = orb.Polygon{ps[:half], ps[half:]}
		case 5:
			g = orb.MultiPolygon{{ps[:half]}, {ps[half:], ps}}
		}
		checkGeoJSON(t, g)
		// The same coordinates snapped to the grid (the fast path).
		for i := range ps {
			ps[i] = snapPoint(ps[i])
		}
		checkGeoJSON(t, g)
	})
}

// BenchmarkAppendGeoJSON: a canonical 10,000-position site, as the API
// stores a new one, against json.Marshal(geojson.NewGeometry(g)).
func BenchmarkAppendGeoJSON(b *testing.B) {
	ring := make(orb.Ring, 10000)
	for i := range len(ring) - 1 {
		a := 2 * math.Pi * float64(i) / float64(len(ring)-1)
		ring[i] = orb.Point{151.2 + 300*math.Cos(a)/(111_320*0.8309), -33.8 + 300*math.Sin(a)/111_320}
	}
	ring[len(ring)-1] = ring[0]
	for _, c := range []struct {
		name string
		g    orb.Geometry
	}{{"canonical", Canonical(orb.Polygon{ring})}, {"full-precision", orb.Polygon{ring}}} {
		want, _ := marshalled(c.g)
		b.Run(c.name+"/append", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(want)))
			var buf []byte
			for b.Loop() {
				buf, _ = AppendGeoJSON(buf[:0], c.g)
			}
		})
		b.Run(c.name+"/json.Marshal", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(want)))
			for b.Loop() {
				_, _ = marshalled(c.g)
			}
		})
	}
}
