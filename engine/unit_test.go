package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/paulmach/orb/geojson"

	"siteenv/geo"
	"siteenv/tiles"
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
		orb.MultiPoint{{-0.0, 1}, {0, -0.0}, {-0.0, 1}},
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

// TestTilePropsLen: measuring a feature's properties from the tile's
// columns gives the encoded length of the map Properties returns, for every
// column type, nulls, escapes, number forms, dates and date-times.
func TestTilePropsLen(t *testing.T) {
	t.Parallel()
	schema, err := tiles.ParseFieldSchema(map[string]any{
		"s":      map[string]any{"type": []any{"string", "null"}},
		"i":      map[string]any{"type": []any{"integer", "null"}},
		"f":      map[string]any{"type": []any{"number", "null"}},
		"b":      map[string]any{"type": []any{"boolean", "null"}},
		"d":      map[string]any{"type": []any{"string", "null"}, "format": "date"},
		"dt":     map[string]any{"type": []any{"string", "null"}, "format": "date-time"},
		"quoted": map[string]any{"type": "string"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	strs := []string{"", "plain", "quote\" back\\slash", "ctl\x01\x1f\n\t", "<html>&amp;", "é中文😀", "line\u2028sep"}
	floats := []float64{0, 1, -1.5, 1e-7, 1.5e-9, 1e21, 123456789.123, 1e20, 0.1 + 0.2}
	pick := func(v any) any {
		if rng.IntN(4) == 0 {
			return nil
		}
		return v
	}
	feats := make([]tiles.Feature, 500)
	for k := range feats {
		feats[k] = tiles.Feature{ID: fmt.Sprint("f", k), Geometry: orb.Point{150 + rng.Float64(), -33 - rng.Float64()}, Properties: map[string]any{
			"s":      pick(strs[rng.IntN(len(strs))]),
			"i":      pick(rng.Int64() - rng.Int64()),
			"f":      pick(floats[rng.IntN(len(floats))] * (rng.Float64() + 0.5)),
			"b":      pick(rng.IntN(2) == 0),
			"d":      pick(fmt.Sprintf("20%02d-%02d-%02d", rng.IntN(30), 1+rng.IntN(12), 1+rng.IntN(28))),
			"dt":     pick(fmt.Sprintf("2024-05-06T07:08:%02d.%dZ", rng.IntN(60), rng.IntN(1000000))),
			"quoted": strs[rng.IntN(len(strs))],
		}}
	}
	var buf bytes.Buffer
	if _, err := tiles.WriteTile(&buf, schema, feats, tiles.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	tile, err := tiles.ReadTile(context.Background(), bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var z sizer
	for i := 0; i < tile.Len(); i++ {
		props := tile.Properties(i)
		enc, err := json.Marshal(props)
		if err != nil {
			t.Fatal(err)
		}
		encoded := len(enc)
		if bytes.Contains(enc, []byte(`\u003c`)) || bytes.Contains(enc, []byte(`\u0026`)) || bytes.Contains(enc, []byte(`\u003e`)) {
			encoded = z.mapLen(props) // json.Marshal escapes HTML; the service does not (TestEncodedSize covers that)
		}
		if got := z.tilePropsLen(tile, i); got != z.mapLen(props) || got != encoded {
			t.Fatalf("row %d: tilePropsLen %d, mapLen %d, encoded %d: %s", i, got, z.mapLen(props), encoded, enc)
		}
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

// geodesicBox is the box of f's positions widened by its edges' bulges,
// as buildShard computed it before wkbIndexBox.
func geodesicBox(f *flat) orb.Bound {
	b := f.box
	scale := boundScale(b)
	var m float64
	for _, e := range f.elems {
		if e.kind == elemPoint {
			continue
		}
		for i := e.start; i+1 < e.end; i++ {
			m = math.Max(m, bulgeWith(f.pts[i], f.pts[i+1], scale))
		}
	}
	return padDeg(b, m)
}

// flatIndexBox is the index box as buildShard computed it before
// wkbIndexBox: decode into a flat, then geodesicBox.
func flatIndexBox(w []byte) (box32, error) {
	if p, ok := wkbPointXY(w); ok {
		return box32{down(p[0]), down(p[1]), up(p[0]), up(p[1])}, nil
	}
	var f flat
	if err := f.decodeWKB(w); err != nil {
		return box32{}, err
	}
	if len(f.pts) == 0 {
		inf := float32(math.Inf(1))
		return box32{inf, inf, -inf, -inf}, nil
	}
	return toBox32(geodesicBox(&f)), nil
}

// sameBox32 compares boxes by value: the scan may keep +0 where flat
// decoding keeps -0, which no comparison of boxes tells apart.
func sameBox32(a, b box32) bool { return a == b }

// checkIndexBox fails when wkbIndexBox and flatIndexBox disagree on w.
func checkIndexBox(t *testing.T, name string, w []byte) {
	t.Helper()
	got, gotErr := wkbIndexBox(w)
	want, wantErr := flatIndexBox(w)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%s: err %v, flat decoding says %v", name, gotErr, wantErr)
	}
	if gotErr == nil && !sameBox32(got, want) {
		t.Fatalf("%s: box %+v, want %+v", name, got, want)
	}
}

// wkbVariant re-encodes 2D WKB geometry g with z and m ordinates in the
// ISO (1000s) or EWKB (flag) form, with an SRID for EWKB.
func wkbVariant(g orb.Geometry, order binary.ByteOrder, hasZ, hasM, ewkb bool) []byte {
	var out []byte
	ao := order.(binary.AppendByteOrder)
	u32 := func(v uint32) { out = ao.AppendUint32(out, v) }
	f64 := func(v float64) { out = ao.AppendUint64(out, math.Float64bits(v)) }
	header := func(typ uint32) {
		if order == binary.ByteOrder(binary.LittleEndian) {
			out = append(out, 1)
		} else {
			out = append(out, 0)
		}
		if ewkb {
			if hasZ {
				typ |= 0x80000000
			}
			if hasM {
				typ |= 0x40000000
			}
			u32(typ | 0x20000000)
			u32(4326)
			return
		}
		switch {
		case hasZ && hasM:
			typ += 3000
		case hasZ:
			typ += 1000
		case hasM:
			typ += 2000
		}
		u32(typ)
	}
	pts := func(ps []orb.Point) {
		u32(uint32(len(ps)))
		for _, p := range ps {
			f64(p[0])
			f64(p[1])
			if hasZ {
				f64(7)
			}
			if hasM {
				f64(-3)
			}
		}
	}
	var enc func(g orb.Geometry)
	enc = func(g orb.Geometry) {
		switch g := g.(type) {
		case orb.Point:
			header(wkbPoint)
			f64(g[0])
			f64(g[1])
			if hasZ {
				f64(1)
			}
			if hasM {
				f64(2)
			}
		case orb.MultiPoint:
			header(wkbMultiPoint)
			u32(uint32(len(g)))
			for _, p := range g {
				enc(p)
			}
		case orb.LineString:
			header(wkbLineString)
			pts(g)
		case orb.MultiLineString:
			header(wkbMultiLineString)
			u32(uint32(len(g)))
			for _, l := range g {
				enc(l)
			}
		case orb.Polygon:
			header(wkbPolygon)
			u32(uint32(len(g)))
			for _, r := range g {
				pts(r)
			}
		case orb.MultiPolygon:
			header(wkbMultiPolygon)
			u32(uint32(len(g)))
			for _, p := range g {
				enc(p)
			}
		case orb.Collection:
			header(wkbGeometryCollection)
			u32(uint32(len(g)))
			for _, h := range g {
				enc(h)
			}
		}
	}
	enc(g)
	return out
}

// TestWKBIndexBox checks buildShard's box scan against decoding into a
// flat: same boxes and the same WKB refused.
func TestWKBIndexBox(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	poly := orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}, {{0.2, 0.1}, {0.8, 0.1}, {0.8, 0.7}, {0.2, 0.1}}}
	geoms := []orb.Geometry{
		orb.Point{151, -33},
		orb.Point{-0.0, 0},
		orb.MultiPoint{{1, 2}, {3, 4}},
		orb.MultiPoint{{1, 2}, {nan, nan}, {3, 4}}, // an empty point among others
		orb.MultiPoint{{nan, nan}},                 // nothing but an empty point
		orb.MultiPoint{},
		orb.LineString{{1, 2}, {3, 4}, {5, 6}},
		orb.LineString{{1, 2}},
		orb.LineString{},
		orb.LineString{{150, 2}, {150, 4}},          // a meridian
		orb.LineString{{5, 1.7e308}, {5, -1.7e308}}, // a meridian spanning more than MaxFloat64
		orb.LineString{{100, -80}, {160, -80}, {160, -85}},
		orb.LineString{{-0.0, 1}, {0, 1}},
		orb.MultiLineString{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}},
		poly,
		orb.Polygon{{{140, -60}, {150, -60}, {150, -70}}},          // unclosed ring
		orb.Polygon{{{140, -60}, {150, -60}}},                      // two positions
		orb.Polygon{{{140, -60}}},                                  // one position
		orb.Polygon{{}, {{140, -60}, {150, -60}, {150, -61}}},      // an empty ring first
		orb.Polygon{{{1, 1}, {2, 1}, {2, 2}, {1, 1}}, {}},          // an empty hole
		orb.Polygon{{{1e300, 1}, {-1e300, 1}, {0, 2}, {1e300, 1}}}, // overflowing bulge
		orb.Polygon{},
		orb.MultiPolygon{poly, {{{5, 5}, {6, 5}, {6, 6}, {5, 5}}}},
		orb.Collection{orb.Point{1, 1}, orb.LineString{{0, 0}, {1, 1}}, poly},
		orb.Collection{orb.Collection{orb.MultiPoint{{1, 2}}}, orb.Point{nan, nan}},
		orb.Collection{},
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 200 {
		var ring orb.Ring
		x, y := -180+rng.Float64()*360, -89+rng.Float64()*178
		for range 3 + rng.IntN(60) {
			ring = append(ring, orb.Point{x + rng.NormFloat64()*5, y + rng.NormFloat64()*2})
		}
		if rng.IntN(2) == 0 {
			ring = append(ring, ring[0])
		}
		geoms = append(geoms, orb.Polygon{ring}, orb.LineString(ring), orb.MultiPoint(ring))
	}
	for gi, g := range geoms {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			for v := range 7 {
				var w []byte
				if v == 0 {
					w = wkbVariant(g, order, false, false, false)
				} else {
					w = wkbVariant(g, order, v&1 != 0, v&2 != 0, v&4 != 0)
				}
				name := fmt.Sprintf("geometry %d (%T) %v variant %d", gi, g, order, v)
				checkIndexBox(t, name, w)
				for _, cut := range []int{1, 5, 9, len(w) / 2, len(w) - 1} {
					if cut > 0 && cut < len(w) {
						checkIndexBox(t, name+" truncated", w[:cut])
					}
				}
				checkIndexBox(t, name+" trailing byte", append(slices.Clip(w), 0))
				bad := slices.Clone(w)
				bad[0] = 2
				checkIndexBox(t, name+" bad byte order", bad)
			}
		}
	}
	// Non-finite ordinates anywhere are refused.
	for _, bad := range []float64{nan, math.Inf(1), math.Inf(-1)} {
		for i := range 8 {
			r := orb.Ring{{1, 2}, {3, 4}, {5, 6}, {1, 2}}
			r[i/2][i%2] = bad
			for _, g := range []orb.Geometry{orb.LineString(r), orb.Polygon{r}, orb.Point(r[i/2])} {
				w := wkbVariant(g, binary.LittleEndian, false, false, false)
				checkIndexBox(t, fmt.Sprintf("%T with %v at %d", g, bad, i), w)
				if _, err := wkbIndexBox(w); err == nil {
					t.Errorf("%T with %v at ordinate %d accepted", g, bad, i)
				}
			}
		}
	}
	// Hostile input: huge counts, deep nesting, unknown types.
	deep := []byte{}
	for range wkbMaxDepth + 2 {
		deep = append(deep, 1, 7, 0, 0, 0, 1, 0, 0, 0)
	}
	for name, w := range map[string][]byte{
		"huge count":   {1, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f},
		"huge rings":   {1, 3, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f},
		"huge parts":   {1, 6, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f},
		"deep nesting": deep,
		"type 8":       {1, 8, 0, 0, 0, 0, 0, 0, 0},
		"type 4001":    {1, 0xa1, 0x0f, 0, 0, 0, 0, 0, 0},
		"empty":        {},
	} {
		if _, err := wkbIndexBox(w); err == nil {
			t.Errorf("%s accepted", name)
		}
		checkIndexBox(t, name, w)
	}
}

func FuzzWKBIndexBox(f *testing.F) {
	f.Add(wkb.MustMarshal(orb.Point{1, 2}))
	f.Add(wkb.MustMarshal(orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}))
	f.Add(wkb.MustMarshal(orb.Collection{orb.Point{1, 1}, orb.MultiPoint{{1, 2}}}))
	f.Add(wkbVariant(orb.MultiLineString{{{1, 2}, {3, 4}}}, binary.BigEndian, true, true, true))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkIndexBox(t, "fuzz", b)
	})
}

