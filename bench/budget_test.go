package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"siteenv/engine"
	"siteenv/ingest/synth"
)

// TestBudgetAnswers is a development aid, skipped unless SITEENV_BENCH_DIR
// names a directory (a dataset kept there as for TestProfileEngine;
// SITEENV_BENCH_SCALE, default medium): it runs the first
// SITEENV_BENCH_NQUERIES (default 2000) queries of the mix on an engine
// that holds every shard and again on one whose budget is
// SITEENV_BENCH_FRACTION (default 0.25) of what the shards need, checks
// that every layer of every query gets the same features, and prints both
// runs' p50/p99, shard loads per query and the cold query's cost, with
// the memory each kind of geometry needs.
//
//	SITEENV_BENCH_DIR=/tmp/benchdata go test -count=1 -run TestBudgetAnswers -v -timeout 60m ./bench/
func TestBudgetAnswers(t *testing.T) {
	dir := os.Getenv("SITEENV_BENCH_DIR")
	if dir == "" {
		t.Skip("SITEENV_BENCH_DIR not set")
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	scale := synth.Medium
	if v := os.Getenv("SITEENV_BENCH_SCALE"); v != "" {
		scale = synth.Scale(v)
	}
	n, frac := 2000, 0.25
	if v, err := strconv.Atoi(os.Getenv("SITEENV_BENCH_NQUERIES")); err == nil {
		n = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("SITEENV_BENCH_FRACTION"), 64); err == nil {
		frac = v
	}
	ds := profileDataset(t, ctx, dir, scale, log)
	kept := datasetCacheDir(dir, scale, DefaultSeed, 0)
	if _, err := os.Stat(filepath.Join(dir, datasetListName)); err == nil {
		kept = dir // kept by an earlier version of profileDataset
	}
	anchors, err := keptAnchors(ctx, kept, ds, anchorCount, DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := makeMix(n, anchors, len(ds.layers), DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	reqs := engineRequests(ds, qs)

	run := func(budget int64) ([][]outcome, loadStats, budgetStats, pass) {
		var bs budgetStats
		var err error
		if bs.ColdP50, bs.ColdMax, bs.ColdLoads, err = coldCost(ctx, ds.store, budget, reqs); err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, ds.store, engine.Options{MemoryBudget: budget})
		load, err := loadEngine(ctx, e, ds, budget, log)
		if err != nil {
			t.Fatal(err)
		}
		if err := warmProperties(ctx, e, ds, &bs); err != nil {
			t.Fatal(err)
		}
		out := make([][]outcome, len(reqs))
		before := e.Stats()
		p, loads, err := perQueryLoads(ctx, e, reqs, out)
		if err != nil {
			t.Fatal(err)
		}
		bs.Queries = len(reqs)
		bs.addTraffic(before, e.Stats())
		bs.LoadedQueries, bs.LoadedP50, bs.WarmP50 = splitByLoads(p.lat, loads)
		bs.Digest = answersDigest(out)
		return out, load, bs, p
	}
	report := func(name string, load loadStats, bs budgetStats, p pass) {
		s := p.summary()
		fmt.Printf("== %s: %d queries, p50 %.3f ms, p99 %.3f ms, mean %.3f ms\n", name, len(reqs), ms(s.P50), ms(s.P99), ms(s.Mean))
		load.printMemory(os.Stdout)
		bs.print(os.Stdout, load.Budget, load.NeedBytes)
	}
	full, load, bs, p := run(benchMemoryBudget)
	report("every shard resident", load, bs, p)
	budget := int64(float64(load.NeedBytes) * frac)
	small, load2, bs2, p2 := run(budget)
	report(fmt.Sprintf("budget %.0f%% of the shards", 100*frac), load2, bs2, p2)
	differ := 0
	for i := range full {
		for j := range full[i] {
			if full[i][j] != small[i][j] {
				differ++
			}
		}
	}
	if differ > 0 || bs.Digest != bs2.Digest {
		t.Fatalf("%d layer results differ between the budgets", differ)
	}
	if bs2.Loads == 0 {
		t.Errorf("a budget of %d bytes for %d loaded no shard during the pass", budget, load.NeedBytes)
	}
}
