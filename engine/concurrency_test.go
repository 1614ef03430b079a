package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/store"
	"siteenv/tiles"
)

// concurrencyFixture publishes two layers of many small tiles around
// Sydney and returns the store, the layer requests and a set of queries.
func concurrencyFixture(t testing.TB) (store.Store, []LayerRequest, []Request) {
	st := newStore(t)
	groups := exactnessData("syd", sydney, 42)
	// Cut each quadrant in four: 16 tiles.
	var small [][]tiles.Feature
	for _, g := range groups {
		for k := 0; k < 4; k++ {
			small = append(small, g[k*len(g)/4:(k+1)*len(g)/4])
		}
	}
	a := publish(t, st, "conc-a", small, nil)
	b := publish(t, st, "conc-b", groups[:2], nil)
	layers := []LayerRequest{layerReq(a), layerReq(b)}
	layers[1].IncludeGeometry = true
	m := newMetric(sydney)
	rng := rand.New(rand.NewPCG(9, 9))
	var reqs []Request
	for i := 0; i < 24; i++ {
		reqs = append(reqs, Request{
			Site:    randomSite(m, rng, i%4),
			RadiusM: math.Pow(10, 4*rng.Float64()),
			Layers:  layers,
		})
	}
	return st, layers, reqs
}

// TestConcurrentQueries runs many goroutines against an engine whose
// budget forces constant eviction (and some cancelled queries), each query
// scanning its tiles on several workers, and checks every answer against
// a sequential engine that keeps everything; with tiles shared among the
// workers a chunk at a time, too. A shard a shared tile left held (a
// cancelled query) would show as a shard kept over budget 1.
func TestConcurrentQueries(t *testing.T) {
	t.Parallel()
	store, _, reqs := concurrencyFixture(t)
	ctx := context.Background()
	big := newEngine(t, store, Options{Workers: 1})
	want := make([][]LayerResult, len(reqs))
	for i, req := range reqs {
		res, err := big.Query(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res
	}
	// chunk 2: every tile of more than 4 candidates is shared among the
	// workers (scan.go), 128 (the default): the larger tiles only. lazy:
	// the other workers start only when a tile is first shared; else every
	// query starts them at once.
	for _, c := range []struct {
		budget int64
		chunk  int
		lazy   bool
	}{{1, scanChunk, false}, {100 << 10, scanChunk, false}, {1, 2, false}, {100 << 10, 2, false}, {1, 2, true}, {100 << 10, 2, true}} {
		budget := c.budget
		t.Run(fmt.Sprintf("budget=%d/chunk=%d/lazy=%v", budget, c.chunk, c.lazy), func(t *testing.T) {
			small := newEngine(t, store, Options{MemoryBudget: budget, Workers: 4})
			small.parallelMin = 0 // every query scans on several workers
			if c.lazy {
				small.parallelMin = math.Inf(1)
			}
			small.scanChunk = c.chunk
			workers, rounds := 8, 3
			if raceEnabled {
				rounds = 1
			}
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					for r := 0; r < rounds; r++ {
						for _, i := range rng.Perm(len(reqs)) {
							qctx, cancel := context.WithCancel(ctx)
							if rng.IntN(6) == 0 {
								go cancel() // races with the query
							}
							got, err := small.Query(qctx, reqs[i])
							cancel()
							if err != nil {
								if !errors.Is(err, context.Canceled) {
									t.Errorf("query %d: %v", i, err)
								}
								continue
							}
							if !sameResults(got, want[i]) {
								t.Errorf("query %d differs from the large-budget engine", i)
							}
						}
					}
				}()
			}
			wg.Wait()
			s := small.Stats()
			if s.Evictions == 0 {
				t.Errorf("no evictions: %+v", s)
			}
			if budget == 1 && (s.Shards != 0 || s.ResidentBytes != 0) {
				t.Errorf("idle shards kept over budget: %+v", s)
			}
			if budget > 1 && s.ResidentBytes > budget {
				t.Errorf("resident %d over budget %d while idle", s.ResidentBytes, budget)
			}
			t.Logf("%+v", s)
		})
	}
}