// TestBuildShardRejectsMalformedWKB checks that one bad geometry fails the
// whole shard, naming the first bad feature, however the scan is split.
func TestBuildShardRejectsMalformedWKB(t *testing.T) {
	t.Parallel()
	const n = 3 * buildShardSplit
	for _, bad := range [][]int{{0}, {n / 2}, {n - 1}, {n / 3, n - 2}, {n - 2, 5}} {
		tile := &tiles.Tile{IDs: make([]string, n), WKB: make([][]byte, n)}
		for i := range n {
			tile.IDs[i] = fmt.Sprintf("f%d", i)
			var g orb.Geometry = orb.Point{150 + float64(i)*1e-4, -33}
			if i%2 == 1 {
				g = orb.LineString{{150, -33}, {150 + float64(i)*1e-4, -34}}
			}
			tile.WKB[i] = wkb.MustMarshal(g)
		}
		for _, i := range bad {
			tile.WKB[i] = slices.Clone(tile.WKB[i])
			tile.WKB[i][0] = 9 // no such byte order
		}
		_, err := buildShard(tile, "t")
		if !errors.Is(err, tiles.ErrInvalidTile) {
			t.Fatalf("bad rows %v: err = %v, want ErrInvalidTile", bad, err)
		}
		if first := fmt.Sprintf("%q", tile.IDs[slices.Min(bad)]); !strings.Contains(err.Error(), first) {
			t.Errorf("bad rows %v: err %v does not name feature %s", bad, err, first)
		}
	}
}

