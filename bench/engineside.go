package bench

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"siteenv/engine"
)

// benchMemoryBudget keeps every shard resident (the profiling tests
// measure query speed over a warm engine, not eviction).
const benchMemoryBudget = 1 << 40

// Limits high enough that no layer of the mix fails on them, so every
// layer can be compared with PostGIS (failures are still counted).
const (
	benchMaxFeatures     = 1 << 30
	benchMaxBytes        = 1 << 50
	benchMaxFeatureBytes = 1 << 50
)

// loadStats describe loading every shard once.
type loadStats struct {
	Budget                   int64 // the engine's memory budget
	Shards, Loads, Evictions int64
	Features                 int64
	// LoadSeconds is the engine's own total of shard load times;
	// WallSeconds the wall time of the warm-up loop around it.
	LoadSeconds, WallSeconds float64
	// NeedBytes is what every shard takes resident (Stats.LoadedBytes
	// after loading each once): the budget that holds the whole data.
	NeedBytes, NeedIndex int64
	ResidentBytes        int64 // held once loaded (at most the budget, but for shards in use)
	// HeapBytes is the growth of the live Go heap, measured; it says what
	// NeedBytes misses only when nothing was evicted (Evictions == 0).
	HeapBytes int64
	// Kinds: the same by the layers' geometry kind.
	Kinds [nKinds]kindLoad
}

// kindLoad is one geometry kind's share of a load.
type kindLoad struct {
	Layers               int
	Features, Vertices   int64
	NeedBytes, NeedIndex int64
	HeapBytes            int64 // when nothing was evicted
}

func (s loadStats) featuresPerSec() float64     { return ratio(float64(s.Features), s.LoadSeconds) }
func (s loadStats) wallFeaturesPerSec() float64 { return ratio(float64(s.Features), s.WallSeconds) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// loadEngine makes e load every shard of ds once (Engine.Preload, one
// shard at a time, so the summed load times are wall time) and measures
// it. Layers load by geometry kind, a kind at a time, so each kind's
// memory is measured apart. Under a budget smaller than the data, later
// shards evict earlier ones, so the engine ends holding the last ones
// loaded and the bytes each kind needs are counted as loaded.
func loadEngine(ctx context.Context, e *engine.Engine, ds *dataset, budget int64, log *slog.Logger) (loadStats, error) {
	st := loadStats{Budget: budget}
	start := time.Now()
	heap0 := liveHeap()
	for k := range nKinds {
		before := e.Stats()
		heap := liveHeap()
		kl := &st.Kinds[k]
		for _, l := range ds.layers {
			if l.kind != k {
				continue
			}
			if err := e.Preload(ctx, l.id, l.release); err != nil {
				return st, fmt.Errorf("bench: engine warm-up %s: %w", l.id, err)
			}
			kl.Layers++
			kl.Vertices += l.vertices
		}
		after := e.Stats()
		kl.Features = after.LoadedFeatures - before.LoadedFeatures
		kl.NeedBytes = after.LoadedBytes - before.LoadedBytes
		kl.NeedIndex = after.LoadedIndexBytes - before.LoadedIndexBytes
		kl.HeapBytes = liveHeap() - heap
	}
	st.WallSeconds = time.Since(start).Seconds()
	st.HeapBytes = liveHeap() - heap0
	s := e.Stats()
	st.Shards, st.Loads, st.Evictions = int64(s.Shards), s.Loads, s.Evictions
	st.Features, st.LoadSeconds = s.LoadedFeatures, s.LoadSeconds
	st.NeedBytes, st.NeedIndex = s.LoadedBytes, s.LoadedIndexBytes
	st.ResidentBytes = s.ResidentBytes
	if s.Loads != int64(ds.tiles) || s.LoadedFeatures != ds.features || s.LoadErrors != 0 {
		return st, fmt.Errorf("bench: engine warm-up loaded %d of %d shards, %d of %d features (%d load errors)",
			s.Loads, ds.tiles, s.LoadedFeatures, ds.features, s.LoadErrors)
	}
	log.Info("bench: engine loaded", "shards", s.Loads, "features", s.LoadedFeatures,
		"features_per_s", int64(st.featuresPerSec()), "need_bytes", s.LoadedBytes,
		"budget_bytes", budget, "resident_bytes", s.ResidentBytes, "evictions", s.Evictions)
	return st, nil
}

// liveHeap is the Go heap in use after a collection. Twice: sync.Pool
// contents (the tile reader's buffers) survive one collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// engineRequests builds the engine request of every query up front, so the
// timed loop only runs queries.
func engineRequests(ds *dataset, qs []query) []engine.Request {
	reqs := make([]engine.Request, len(qs))
	for i, q := range qs {
		reqs[i] = engineRequest(ds, q, q.layers)
	}
	return reqs
}

func engineRequest(ds *dataset, q query, layers []int) engine.Request {
	req := engine.Request{Site: q.site, RadiusM: q.radius, Layers: make([]engine.LayerRequest, len(layers))}
	for j, li := range layers {
		l := ds.layers[li]
		req.Layers[j] = engine.LayerRequest{
			LayerID: l.id, ReleaseID: l.release, Coverage: l.coverage,
			MaxFeatures: benchMaxFeatures, MaxBytes: benchMaxBytes, MaxFeatureBytes: benchMaxFeatureBytes,
		}
	}
	return req
}

// engineLayerIDs runs one layer of q on the engine and returns the matched
// ids with their distances (for explaining a mismatch).
func engineLayerIDs(ctx context.Context, e *engine.Engine, ds *dataset, q query, li int) (map[string]float64, error) {
	res, err := e.Query(ctx, engineRequest(ds, q, []int{li}))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range res[0].Features {
		out[f.ID] = f.DistanceM
	}
	return out, nil
}
