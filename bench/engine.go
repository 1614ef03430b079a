package bench

import (
	"context"
	"errors"
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
	opt = opt.WithDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	log := opt.Logger
	watch, ctx := startMemWatch(ctx, log)
	defer watch.Stop()
	r, err := runEngine(ctx, opt, watch)
	if err != nil {
		return nil, lowMemory(ctx, err)
	}
	r.Memory = watch.Stop()
	return r, nil
}

// lowMemory names the guard when it ended the run.
func lowMemory(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrLowMemory) {
		return fmt.Errorf("%w (then: %v)", cause, err)
	}
	return err
}

func runEngine(ctx context.Context, opt EngineOptions, watch *memWatch) (*EngineReport, error) {
	log := opt.Logger
	w, err := prepareWorkload(ctx, "engine", opt.WorkDir, opt.KeepDir, opt.Scale, opt.Seed, opt.Queries, opt.MaxFeaturesPerLayer, log)
	if w.dir != "" {
		defer os.RemoveAll(w.dir)
	}
	if err != nil {
		return nil, err
	}
	dir, ds, qs := w.dir, w.ds, w.mix

	limit, restore := boundHeap(ds.features, opt.EngineMemory, opt.MemoryLimitSet, log)
	defer restore()
	reqs := engineRequests(ds, qs)
	var bs budgetStats
	if bs.ColdP50, bs.ColdMax, bs.ColdLoads, err = coldCost(ctx, ds.store, opt.EngineMemory, reqs); err != nil {
		return nil, err
	}
	e, err := engine.New(ds.store, engine.Options{MemoryBudget: opt.EngineMemory})
	if err != nil {
		return nil, err
	}
	load, err := loadEngine(ctx, e, ds, opt.EngineMemory, log)
	if err != nil {
		return nil, err
	}
	if err := checkFits(max(load.ResidentBytes, load.HeapBytes), limit, ds.features); err != nil {
		return nil, err
	}
	if err := warmProperties(ctx, e, ds, &bs); err != nil {
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
	watch.watchCluster("PostGIS (PostgreSQL)", filepath.Join(dir, "pg", "data"))
	if err := pg.load(ctx, ds, 2); err != nil {
		return nil, err
	}
	if err := pg.openQueryConns(ctx, opt.Workers, qs); err != nil {
		return nil, err
	}

	r := newEngineReport(opt, ds, qs, load, pg)
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
	before := e.Stats()
	p, loads, err := perQueryLoads(ctx, e, reqs, engOut)
	if opt.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return nil, fmt.Errorf("bench: engine: %w", err)
	}
	r.Engine1 = p.summary()
	bs.LoadedQueries, bs.LoadedP50, bs.WarmP50 = splitByLoads(p.lat, loads)
	bs.Queries += len(reqs)
	bs.addTraffic(before, e.Stats())
	bs.Digest = answersDigest(engOut)
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
		b := e.Stats()
		if p, err = enginePass(ctx, e, reqs, opt.Workers, nil); err != nil {
			return nil, fmt.Errorf("bench: engine: %w", err)
		}
		r.EngineN = p.summary()
		bs.Queries += len(reqs)
		bs.addTraffic(b, e.Stats())
		if p, err = postgisPass(ctx, pg, ds, qs, opt.Workers, nil); err != nil {
			return nil, fmt.Errorf("bench: postgis: %w", err)
		}
		r.PostGISN = p.summary()
	}
	r.Budget = bs
	return r, nil
}