// TestBuildShardBoxes checks the index boxes of a large tile (scanned on
// several goroutines) against flat decoding, row by row.
func TestBuildShardBoxes(t *testing.T) {
	t.Parallel()
	const n = 3*buildShardSplit + 17
	rng := rand.New(rand.NewPCG(3, 9))
	tile := &tiles.Tile{IDs: make([]string, n), WKB: make([][]byte, n)}
	for i := range n {
		x, y := 140+rng.Float64()*10, -40+rng.Float64()*10
		var g orb.Geometry
		switch i % 4 {
		case 0:
			g = orb.Point{x, y}
		case 1:
			g = orb.MultiPoint{{x, y}, {x + 1, y}}
		case 2:
			g = orb.LineString{{x, y}, {x + rng.Float64(), y + rng.Float64()}}
		default:
			g = orb.Polygon{{{x, y}, {x + 2, y}, {x + 2, y + 1}, {x, y}}}
		}
		tile.IDs[i] = fmt.Sprint(i)
		tile.WKB[i] = wkb.MustMarshal(g)
	}
	wkbs := slices.Clone(tile.WKB) // buildShard moves them to the shard
	s, err := buildShard(tile, "t")
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range wkbs {
		want, err := flatIndexBox(w)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBox32(s.ix.boxes[i], want) {
			t.Fatalf("row %d: box %+v, want %+v", i, s.ix.boxes[i], want)
		}
	}
}

