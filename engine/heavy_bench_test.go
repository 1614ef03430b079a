package engine

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"siteenv/ingest/synth"
	"siteenv/store"
	"siteenv/tiles"
)

// Benchmarks over the heavy-polygon layers (synth.HeavyFeatures: river
// corridors of 1,000-60,000 vertices, star patches of 2,000-60,000 and
// three of 250,000) and their site mix (synth.HeavySites), built once per
// test binary:
//
//	go test -run '^$' -bench Heavy -benchtime 300x ./engine/

const (
	heavySeed     = 29
	heavySites    = 300
	heavyTileRows = 32
)

type heavyData struct {
	dir    string
	store  *store.FileStore
	layers map[string]*tiles.Manifest
	sites  []synth.HeavySite
	err    error
}

var (
	heavyOnce sync.Once
	heavy     heavyData
)

func heavySetup(tb testing.TB) *heavyData {
	tb.Helper()
	heavyOnce.Do(func() {
		var st *store.FileStore
		if heavy.dir, st, heavy.err = tempFileStore("siteenv-engine-heavy-"); heavy.err != nil {
			return
		}
		heavy.store = st
		heavy.layers = map[string]*tiles.Manifest{}
		for _, id := range synth.HeavyLayers {
			var feats []tiles.Feature
			if err := synth.HeavyFeatures(heavySeed, id, func(f tiles.Feature) error {
				f.Properties = map[string]any{"kind": f.Properties["category"], "n": f.Properties["vertices"]}
				feats = append(feats, f)
				return nil
			}); err != nil {
				heavy.err = err
				return
			}
			heavy.layers[id] = publish(tb, st, id, heavyTiles(feats), nil)
		}
		heavy.sites, heavy.err = synth.HeavySites(heavySeed, heavySites)
	})
	if heavy.err != nil {
		tb.Fatal(heavy.err)
	}
	return &heavy
}

// heavyTiles cuts features into tiles of heavyTileRows, by longitude then
// latitude of their boxes' centres, as benchTiles.
func heavyTiles(feats []tiles.Feature) [][]tiles.Feature {
	c := func(f tiles.Feature) orb.Point { return f.Geometry.Bound().Center() }
	slices.SortFunc(feats, func(a, b tiles.Feature) int { return cmp.Compare(c(a)[0], c(b)[0]) })
	var out [][]tiles.Feature
	for i := 0; i < len(feats); i += heavyTileRows {
		s := feats[i:min(i+heavyTileRows, len(feats))]
		slices.SortFunc(s, func(a, b tiles.Feature) int { return cmp.Compare(c(a)[1], c(b)[1]) })
		out = append(out, s)
	}
	return out
}

func (d *heavyData) requests(site synth.HeavySite) []LayerRequest {
	var out []LayerRequest
	for _, id := range site.Layers {
		out = append(out, layerReq(d.layers[id]))
	}
	return out
}

// heavyEngine returns an engine with every heavy shard loaded.
// With plain, no feature gets an edge index (the path before them).
func heavyEngine(tb testing.TB, d *heavyData, opt Options, plain bool) *Engine {
	e := newEngine(tb, d.store, opt)
	if plain {
		e.edgeMin = 0
	}
	for _, m := range d.layers {
		if err := e.Preload(context.Background(), m.LayerID, m.ReleaseID); err != nil {
			tb.Fatal(err)
		}
	}
	return e
}

// BenchmarkHeavyQuery runs the heavy site mix (one query per iteration,
// sites in turn) on warm shards and reports the per-query p50 and p99 of
// the timed iterations.
func BenchmarkHeavyQuery(b *testing.B) {
	b.Run("index", func(b *testing.B) { benchHeavyQuery(b, false, Options{}) })
	b.Run("plain", func(b *testing.B) { benchHeavyQuery(b, true, Options{}) })
	// A memory budget of a quarter of the layers' resident bytes: shards
	// evict and reload (decode and index again) as the sites move.
	b.Run("budget-56MiB", func(b *testing.B) { benchHeavyQuery(b, false, Options{MemoryBudget: 56 << 20}) })
}

