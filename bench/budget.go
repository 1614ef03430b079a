package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"siteenv/engine"
	"siteenv/store"
)

// What a memory budget smaller than the data costs: shard loads during the
// timed passes (a query whose shards were evicted loads them again) and the
// cold query, the first query of a replica that holds nothing yet.

// coldQueries are the mix's first queries, each run on an engine of its
// own that holds nothing: the cold query's cost (manifests, shard loads,
// the query) as a replica's first request pays it.
const coldQueries = 10

// budgetStats describe the shard traffic of a timed pass.
type budgetStats struct {
	Queries            int
	Loads, Evictions   int64
	LoadSeconds        float64
	LoadedQueries      int           // queries that loaded at least one shard (single-client pass)
	LoadedP50, WarmP50 time.Duration // p50 of the queries that loaded shards, and of those that did not
	ColdP50, ColdMax   time.Duration // coldQueries on an empty engine each
	ColdLoads          float64       // shard loads per cold query
	// Property blocks read before the passes (PreloadProperties), and
	// whether they all fitted; read and found cached during the passes.
	WarmBlocks, WarmBytes int64
	WarmAll               bool
	PropReads, PropHits   int64
	// Digest of the 1-client pass's answers (answersDigest): equal in two
	// runs of the same scale, seed and queries, whatever their budgets.
	Digest uint64
}

// warmProperties preloads the property blocks of every layer of ds while
// the budget has room.
func warmProperties(ctx context.Context, e *engine.Engine, ds *dataset, b *budgetStats) error {
	b.WarmAll = true
	for _, l := range ds.layers {
		all, err := e.PreloadProperties(ctx, l.id, l.release)
		if err != nil {
			return fmt.Errorf("bench: engine warm-up %s: %w", l.id, err)
		}
		if !all {
			b.WarmAll = false
			break
		}
	}
	s := e.Stats()
	b.WarmBlocks, b.WarmBytes = s.PropertyReads, s.PropertyBytes
	return nil
}

// statsDelta is the engine's shard traffic between two snapshots.
func statsDelta(a, b engine.Stats) (loads, evictions int64, seconds float64) {
	return b.Loads - a.Loads, b.Evictions - a.Evictions, b.LoadSeconds - a.LoadSeconds
}

// addTraffic adds the shard and property traffic between two snapshots.
func (b *budgetStats) addTraffic(x, y engine.Stats) {
	l, ev, sec := statsDelta(x, y)
	b.Loads, b.Evictions, b.LoadSeconds = b.Loads+l, b.Evictions+ev, b.LoadSeconds+sec
	b.PropReads += y.PropertyReads - x.PropertyReads
	b.PropHits += y.PropertyHits - x.PropertyHits
}

// perQueryLoads runs reqs one at a time on e, as enginePass does with one
// worker, and returns the latencies and each query's shard loads. out, when
// not nil, receives the outcomes as enginePass gives them.
func perQueryLoads(ctx context.Context, e *engine.Engine, reqs []engine.Request, out [][]outcome) (pass, []int64, error) {
	loads := make([]int64, len(reqs))
	p := pass{workers: 1, lat: make([]time.Duration, len(reqs))}
	start := time.Now()
	for i := range reqs {
		before := e.Stats()
		one, err := enginePass(ctx, e, reqs[i:i+1], 1, outSlice(out, i))
		if err != nil {
			return p, nil, fmt.Errorf("query %d: %w", i, err)
		}
		p.lat[i] = one.lat[0]
		loads[i] = e.Stats().Loads - before.Loads
	}
	p.wall = time.Since(start)
	return p, loads, nil
}

func outSlice(out [][]outcome, i int) [][]outcome {
	if out == nil {
		return nil
	}
	return out[i : i+1]
}

// splitByLoads is the p50 of the queries that loaded shards and of those
// that did not.
func splitByLoads(lat []time.Duration, loads []int64) (n int, loaded, warm time.Duration) {
	var a, b []time.Duration
	for i, d := range lat {
		if loads[i] > 0 {
			a = append(a, d)
		} else {
			b = append(b, d)
		}
	}
	slices.Sort(a)
	slices.Sort(b)
	return len(a), percentile(a, 0.5), percentile(b, 0.5)
}

// coldCost runs the first coldQueries of reqs, each on a new engine over st
// with the given budget, and returns their p50, max and mean shard loads.
func coldCost(ctx context.Context, st store.Store, budget int64, reqs []engine.Request) (p50, worst time.Duration, loads float64, err error) {
	n := min(coldQueries, len(reqs))
	if n == 0 {
		return 0, 0, 0, nil
	}
	lat := make([]time.Duration, n)
	var total int64
	for i := range n {
		e, err := engine.New(st, engine.Options{MemoryBudget: budget})
		if err != nil {
			return 0, 0, 0, err
		}
		p, err := enginePass(ctx, e, reqs[i:i+1], 1, nil)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("bench: cold query %d: %w", i, err)
		}
		lat[i] = p.lat[0]
		total += e.Stats().Loads
	}
	slices.Sort(lat)
	return percentile(lat, 0.5), lat[n-1], float64(total) / float64(n), nil
}

// print writes the budget figures in one paragraph.
func (b budgetStats) print(w io.Writer, budget, need int64) {
	fmt.Fprintf(w, "engine budget: %.2f GiB for %.2f GiB of shards (%.0f%%)", gib(budget), gib(need), 100*ratio(float64(budget), float64(need)))
	warm := "every block of the loaded shards"
	if !b.WarmAll {
		warm = "until the budget was full"
	}
	fmt.Fprintf(w, "; property blocks read before the passes: %d, %.1f MiB (%s)", b.WarmBlocks, float64(b.WarmBytes)/(1<<20), warm)
	if b.Queries > 0 {
		fmt.Fprintf(w, "; timed passes: %d shard loads (%.3f per query, %.1f s of loading), %d evictions; property blocks %d read, %d cached",
			b.Loads, float64(b.Loads)/float64(b.Queries), b.LoadSeconds, b.Evictions, b.PropReads, b.PropHits)
	}
	if b.LoadedQueries > 0 {
		fmt.Fprintf(w, "; %d queries of the 1-client pass loaded shards: p50 %.3f ms, others %.3f ms",
			b.LoadedQueries, ms(b.LoadedP50), ms(b.WarmP50))
	}
	if b.Digest != 0 {
		fmt.Fprintf(w, "; answers digest %016x", b.Digest)
	}
	fmt.Fprintf(w, "\ncold query (the mix's first %d, each on an empty engine): p50 %.3f ms, max %.3f ms, %.1f shard loads each\n",
		coldQueries, ms(b.ColdP50), ms(b.ColdMax), b.ColdLoads)
}

// answersDigest folds the outcomes of a pass into one number, so that two
// runs (an unbounded budget and a small one) can be checked for the same
// answers feature for feature.
func answersDigest(out [][]outcome) uint64 {
	var d uint64
	for i, o := range out {
		for j, x := range o {
			d += mix64(uint64(i)<<32 ^ uint64(j)<<48 ^ x.sum ^ uint64(x.n)*0x9e3779b97f4a7c15)
		}
	}
	return d
}