// TestLoadShardMalformedWKB checks that a stored tile with malformed
// geometries fails to load with ErrInvalidTile naming the first of them,
// though row groups are scanned concurrently and in any order.
func TestLoadShardMalformedWKB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	feats := make([]tiles.Feature, 200)
	for i := range feats {
		feats[i] = feat(fmt.Sprintf("f%03d", i), orb.LineString{{150, -33}, {150.1 + float64(i)*1e-3, -33.1}})
	}
	var buf bytes.Buffer
	info, err := tiles.WriteTile(&buf, testSchema(t), feats, tiles.WriterOptions{Compression: tiles.CompressionUncompressed, GeometryCompression: tiles.CompressionUncompressed, RowGroupRows: 16})
	if err != nil {
		t.Fatal(err)
	}
	clean := buf.Bytes()
	ct, err := tiles.ReadTile(ctx, bytes.NewReader(clean), int64(len(clean)))
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]int{} // tiles are in Hilbert order, not as written
	for i, id := range ct.IDs {
		row[id] = i
	}
	store := newStore(t)
	for _, bad := range [][]int{{17}, {170, 40}, {0, 199}} {
		data := slices.Clone(clean)
		// Uncompressed, the WKB is in the file as written: break byte orders.
		for _, i := range bad {
			at := bytes.Index(data, wkb.MustMarshal(feats[i].Geometry))
			if at < 0 {
				t.Fatalf("WKB of %d not found in the tile", i)
			}
			data[at] = 9
		}
		key := fmt.Sprintf("bad%d.parquet", bad[0])
		if err := store.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		_, err = loadShard(ctx, store, tiles.NewTileEntry(key, info))
		firstRow := ct.Len()
		for _, i := range bad {
			firstRow = min(firstRow, row[feats[i].ID])
		}
		first := fmt.Sprintf("%q", ct.IDs[firstRow])
		if !errors.Is(err, tiles.ErrInvalidTile) || !strings.Contains(err.Error(), first) {
			t.Fatalf("bad rows %v: err = %v, want ErrInvalidTile naming %s", bad, err, first)
		}
	}
	// The clean tile loads, with the boxes buildShard computes.
	if err := store.Put(ctx, "good.parquet", bytes.NewReader(clean), int64(len(clean))); err != nil {
		t.Fatal(err)
	}
	s, err := loadShard(ctx, store, tiles.NewTileEntry("good.parquet", info))
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.tile.Len() {
		var scratch []byte
		w, err := s.geoms.wkb(int32(i), &scratch)
		if err != nil {
			t.Fatal(err)
		}
		want, err := flatIndexBox(w)
		if err != nil || !sameBox32(s.ix.boxes[i], want) {
			t.Fatalf("row %d: box %+v, want %+v (%v)", i, s.ix.boxes[i], want, err)
		}
	}
	if s.tile.Bounds != nil {
		t.Error("the shard keeps the float64 bounds")
	}
}