// TestReleasesAreIndependent: publishing a new release of a layer changes
// nothing for queries on the old release id.
func TestReleasesAreIndependent(t *testing.T) {
	t.Parallel()
	m := newMetric(sydney)
	st := newStore(t)
	v1 := publish(t, st, "roads", [][]tiles.Feature{{
		feat("old-1", m.at(10, 0)), feat("old-2", orb.LineString{m.at(-50, 20), m.at(50, 20)}),
	}}, nil)
	e := newEngine(t, st, Options{})
	site := m.at(0, 0)
	before := query(t, e, site, 100, layerReq(v1))

	var wg sync.WaitGroup
	wg.Add(1)
	var v2 *tiles.Manifest
	go func() {
		defer wg.Done()
		v2 = publish(t, st, "roads", [][]tiles.Feature{{feat("new-1", m.at(5, 5))}}, nil)
	}()
	for i := 0; i < 20; i++ {
		if got := query(t, e, site, 100, layerReq(v1)); !sameResults(got, before) {
			t.Fatalf("release 1 changed while release 2 was published")
		}
	}
	wg.Wait()
	if v2.ReleaseID == v1.ReleaseID {
		t.Fatal("same release id")
	}
	if got := query(t, e, site, 100, layerReq(v1)); !sameResults(got, before) {
		t.Errorf("release 1 changed after release 2")
	}
	if got := ids(query(t, e, site, 100, layerReq(v2))[0]); !reflect.DeepEqual(got, []string{"new-1"}) {
		t.Errorf("release 2: %v", got)
	}
	if got := ids(query(t, e, site, 100, layerReq(v1))[0]); !reflect.DeepEqual(got, []string{"old-1", "old-2"}) {
		t.Errorf("release 1: %v", got)
	}
}

// TestPreload loads every shard of a release once; queries then load
// nothing; an unknown release is an error.
func TestPreload(t *testing.T) {
	t.Parallel()
	store, layers, reqs := concurrencyFixture(t)
	ctx := context.Background()
	e := newEngine(t, store, Options{})
	m, err := tiles.ReadManifest(ctx, store, layers[0].LayerID, layers[0].ReleaseID)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.Preload(ctx, layers[0].LayerID, layers[0].ReleaseID); err != nil {
			t.Fatal(err)
		}
	}
	s := e.Stats()
	if s.Shards != len(m.Tiles) || s.Loads != int64(len(m.Tiles)) || s.Features != m.FeatureCount {
		t.Fatalf("after preload: %+v, manifest has %d tiles, %d features", s, len(m.Tiles), m.FeatureCount)
	}
	req := reqs[0]
	req.Layers = layers[:1]
	if _, err := e.Query(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := e.Stats().Loads; got != s.Loads {
		t.Errorf("a query after preload loaded %d shards", got-s.Loads)
	}
	if err := e.Preload(ctx, layers[0].LayerID, "r_00000000000000000000000000000000"); err == nil {
		t.Error("preloading an unknown release succeeded")
	}
}

// TestLargeTileIsShared: a query whose candidates sit in one tile, whose
// estimate promises too few to start other workers (the tile's box is much
// larger than the cluster of its features), shares the tile among its
// workers once its candidates are known, and answers as one worker does.
func TestLargeTileIsShared(t *testing.T) {
	t.Parallel()
	m := newMetric(sydney)
	var feats []tiles.Feature
	for i := range 2000 {
		feats = append(feats, feat(fmt.Sprintf("p%04d", i), m.at(float64(i%50)*10, float64(i/50)*10)))
	}
	// Two far corners stretch the tile's box to about 100 km.
	feats = append(feats, feat("far-1", m.at(-50_000, -50_000)), feat("far-2", m.at(50_000, 50_000)))
	st := newStore(t)
	rel := publish(t, st, "cluster", [][]tiles.Feature{feats}, nil)
	one := newEngine(t, st, Options{Workers: 1})
	two := newEngine(t, st, Options{Workers: 2})
	for _, r := range []float64{100, 300, 1000} {
		want := query(t, one, m.at(250, 200), r, layerReq(rel))
		got := query(t, two, m.at(250, 200), r, layerReq(rel))
		if !sameResults(got, want) {
			t.Errorf("radius %v: two workers differ from one", r)
		}
	}
	if s := one.Stats(); s.SharedTiles != 0 {
		t.Errorf("one worker shared %d tiles", s.SharedTiles)
	}
	// 1000 m holds all 2,000 near features; 300 m most: two shared scans.
	if s := two.Stats(); s.SharedTiles < 2 {
		t.Errorf("two workers shared %d tiles, want at least 2", s.SharedTiles)
	}
}
