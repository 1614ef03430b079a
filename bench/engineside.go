package bench

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"siteenv/engine"
)

// benchMemoryBudget keeps every shard resident: the bench measures query
// speed over a warm engine, not eviction.
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
	Shards, Loads, Evictions int64
	Features                 int64
	// LoadSeconds is the engine's own total of shard load times;
	// WallSeconds the wall time of the warm-up loop around it.
	LoadSeconds, WallSeconds float64
	ResidentBytes            int64 // Stats.ResidentBytes (columns and indexes)
	IndexBytes               int64
	HeapBytes                int64 // growth of the live Go heap, measured
	// The same for the layers whose features are all points.
	PointFeatures, PointResident, PointIndex, PointHeap int64
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
// it. Point layers load first, as a group, so their memory is measured
// apart.
func loadEngine(ctx context.Context, e *engine.Engine, ds *dataset, log *slog.Logger) (loadStats, error) {
	var st loadStats
	start := time.Now()
	heap0 := liveHeap()
	for _, points := range []bool{true, false} {
		before := e.Stats()
		for _, l := range ds.layers {
			if l.points != points {
				continue
			}
			if err := e.Preload(ctx, l.id, l.release); err != nil {
				return st, fmt.Errorf("bench: engine warm-up %s: %w", l.id, err)
			}
		}
		if points {
			after := e.Stats()
			st.PointFeatures = after.Features - before.Features
			st.PointResident = after.ResidentBytes - before.ResidentBytes
			st.PointIndex = after.IndexBytes - before.IndexBytes
			st.PointHeap = liveHeap() - heap0
		}
	}
	st.WallSeconds = time.Since(start).Seconds()
	st.HeapBytes = liveHeap() - heap0
	s := e.Stats()
	st.Shards, st.Loads, st.Evictions = int64(s.Shards), s.Loads, s.Evictions
	st.Features, st.LoadSeconds = s.Features, s.LoadSeconds
	st.ResidentBytes, st.IndexBytes = s.ResidentBytes, s.IndexBytes
	if s.Shards != ds.tiles || s.Features != ds.features || s.LoadErrors != 0 {
		return st, fmt.Errorf("bench: engine warm-up loaded %d of %d shards, %d of %d features (%d load errors)",
			s.Shards, ds.tiles, s.Features, ds.features, s.LoadErrors)
	}
	log.Info("bench: engine loaded", "shards", s.Shards, "features", s.Features,
		"features_per_s", int64(st.featuresPerSec()), "resident_bytes", s.ResidentBytes)
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