// TestCoverageCutEdges: the engine's prepared coverage (edges cut into
// pieces of coverPiece) classifies search areas as the uncut polygon does,
// for sites near edges hundreds of kilometres long.
func TestCoverageCutEdges(t *testing.T) {
	t.Parallel()
	// A triangle with edges of ~300-450 km around Sydney.
	cover := orb.Polygon{{{149, -35.5}, {152.2, -34.8}, {150.6, -32.0}, {149, -35.5}}}
	uncut, cut := newCover(cover, 0), newCover(cover, coverPiece)
	if len(cut.pieces) < 100*len(uncut.pieces) {
		t.Fatalf("%d pieces from %d edges", len(cut.pieces), len(uncut.pieces))
	}
	rng := rand.New(rand.NewPCG(4, 4))
	seen := map[Coverage]int{}
	for i := 0; i < 400; i++ {
		// A point on an edge (along its geodesic), moved up to 8 km.
		e := rng.IntN(3)
		a, b := cover[0][e], cover[0][e+1]
		on := geodesicPoints(nil, a, b, 1000)[rng.IntN(999)]
		c := newMetric(on).at((rng.Float64()*2-1)*8000, (rng.Float64()*2-1)*8000)
		moved := randomSite(newMetric(c), rng, i%3)
		r := rng.Float64() * 10000
		ev := newEvaluator(prepareSite(moved, geo.NewLocal), r)
		want := ev.coverage(uncut)
		ev = newEvaluator(prepareSite(moved, geo.NewLocal), r)
		if got := ev.coverage(cut); got != want {
			t.Errorf("case %d (radius %.1f m): cut %s, uncut %s", i, r, got, want)
		}
		seen[want]++
	}
	if seen[CoveragePartial] < 50 || seen[CoverageComplete] < 50 || seen[CoverageNone] < 50 {
		t.Errorf("outcomes not mixed: %v", seen)
	}
}