func benchHeavyQuery(b *testing.B, plain bool, opt Options) {
	d := heavySetup(b)
	e := heavyEngine(b, d, opt, plain)
	ctx := context.Background()
	for _, s := range d.sites[:20] {
		if _, err := e.Query(ctx, Request{Site: s.Geometry, RadiusM: s.RadiusM, Layers: d.requests(s)}); err != nil {
			b.Fatal(err)
		}
	}
	took := make([]time.Duration, 0, b.N)
	matches := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := d.sites[i%len(d.sites)]
		t0 := time.Now()
		res, err := e.Query(ctx, Request{Site: s.Geometry, RadiusM: s.RadiusM, Layers: d.requests(s)})
		took = append(took, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		for _, lr := range res {
			if lr.Count != nil {
				matches += *lr.Count
			}
		}
	}
	b.StopTimer()
	slices.Sort(took)
	q := func(p float64) float64 {
		return float64(took[min(len(took)-1, int(math.Ceil(p*float64(len(took))))-1)].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(matches)/float64(b.N), "matches/query")
	st := e.Stats()
	b.ReportMetric(float64(st.ResidentBytes)/(1<<20), "resident-MiB")
	b.ReportMetric(float64(st.Loads)/float64(b.N), "loads/query")
}

// heavyMissSite returns a point inside the box of the largest patch but
// clear of the patch (a corner of its box, 2% inside), and the patch.
func heavyMissSite(tb testing.TB, d *heavyData) (orb.Point, orb.Bound) {
	var box orb.Bound
	found := false
	if err := synth.HeavyFeatures(heavySeed, synth.HeavyBushfireLayer, func(f tiles.Feature) error {
		if !found {
			box, found = f.Geometry.Bound(), true // the first is a giant
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	w, h := box.Max[0]-box.Min[0], box.Max[1]-box.Min[1]
	return orb.Point{box.Min[0] + 0.02*w, box.Min[1] + 0.02*h}, box
}

// BenchmarkHeavyMiss is a query whose search area (10 m about a point) lies
// inside the box of a 250,000-vertex patch but clear of the patch: what a
// candidate costs when it is not an answer.
func BenchmarkHeavyMiss(b *testing.B) {
	b.Run("index", func(b *testing.B) { benchHeavyMiss(b, false) })
	b.Run("plain", func(b *testing.B) { benchHeavyMiss(b, true) })
}

func benchHeavyMiss(b *testing.B, plain bool) {
	d := heavySetup(b)
	e := heavyEngine(b, d, Options{}, plain)
	p, _ := heavyMissSite(b, d)
	req := Request{Site: p, RadiusM: 10, Layers: []LayerRequest{layerReq(d.layers[synth.HeavyBushfireLayer])}}
	ctx := context.Background()
	res, err := e.Query(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if *res[0].Count != 0 {
		b.Fatalf("the miss site matches %d features", *res[0].Count)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Query(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeavyShardLoad loads the heavy tile holding the 250,000-vertex
// patches, with and without edge indexes: the cost of a reload after an
// eviction, and the resident bytes per vertex.
func BenchmarkHeavyShardLoad(b *testing.B) {
	d := heavySetup(b)
	m := d.layers[synth.HeavyBushfireLayer]
	giant, _ := heavyMissSite(b, d)
	var te tiles.TileEntry
	for _, t := range m.Tiles {
		bb := t.BBox
		if (orb.Bound{Min: orb.Point{bb[0], bb[1]}, Max: orb.Point{bb[2], bb[3]}}).Contains(giant) {
			te = t
		}
	}
	for _, c := range []struct {
		name string
		min  int
	}{{"index", edgeIndexMinVertices}, {"plain", 0}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			var s *shard
			for i := 0; i < b.N; i++ {
				var err error
				if s, err = loadShardMin(ctx, d.store, te, c.min); err != nil {
					b.Fatal(err)
				}
			}
			vertices := 0
			for i := range s.tile.Len() {
				var scratch []byte
				w, err := s.geoms.wkb(int32(i), &scratch)
				if err != nil {
					b.Fatal(err)
				}
				vertices += (len(w) - 13) / 16
			}
			b.ReportMetric(float64(vertices)*float64(b.N)/b.Elapsed().Seconds(), "vertices/s")
			b.ReportMetric(float64(s.bytes)/float64(vertices), "resident-B/vertex")
		})
	}
}
