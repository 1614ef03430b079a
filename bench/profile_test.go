package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"siteenv/engine"
	"siteenv/ingest/synth"
)

// TestProfileEngine is a development aid for engine work, skipped unless
// SITEENV_BENCH_DIR names a directory: it ingests a synthetic scale there
// once (SITEENV_BENCH_SCALE, default medium; later runs reuse it), then
// runs only the engine's side of `siteenv bench engine` and prints the load
// rate, latencies and the slowest queries with their layers. Optional CPU
// profiles: SITEENV_BENCH_PROFILE (the timed pass),
// SITEENV_BENCH_LOADPROFILE (the loads), SITEENV_BENCH_SMALLPROFILE (five
// passes over the queries faster than 1.5 x p50, the fixed costs).
// SITEENV_BENCH_SLOWPROFILE (three passes over the 20 slowest: the tail).
// SITEENV_BENCH_COLDPROFILE (the same queries on fresh engines: first-touch
// costs; written to the name with .0, .1, .2 appended).
// SITEENV_BENCH_INGESTPROFILE (building the dataset, when it is built).
// SITEENV_BENCH_LOADONLY stops after loading. SITEENV_BENCH_QUERIES (query
// numbers as `bench api`'s api-queries.tsv gives them, comma-separated)
// times those queries on this engine and on one with a single worker.
//
//	SITEENV_BENCH_DIR=/tmp/benchdata go test -count=1 -run TestProfileEngine -v -timeout 30m ./bench/
//
// (-count=1: go test would otherwise replay a cached run.)
func TestProfileEngine(t *testing.T) {
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
	ds := profileDataset(t, ctx, dir, scale, log)
	anchors, err := sampleAnchors(ctx, ds, anchorCount, DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := makeMix(DefaultQueries, anchors, len(ds.layers), DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}

	e := newEngine(t, ds.store, engine.Options{MemoryBudget: benchMemoryBudget})
	stop := startProfile(t, "SITEENV_BENCH_LOADPROFILE")
	load, err := loadEngine(ctx, e, ds, benchMemoryBudget, log)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("load: %d features in %.3f s: %.0f features/s\n", load.Features, load.LoadSeconds, load.featuresPerSec())
	if os.Getenv("SITEENV_BENCH_LOADONLY") != "" {
		return
	}
	reqs := engineRequests(ds, qs)
	if _, err := enginePass(ctx, e, reqs[:warmupQueries], 1, nil); err != nil {
		t.Fatal(err)
	}

	if os.Getenv("SITEENV_BENCH_SMALLPROFILE") != "" {
		first, err := enginePass(ctx, e, reqs, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		small, _ := fastQueries(first, reqs)
		stop := startProfile(t, "SITEENV_BENCH_SMALLPROFILE")
		start := time.Now()
		for range 5 {
			enginePass(ctx, e, small, 1, nil)
		}
		stop()
		fmt.Printf("%d queries under 1.5 x p50: mean %v\n", len(small), time.Since(start)/time.Duration(5*len(small)))
	}

	if path := os.Getenv("SITEENV_BENCH_COLDPROFILE"); path != "" {
		profileCold(t, ctx, ds, reqs, path)
	}

	if v := os.Getenv("SITEENV_BENCH_QUERIES"); v != "" {
		profileQueries(t, ctx, ds, e, qs, reqs, v)
	}

	stop = startProfile(t, "SITEENV_BENCH_PROFILE")
	out := make([][]outcome, len(qs))
	p, err := enginePass(ctx, e, reqs, 1, out)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	s := p.summary()
	fmt.Printf("engine p50 %v p99 %v mean %v, %.1f queries/s\n", s.P50, s.P99, s.Mean, s.QPS)
	idx := make([]int, len(qs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(p.lat[b] - p.lat[a]) })
	for _, i := range idx[:20] {
		q, n := qs[i], 0
		for _, o := range out[i] {
			n += o.n
		}
		fmt.Printf("%5d %-8v r=%7.0f layers=%2d matches=%6d %v\n", i, q.kind, q.radius, len(q.layers), n, p.lat[i].Round(time.Microsecond))
	}
	if os.Getenv("SITEENV_BENCH_SLOWPROFILE") != "" {
		var slow []engine.Request
		for _, i := range idx[:20] {
			slow = append(slow, reqs[i])
		}
		stop := startProfile(t, "SITEENV_BENCH_SLOWPROFILE")
		start := time.Now()
		for range 3 {
			if _, err := enginePass(ctx, e, slow, 1, nil); err != nil {
				t.Fatal(err)
			}
		}
		stop()
		fmt.Printf("the 20 slowest queries: mean %v\n", time.Since(start)/time.Duration(3*len(slow)))
	}
	for _, i := range idx[:5] {
		for _, li := range qs[i].layers {
			start := time.Now()
			res, err := e.Query(ctx, engineRequest(ds, qs[i], []int{li}))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("  %5d %-40s %-9s %6d %v\n", i, ds.layers[li].id, res[0].Coverage, len(res[0].Features), time.Since(start).Round(time.Microsecond))
		}
	}
}

// profileDataset ingests scale into dir, or reads what an earlier run left
// there (layers.json lists the releases).
func profileDataset(t *testing.T, ctx context.Context, dir string, scale synth.Scale, log *slog.Logger) *dataset {
	// A dataset kept by an earlier version of this aid (layers.json at
	// dir) is reused as it is.
	if ds, err := readKeptDataset(ctx, dir); err == nil {
		return ds
	}
	g, err := synth.New(DefaultSeed, scale)
	if err != nil {
		t.Fatal(err)
	}
	stop := startProfile(t, "SITEENV_BENCH_INGESTPROFILE")
	ds, err := keptDataset(ctx, g, datasetCacheDir(dir, scale, DefaultSeed, 0), 0, log)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// startProfile starts a CPU profile into the file named by env, if set.
func startProfile(t *testing.T, env string) (stop func()) {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	return profileTo(t, path)
}

// profileTo starts a CPU profile into the file path.
func profileTo(t *testing.T, path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// profileCold runs the queries faster than 1.5 x p50 of a warm pass on
// three fresh engines (shards preloaded, caches of projections, coverages
// and property sizes empty), profiling each pass.
func profileCold(t *testing.T, ctx context.Context, ds *dataset, reqs []engine.Request, path string) {
	e := newEngine(t, ds.store, engine.Options{MemoryBudget: benchMemoryBudget})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := loadEngine(ctx, e, ds, benchMemoryBudget, quiet); err != nil {
		t.Fatal(err)
	}
	if _, err := enginePass(ctx, e, reqs, 1, nil); err != nil {
		t.Fatal(err)
	}
	warm, err := enginePass(ctx, e, reqs, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	small, p50 := fastQueries(warm, reqs)
	fmt.Printf("cold: %d queries under 1.5 x the warm p50 %v\n", len(small), p50)
	for round := range 3 {
		e := newEngine(t, ds.store, engine.Options{MemoryBudget: benchMemoryBudget})
		if _, err := loadEngine(ctx, e, ds, benchMemoryBudget, quiet); err != nil {
			t.Fatal(err)
		}
		stop := profileTo(t, fmt.Sprintf("%s.%d", path, round))
		p, err := enginePass(ctx, e, small, 1, nil)
		stop()
		if err != nil {
			t.Fatal(err)
		}
		s := p.summary()
		fmt.Printf("cold round %d: p50 %v mean %v\n", round, s.P50, s.Mean)
	}
}

// fastQueries returns the requests of p's queries faster than 1.5 x its
// p50 (the fixed costs), and that p50.
func fastQueries(p pass, reqs []engine.Request) ([]engine.Request, time.Duration) {
	p50 := p.summary().P50
	var fast []engine.Request
	for i, d := range p.lat {
		if d < p50*3/2 {
			fast = append(fast, reqs[i])
		}
	}
	return fast, p50
}

// profileQueries times the queries numbered in list (comma-separated, as
// bench api numbers them), best of five, on e and on an engine with one
// worker over the same store: what sharing a query's work among the cores
// gains.
func profileQueries(t *testing.T, ctx context.Context, ds *dataset, e *engine.Engine, qs []query, reqs []engine.Request, list string) {
	// bench api numbers its queries after leaving the line sites out.
	var api []int
	for i, q := range qs {
		if q.kind != kindLine {
			api = append(api, i)
		}
	}
	one := newEngine(t, ds.store, engine.Options{MemoryBudget: benchMemoryBudget, Workers: 1})
	best := func(e *engine.Engine, req engine.Request) (d time.Duration, matches int) {
		for r := range 5 {
			start := time.Now()
			res, err := e.Query(ctx, req)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if r == 0 || took < d {
				d = took
			}
			matches = 0
			for _, lr := range res {
				matches += len(lr.Features)
			}
		}
		return d, matches
	}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n >= len(api) {
			t.Fatalf("SITEENV_BENCH_QUERIES: %q is not a query of bench api's mix (0-%d)", f, len(api)-1)
		}
		i := api[n]
		d, matches := best(e, reqs[i])
		d1, _ := best(one, reqs[i])
		fmt.Printf("query %4d %-8v r=%5.0f layers=%2d matches=%6d: %v, one worker %v (x%.2f)\n",
			n, qs[i].kind, qs[i].radius, len(qs[i].layers), matches, d.Round(time.Microsecond), d1.Round(time.Microsecond), float64(d1)/float64(d))
	}
}