// TestChordFits: the square-root-free test agrees with sagitta(a, b) <=
// chordTolerance for edges of every length and direction at every distance
// from the projection's centre, those whose sagitta lies within a part in
// 10^9 of the tolerance aside (rounding may put them either side; both
// answers measure the edge within the tolerance).
func TestChordFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	decided := 0
	for range 200_000 {
		// Centres out to 15 km, edges from a millimetre to 20 km.
		r, th := 15_000*rng.Float64(), 2*math.Pi*rng.Float64()
		a := orb.Point{r * math.Cos(th), r * math.Sin(th)}
		l, ph := math.Pow(10, -3+7.3*rng.Float64()), 2*math.Pi*rng.Float64()
		b := orb.Point{a[0] + l*math.Cos(ph), a[1] + l*math.Sin(ph)}
		sag := sagitta(a, b)
		if math.Abs(sag-chordTolerance) <= 1e-9*chordTolerance {
			continue
		}
		decided++
		if got, want := chordFits(a, b), sag <= chordTolerance; got != want {
			t.Fatalf("a %v b %v: chordFits %v, sagitta %g", a, b, got, sag)
		}
	}
	if decided < 190_000 {
		t.Fatalf("only %d edges decided", decided)
	}
	if !chordFits(orb.Point{5, 5}, orb.Point{5, 5}) || chordFits(orb.Point{10_000, 0}, orb.Point{10_000, 20_000}) {
		t.Fatal("a point must fit, a 20 km edge 10 km out must not")
	}
}

// TestNearSegSkipsOnlyFartherSegments: a part of fewer than treeMin
// segments skips a segment by its box only when nothing on it can beat the
// best distance so far, so nearSeg finds exactly the minimum over every
// segment, the pair with it, for random rings and query segments near and
// far, crossing and not.
func TestNearSegSkipsOnlyFartherSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	pt := func() orb.Point { return orb.Point{2000 * (rng.Float64() - 0.5), 2000 * (rng.Float64() - 0.5)} }
	for range 20_000 {
		p := &part{}
		n := 3 + rng.IntN(treeMin-4)
		ring := make([]orb.Point, n)
		for i := range ring {
			ring[i] = pt()
		}
		for i := range ring {
			p.segs = append(p.segs, [2]orb.Point{ring[i], ring[(i+1)%n]})
		}
		p.finish()
		if p.tree != nil {
			t.Fatal("a small part has a tree")
		}
		a := orb.Point{pt()[0] * rng.Float64() * 5, pt()[1] * rng.Float64() * 5}
		b := orb.Point{a[0] + 300*(rng.Float64()-0.5), a[1] + 300*(rng.Float64()-0.5)}
		limit := 10_000 * rng.Float64()
		got := near{d: limit}
		p.nearSeg(a, b, &got)
		want := near{d: limit}
		for _, s := range p.segs {
			pp, qq, d := segSeg(s[0], s[1], a, b)
			want.offer(pp, qq, d)
			if d == 0 {
				break
			}
		}
		if got != want {
			t.Fatalf("ring %v, segment %v %v: got %+v, want %+v", ring, a, b, got, want)
		}
	}
}

