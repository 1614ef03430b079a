package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/paulmach/orb/geojson"
)

func TestIndexSearch(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 16, 17, 255, 256, 257, 5000} {
		boxes := make([]orb.Bound, n)
		leaves := make([]box32, n)
		for i := range boxes {
			x, y := 150+rng.Float64(), -34+rng.Float64()
			w, h := rng.Float64()*0.01, rng.Float64()*0.01
			if i%3 == 0 {
				w, h = 0, 0
			}
			boxes[i] = orb.Bound{Min: orb.Point{x, y}, Max: orb.Point{x + w, y + h}}
			leaves[i] = toBox32(boxes[i])
			if float64(leaves[i].minX) > x || float64(leaves[i].maxY) < y+h {
				t.Fatalf("box not rounded outwards")
			}
		}
		ix := newIndex(leaves)
		for q := 0; q < 200; q++ {
			x, y := 150+rng.Float64(), -34+rng.Float64()
			s := rng.Float64() * 0.1
			qb := orb.Bound{Min: orb.Point{x, y}, Max: orb.Point{x + s, y + s}}
			got := ix.search(toBox32(qb), nil)
			var want []int32
			for i, b := range boxes {
				if b.Intersects(qb) {
					want = append(want, int32(i))
				}
			}
			// The float32 boxes may add near misses, never lose a hit.
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Fatalf("n=%d: box %d missing", n, w)
				}
			}
			if len(got) > len(want)+2 {
				t.Fatalf("n=%d: %d hits, want %d", n, len(got), len(want))
			}
		}
	}
}

func TestDecodeWKB(t *testing.T) {
	t.Parallel()
	poly := orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}, {{0.2, 0.1}, {0.8, 0.1}, {0.8, 0.7}, {0.2, 0.1}}}
	geoms := []orb.Geometry{
		orb.Point{151, -33},
		orb.MultiPoint{{1, 2}, {3, 4}},
		orb.LineString{{1, 2}, {3, 4}, {5, 6}},
		orb.MultiLineString{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}},
		poly,
		orb.MultiPolygon{poly, {{{5, 5}, {6, 5}, {6, 6}, {5, 5}}}},
		orb.Collection{orb.Point{1, 1}, orb.LineString{{0, 0}, {1, 1}}, poly},
	}
	for _, g := range geoms {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			b, err := wkb.Marshal(g, order)
			if err != nil {
				t.Fatal(err)
			}
			var f flat
			if err := f.decodeWKB(b); err != nil {
				t.Fatalf("%T: %v", g, err)
			}
			var want flat
			want.setOrb(g)
			if !reflect2(f, want) {
				t.Errorf("%T %v:\n got %+v\nwant %+v", g, order, f, want)
			}
			if err := (&flat{}).decodeWKB(b[:len(b)-1]); err == nil {
				t.Errorf("%T: truncated WKB accepted", g)
			}
		}
	}
	// ISO Z: x and y kept.
	z := []byte{1, 0xe9, 0x03, 0, 0} // PointZ (1001)
	for _, v := range []float64{151, -33, 12} {
		z = binary.LittleEndian.AppendUint64(z, math.Float64bits(v))
	}
	var f flat
	if err := f.decodeWKB(z); err != nil || f.pts[0] != (orb.Point{151, -33}) {
		t.Errorf("PointZ: %v %v", err, f.pts)
	}
	if p, ok := wkbPointXY(wkb.MustMarshal(orb.Point{151, -33})); !ok || p != (orb.Point{151, -33}) {
		t.Errorf("fast point path: %v %v", p, ok)
	}
	// Non-finite ordinates in either order and position are refused.
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			for i := range 6 {
				ls := orb.LineString{{1, 2}, {3, 4}, {5, 6}}
				ls[i/2][i%2] = bad
				if err := f.decodeWKB(wkb.MustMarshal(ls, order)); err == nil {
					t.Errorf("%v at ordinate %d (%v) accepted", bad, i, order)
				}
			}
		}
	}
	// Hostile counts do not allocate or read out of bounds.
	huge := []byte{1, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f}
	if err := f.decodeWKB(huge); err == nil {
		t.Errorf("huge count accepted")
	}
}

func reflect2(a, b flat) bool {
	return slices.Equal(a.pts, b.pts) && slices.Equal(a.elems, b.elems) && slices.Equal(a.comps, b.comps) && a.polys == b.polys && a.box == b.box
}

