package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"

	"siteenv/engine"
)

// warmupQueries run on both sides, untimed, before the timed passes: they
// settle caches, the prepared statement's plan and the Go runtime.
const warmupQueries = 200

// RunEngine builds the scale's data, loads it into the engine and into
// PostGIS, runs the same query mix on both and checks that they return the
// same features. The report is returned even when they disagree: see
// EngineReport.Err.
func RunEngine(ctx context.Context, opt EngineOptions) (*EngineReport, error) {
	if err := opt.fill(); err != nil {
		return nil, err
	}
	log := opt.Logger
	w, err := prepareWorkload(ctx, "engine", opt.WorkDir, opt.Scale, opt.Seed, opt.Queries, opt.MaxFeaturesPerLayer, log)
	if w.dir != "" {
		defer os.RemoveAll(w.dir)
	}
	if err != nil {
		return nil, err
	}
	dir, ds, qs := w.dir, w.ds, w.mix

	limit, restore := boundHeap(ds.features, log)
	defer restore()
	e := engine.New(ds.store, engine.Options{MemoryBudget: benchMemoryBudget})
	load, err := loadEngine(ctx, e, ds, log)
	if err != nil {
		return nil, err
	}
	if err := checkFits(max(load.ResidentBytes, load.HeapBytes), limit, ds.features); err != nil {
		return nil, err
	}

	pgSize := ds.features
	if opt.Scale == ScaleHeavy {
		pgSize = heavyPostGISFeatures
	}
	pg, err := startPostGIS(ctx, filepath.Join(dir, "pg"), pgSize, log)
	if err != nil {
		return nil, err
	}
	defer pg.Close(ctx)
	if err := pg.load(ctx, ds, 2); err != nil {
		return nil, err
	}
	if err := pg.openQueryConns(ctx, opt.Workers, qs); err != nil {
		return nil, err
	}

	r := newEngineReport(opt, ds, qs, load, pg)
	reqs := engineRequests(ds, qs)
	nw := min(warmupQueries, len(qs))
	if _, err := enginePass(ctx, e, reqs[:nw], 1, nil); err != nil {
		return nil, fmt.Errorf("bench: engine warm-up: %w", err)
	}
	if _, err := postgisPass(ctx, pg, ds, qs[:nw], 1, nil); err != nil {
		return nil, fmt.Errorf("bench: postgis warm-up: %w", err)
	}

	log.Info("bench: engine pass", "queries", len(qs), "workers", 1)
	engOut := make([][]outcome, len(qs))
	if opt.CPUProfile != nil {
		if err := pprof.StartCPUProfile(opt.CPUProfile); err != nil {
			return nil, fmt.Errorf("bench: cpu profile: %w", err)
		}
	}
	p, err := enginePass(ctx, e, reqs, 1, engOut)
	if opt.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return nil, fmt.Errorf("bench: engine: %w", err)
	}
	r.Engine1 = p.summary()
	log.Info("bench: PostGIS pass", "queries", len(qs), "workers", 1)
	pgOut := make([][]outcome, len(qs))
	if p, err = postgisPass(ctx, pg, ds, qs, 1, pgOut); err != nil {
		return nil, fmt.Errorf("bench: postgis: %w", err)
	}
	r.PostGIS1 = p.summary()

	if r.Comparison, err = compare(ctx, e, pg, ds, qs, engOut, pgOut); err != nil {
		return nil, err
	}
	if opt.Scale == ScaleHeavy {
		if r.Subdivided, err = runSubdivided(ctx, pg, ds, qs, opt.Workers, engOut, log); err != nil {
			return nil, err
		}
	}

	if opt.Workers > 1 {
		log.Info("bench: concurrent passes", "queries", len(qs), "workers", opt.Workers)
		if p, err = enginePass(ctx, e, reqs, opt.Workers, nil); err != nil {
			return nil, fmt.Errorf("bench: engine: %w", err)
		}
		r.EngineN = p.summary()
		if p, err = postgisPass(ctx, pg, ds, qs, opt.Workers, nil); err != nil {
			return nil, fmt.Errorf("bench: postgis: %w", err)
		}
		r.PostGISN = p.summary()
	}
	return r, nil
}
