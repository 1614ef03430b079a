package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"siteenv/ingest/synth"
	"siteenv/tiles"
)

func round7(v float64) float64 { return math.Round(v*1e7) / 1e7 }

// TestPackWKBRoundTrip: every geometry that packs expands to its WKB bit
// for bit, and one that cannot be held exactly is stored as WKB.
func TestPackWKBRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 1))
	pt := func(exact bool) orb.Point {
		x, y := 110+45*rng.Float64(), -44+34*rng.Float64()
		if exact {
			x, y = round7(x), round7(y)
		}
		return orb.Point{x, y}
	}
	ring := func(exact bool, n int) orb.Ring {
		r := make(orb.Ring, n)
		for i := range r[:n-1] {
			r[i] = pt(exact)
		}
		r[n-1] = r[0]
		return r
	}
	line := func(exact bool, n int) orb.LineString {
		l := make(orb.LineString, n)
		for i := range l {
			l[i] = pt(exact)
		}
		return l
	}
	geoms := func(exact bool) []orb.Geometry {
		return []orb.Geometry{
			line(exact, 2), line(exact, 40),
			orb.Polygon{ring(exact, 5)}, orb.Polygon{ring(exact, 30), ring(exact, 4)},
			orb.MultiPoint{pt(exact), pt(exact)},
			orb.MultiLineString{line(exact, 3), line(exact, 9)},
			orb.MultiPolygon{{ring(exact, 4)}, {ring(exact, 6), ring(exact, 4)}},
			orb.Collection{pt(exact), line(exact, 3), orb.Polygon{ring(exact, 4)}},
			orb.LineString{}, orb.Polygon{},
		}
	}
	var scratch []byte
	check := func(g orb.Geometry, wantPacked bool) {
		t.Helper()
		w := wkb.MustMarshal(g)
		p, ok := packWKB(nil, w)
		if ok != wantPacked {
			t.Fatalf("%T of %d bytes: packed %v, want %v", g, len(w), ok, wantPacked)
		}
		if !ok {
			if len(p) != 0 {
				t.Fatalf("%T: a refused pack wrote %d bytes", g, len(p))
			}
			return
		}
		if p[0] != packedMarker || len(p) > len(w) {
			t.Fatalf("%T: packed to %d bytes (marker %d) from %d", g, len(p), p[0], len(w))
		}
		back, err := expandWKB(p, &scratch)
		if err != nil {
			t.Fatalf("%T: %v", g, err)
		}
		if !bytes.Equal(back, w) {
			t.Fatalf("%T: expanded WKB differs from the original", g)
		}
	}
	for range 50 {
		for _, g := range geoms(true) {
			check(g, true)
		}
		for _, g := range geoms(false)[:8] { // the last two are empty: nothing to refuse
			check(g, false)
		}
	}
	// Points are never packed; nor are negative zero, out-of-range values
	// or big-endian WKB.
	check(pt(true), false)
	check(orb.LineString{{round7(151.2), 0}, {math.Copysign(0, -1), -33}}, false)
	check(orb.LineString{{215, -33}, {151, -33}}, false)
	check(orb.LineString{{-214.7483648, -33}, {151, -33}}, true) // MinInt32 x 1e-7
	be := wkb.MustMarshal(line(true, 3), wkb.DefaultByteOrder)
	be[0] = 0 // claims big-endian: never packed
	if _, ok := packWKB(nil, be); ok {
		t.Fatal("big-endian WKB packed")
	}
	// Truncated packed bytes fail with errWKB, never panic.
	p, _ := packWKB(nil, wkb.MustMarshal(orb.Polygon{ring(true, 8)}))
	for n := 1; n < len(p); n++ {
		if _, err := expandWKB(p[:n], &scratch); !errors.Is(err, errWKB) {
			t.Fatalf("truncated to %d of %d bytes: err %v", n, len(p), err)
		}
	}
}

// TestGeomStore: a store of mixed rows gives back each row's WKB, and
// packed rows are read by queries as their WKB reads.
func TestGeomStore(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 2))
	var wkbs [][]byte
	for i := range 3*packSplit + 17 {
		x, y := round7(150+rng.Float64()), round7(-34+rng.Float64())
		var g orb.Geometry
		switch i % 4 {
		case 0:
			g = orb.Point{x, y}
		case 1:
			g = orb.LineString{{x, y}, {round7(x + 0.001), y}, {x, round7(y + 0.002)}}
		case 2:
			g = orb.Polygon{{{x, y}, {x + 0.00123456789, y}, {x, y + 0.00123456789}, {x, y}}} // not exact
		default:
			g = orb.Polygon{{{x, y}, {round7(x + 0.001), y}, {x, round7(y + 0.001)}, {x, y}}}
		}
		wkbs = append(wkbs, wkb.MustMarshal(g))
	}
	g, wkbBytes := newGeomStore(wkbs)
	var total int64
	for _, w := range wkbs {
		total += int64(len(w))
	}
	if wkbBytes != total || g.bytes() >= total {
		t.Fatalf("store %d bytes for %d of WKB (reported %d)", g.bytes(), total, wkbBytes)
	}
	var scratch []byte
	for i, w := range wkbs {
		got, err := g.wkb(int32(i), &scratch)
		if err != nil || !bytes.Equal(got, w) {
			t.Fatalf("row %d: %v, WKB differs: %v", i, err, !bytes.Equal(got, w))
		}
		if raw := g.raw(int32(i)); (raw[0] == packedMarker) != (i%4 == 1 || i%4 == 3) {
			t.Fatalf("row %d (kind %d): packed %v", i, i%4, raw[0] == packedMarker)
		}
	}
}