// TestDegMetricBoundsGeodesics: degMetric's distance in degrees never
// exceeds the geodesic distance, at any latitude, for points inside its
// band; and at Australia's latitudes it stays within 0.5% of it, so that it
// prunes.
func TestDegMetricBoundsGeodesics(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, lat := range []float64{-84, -60, -34, -12, -0.04, 0, 0.07, 23, 51, 72} {
		sb := orb.Bound{Min: orb.Point{150.9, lat - 0.09}, Max: orb.Point{151.1, lat + 0.09}}
		dm := newDegMetric(sb)
		if dm.kx <= 0 || dm.ky <= 0 {
			t.Fatalf("lat %v: no bound", lat)
		}
		inner := orb.Bound{Min: orb.Point{150.8, dm.lo + degMetricInner}, Max: orb.Point{151.2, dm.hi - degMetricInner}}
		if !dm.holds(inner) {
			t.Fatalf("lat %v: the inner band is not held", lat)
		}
		worst := 1.0
		for range 2000 {
			p := orb.Point{inner.Min[0] + rng.Float64()*(inner.Max[0]-inner.Min[0]), inner.Min[1] + rng.Float64()*(inner.Max[1]-inner.Min[1])}
			q := orb.Point{p[0] + (rng.Float64()*2-1)*0.2, p[1] + (rng.Float64()*2-1)*0.1}
			q[1] = math.Max(inner.Min[1], math.Min(inner.Max[1], q[1]))
			if rng.IntN(4) == 0 { // east-west pairs: the geodesic bows poleward
				q[1] = p[1]
			}
			g := geo.Distance(p, q)
			dx, dy := (p[0]-q[0])*dm.kx, (p[1]-q[1])*dm.ky
			l := math.Hypot(dx, dy)
			if l > g {
				t.Fatalf("lat %v: bound %.9f m over the geodesic %.9f m for %v %v", lat, l, g, p, q)
			}
			if g > 1000 {
				worst = math.Min(worst, l/g)
			}
		}
		if math.Abs(lat) <= 45 && worst < 0.995 {
			t.Errorf("lat %v: bound as low as %.4f of the distance", lat, worst)
		}
	}
	if dm := newDegMetric(orb.Bound{Min: orb.Point{0, 88.9}, Max: orb.Point{1, 89}}); dm.holds(orb.Bound{Min: orb.Point{0, 88.95}, Max: orb.Point{0, 88.95}}) {
		t.Error("a band reaching latitude 89 holds")
	}
}

// TestLowerBoundPruningChangesNothing: the same sites, radii and features
// with and without degMetric's pruning of feature edges give the same
// members and distances, and the bound does skip edges.
func TestLowerBoundPruningChangesNothing(t *testing.T) {
	t.Parallel()
	m := newMetric(sydney)
	rng := rand.New(rand.NewPCG(17, 1))
	var feats []*flat
	for _, g := range exactnessData("syd", sydney, 17) {
		for _, f := range g {
			fl := &flat{}
			if err := fl.decodeWKB(mustWKB(t, f.Geometry)); err != nil {
				t.Fatal(err)
			}
			feats = append(feats, fl)
		}
	}
	skips, members := 0, 0
	for i := range 40 {
		s := prepareSite(randomSite(m, rng, i%4), geo.NewLocal)
		r := math.Pow(10, 4*rng.Float64())
		with, without := newEvaluator(s, r), newEvaluator(s, r)
		without.noLower = true
		for j, f := range feats {
			in1, d1 := with.feature(f)
			in2, d2 := without.feature(f)
			if in1 != in2 || math.Abs(d1-d2) > 1e-9 {
				t.Fatalf("site %d (r %.1f), feature %d: %v %.9f m with the bound, %v %.9f m without", i, r, j, in1, d1, in2, d2)
			}
			if in1 {
				members++
			}
		}
		skips += with.lowerSkips
		if without.lowerSkips != 0 {
			t.Fatal("edges skipped with the bound off")
		}
	}
	if skips == 0 || members == 0 {
		t.Fatalf("%d edges skipped by the bound, %d members compared", skips, members)
	}
	t.Logf("%d edges skipped by the bound, %d members", skips, members)
}

func mustWKB(t *testing.T, g orb.Geometry) []byte {
	t.Helper()
	b, err := wkb.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