func FuzzDecodeWKB(f *testing.F) {
	f.Add(wkb.MustMarshal(orb.Point{1, 2}))
	f.Add(wkb.MustMarshal(orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}))
	f.Add(wkb.MustMarshal(orb.Collection{orb.Point{1, 1}, orb.MultiPoint{{1, 2}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fl flat
		_ = fl.decodeWKB(b)
	})
}

func TestEncodedSize(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	strs := []string{"", "plain", "quote\" back\\slash", "ctl\x01\x1f\n\t\r\b\f", "<html>&amp;", "é中文😀",
		"bad\xff\xfeutf8", "line\u2028sep\u2029", "\x7f"}
	floats := []float64{0, -0.0, 1, -1.5, 1e-7, 1.5e-9, 1e21, 123456789.123, 1e20, 1e300, math.SmallestNonzeroFloat64, 0.1 + 0.2}
	var z sizer
	for i := 0; i < 2000; i++ {
		props := map[string]any{}
		for k := 0; k < rng.IntN(5); k++ {
			var v any
			switch rng.IntN(5) {
			case 0:
				v = strs[rng.IntN(len(strs))]
			case 1:
				v = rng.Int64() - rng.Int64()
			case 2:
				v = floats[rng.IntN(len(floats))] * (rng.Float64() + 0.5)
			case 3:
				v = rng.IntN(2) == 0
			}
			props[strs[rng.IntN(len(strs))]+string(rune('a'+k))] = v
		}
		var g orb.Geometry
		switch rng.IntN(4) {
		case 1:
			g = orb.Point{150 + rng.Float64(), -33 - rng.Float64()}
		case 2:
			g = orb.MultiPolygon{{{{1, 2}, {3.25, 4}, {1e-8, 2}, {1, 2}}}}
		case 3:
			g = orb.Collection{orb.LineString{{1, 2}, {3, 4}}, orb.MultiPoint{{0.5, 1e22}}}
		}
		id := strs[rng.IntN(len(strs))]
		d := floats[rng.IntN(len(floats))]
		want := encodeRecords(t, "layer<1>", []Feature{{ID: id, DistanceM: d, props: props, Geometry: g}})
		if got := z.record("layer<1>", id, d, props, g); got != int64(want) {
			b, _ := json.Marshal(props)
			t.Fatalf("size %d, encoded %d: %s %v", got, want, b, g)
		}
	}
	// orb's own GeoJSON for a geometry matches the geometry part.
	g := orb.Polygon{{{151.1, -33.2}, {151.3, -33.2}, {151.3, -33}, {151.1, -33.2}}}
	b, _ := json.Marshal(geojson.NewGeometry(g))
	if z.geometryLen(g) != len(bytes.TrimSpace(b)) {
		t.Errorf("geometry %d, encoded %d", z.geometryLen(g), len(b))
	}
}

func TestCoverageOfExact(t *testing.T) {
	t.Parallel()
	m := newMetric(sydney)
	// A concave cover: an L shape. A site in the notch has every vertex
	// outside but the cover's corner inside it.
	cover := orb.Polygon{{m.at(0, 0), m.at(2000, 0), m.at(2000, 1000), m.at(1000, 1000), m.at(1000, 2000), m.at(0, 2000), m.at(0, 0)}}
	cases := []struct {
		site orb.Geometry
		want Coverage
	}{
		{m.square(1200, 1200, 1800, 1800), CoverageNone},
		{m.square(900, 900, 1800, 1800), CoveragePartial},
		{m.square(100, 100, 900, 1900), CoverageComplete},
		{orb.LineString{m.at(1500, 500), m.at(500, 1400)}, CoverageComplete},
		{orb.LineString{m.at(1500, 500), m.at(500, 1500)}, CoveragePartial}, // touches the reflex corner
		{orb.LineString{m.at(1500, 500), m.at(1500, 1500)}, CoveragePartial},
		{orb.MultiPoint{m.at(500, 500), m.at(1500, 1500)}, CoveragePartial},
		{nil, CoverageNone},
	}
	for i, c := range cases {
		if got := CoverageOf(c.site, cover); got != c.want {
			t.Errorf("case %d: %s, want %s", i, got, c.want)
		}
	}
	if got := CoverageOf(m.at(0, 0), orb.Point{1, 1}); got != CoverageUnknown {
		t.Errorf("non-polygonal cover: %s", got)
	}
}