// TestShardBytesPerVertex counts what a shard holds for the synthetic line
// and polygon layers: at most 16 bytes a vertex, everything counted (ids,
// geometries, index, the tile's metadata). Counting bytes is
// deterministic: the bound holds or the layout changed. Byte counts on one
// goroutine: it runs without the race detector only.
func TestShardBytesPerVertex(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	g, err := synth.New(1, synth.Small)
	if err != nil {
		t.Fatal(err)
	}
	const perLayer = 5_000
	done := map[string]bool{}
	for _, def := range g.Layers() {
		if done["line"] && done["polygon"] {
			break
		}
		var feats []tiles.Feature
		var vertices int
		kind := ""
		err := g.Features(def.LayerID, func(f tiles.Feature) error {
			if len(feats) == perLayer {
				return errStop
			}
			switch f.Geometry.(type) {
			case orb.LineString, orb.MultiLineString:
				kind = "line"
			case orb.Polygon, orb.MultiPolygon:
				kind = "polygon"
			default:
				return errStop
			}
			vertices += countVertices(f.Geometry)
			f.Properties = map[string]any{"kind": def.LayerID, "n": int64(len(feats))}
			feats = append(feats, f)
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			t.Fatal(err)
		}
		if kind == "" || done[kind] {
			continue
		}
		done[kind] = true
		st := newStore(t)
		m := publish(t, st, def.LayerID, [][]tiles.Feature{feats}, nil)
		s, err := loadShard(t.Context(), st, m.Tiles[0])
		if err != nil {
			t.Fatal(err)
		}
		perVertex := float64(s.bytes) / float64(vertices)
		t.Logf("%s layer %s: %d features, %d vertices, %.1f B/feature, %.2f B/vertex", kind, def.LayerID,
			len(feats), vertices, float64(s.bytes)/float64(len(feats)), perVertex)
		if perVertex > 16 {
			t.Errorf("%s layer %s: %.2f bytes a vertex resident, want at most 16", kind, def.LayerID, perVertex)
		}
	}
	if !done["line"] || !done["polygon"] {
		t.Fatalf("layers found: %v", done)
	}
}

var errStop = fmt.Errorf("stop")

func countVertices(g orb.Geometry) int {
	switch g := g.(type) {
	case orb.Point:
		return 1
	case orb.LineString:
		return len(g)
	case orb.Ring:
		return len(g)
	case orb.Polygon:
		n := 0
		for _, r := range g {
			n += len(r)
		}
		return n
	case orb.MultiLineString:
		n := 0
		for _, l := range g {
			n += len(l)
		}
		return n
	case orb.MultiPolygon:
		n := 0
		for _, p := range g {
			n += countVertices(p)
		}
		return n
	}
	return 0
}

// benchRing is a closed 40-vertex ring of positions at 1e-7 degrees near
// Sydney (they pack), drawn from seed.
func benchRing(seed uint64) orb.Ring {
	rng := rand.New(rand.NewPCG(30, seed))
	ring := make(orb.Ring, 40)
	for i := range ring[:39] {
		ring[i] = orb.Point{round7(151 + 0.01*rng.Float64()), round7(-33.9 + 0.01*rng.Float64())}
	}
	ring[39] = ring[0]
	return ring
}

// BenchmarkPackedDecode is what packing adds to a query's candidate: the
// expansion of a packed 40-vertex ring before the flat decode, against
// the decode of the WKB alone.
func BenchmarkPackedDecode(b *testing.B) {
	w := wkb.MustMarshal(orb.Polygon{benchRing(4)})
	p, ok := packWKB(nil, w)
	if !ok {
		b.Fatal("not packed")
	}
	var fg flat
	var scratch []byte
	b.Run("wkb", func(b *testing.B) {
		for b.Loop() {
			if err := fg.decodeWKB(w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("packed", func(b *testing.B) {
		for b.Loop() {
			x, err := expandWKB(p, &scratch)
			if err != nil {
				b.Fatal(err)
			}
			if err := fg.decodeWKB(x); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPackWKB is the packing of a 40-vertex ring on a shard's load.
func BenchmarkPackWKB(b *testing.B) {
	ring := benchRing(5)
	w := wkb.MustMarshal(orb.MultiPolygon{{ring}, {ring}})
	b.ReportAllocs()
	dst := make([]byte, 0, len(w))
	for b.Loop() {
		if _, ok := packWKB(dst[:0], w); !ok {
			b.Fatal("not packed")
		}
	}
}

// BenchmarkShardGeometry is a matched feature's geometry as a query that
// includes geometry reads it: its row expanded and decoded to orb values.
func BenchmarkShardGeometry(b *testing.B) {
	ring := benchRing(6)
	rows := [][]byte{wkb.MustMarshal(orb.MultiPolygon{{ring}, {ring}})}
	g, _ := newGeomStore(rows)
	s := &shard{tile: &tiles.Tile{IDs: []string{"f"}}, geoms: g}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.geometry(0); err != nil {
			b.Fatal(err)
		}
	}
}
