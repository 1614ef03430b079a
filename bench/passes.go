package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"siteenv/engine"
)

// digest summarises the ids a layer matched, independently of their
// order: count and the sum of a hash of each id. Equal sets give equal
// digests; unequal sets are then found by running the query again.
type digest struct {
	n   int
	sum uint64
}

func (d *digest) add(id []byte) {
	h := fnv.New64a()
	h.Write(id)
	d.n++
	d.sum += mix64(h.Sum64())
}

// mix64 is splitmix64's finaliser: sums of raw FNV values of similar ids
// would collide more easily.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// outcome is what one side returned for one layer of one query.
type outcome struct {
	digest
	// failed: the engine failed the layer (a limit); it is not compared.
	failed string
	// outside: the engine found the search area outside the release's
	// coverage polygon and looked no further (PostGIS knows no coverage).
	outside bool
}

// pass is one timed run of the mix on one side.
type pass struct {
	workers int
	lat     []time.Duration // per query
	wall    time.Duration
	// busy: queries/s is queries over the latencies' sum divided among the
	// workers (the rate with every worker busy), not over the wall time:
	// an API query that waits out a rate limit sleeps on its Retry-After,
	// and that sleep, left out of its latency, must not stretch the pass.
	busy bool
}

type latency struct {
	P50, P99, Mean time.Duration
	QPS            float64
}

func (p pass) summary() latency {
	s := slices.Clone(p.lat)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	l := latency{
		P50:  percentile(s, 0.50),
		P99:  percentile(s, 0.99),
		Mean: sum / time.Duration(max(len(s), 1)),
		QPS:  ratio(float64(len(s)), p.wall.Seconds()),
	}
	if p.busy {
		l.QPS = ratio(float64(len(s))*float64(max(p.workers, 1)), sum.Seconds())
	}
	return l
}

// percentile of sorted s, nearest rank.
func percentile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(float64(len(s))*q+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// runPass runs every query with `workers` goroutines pulling from a shared
// counter; fn runs query i on worker w and returns its latency.
func runPass(ctx context.Context, n, workers int, fn func(ctx context.Context, w, i int) (time.Duration, error)) (pass, error) {
	p := pass{workers: workers, lat: make([]time.Duration, n)}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		err  error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				d, e := fn(ctx, w, i)
				if e != nil {
					mu.Lock()
					if err == nil {
						err = fmt.Errorf("query %d: %w", i, e)
					}
					mu.Unlock()
					cancel()
					return
				}
				p.lat[i] = d
			}
		}()
	}
	wg.Wait()
	p.wall = time.Since(start)
	return p, err
}

// enginePass runs the mix on the engine; out (when not nil) receives each
// query's per-layer outcomes.
func enginePass(ctx context.Context, e *engine.Engine, reqs []engine.Request, workers int, out [][]outcome) (pass, error) {
	return runPass(ctx, len(reqs), workers, func(ctx context.Context, _, i int) (time.Duration, error) {
		start := time.Now()
		res, err := e.Query(ctx, reqs[i])
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if out != nil {
			o := make([]outcome, len(res))
			for j, r := range res {
				switch {
				case r.Status == engine.StatusUnavailable && r.Reason == engine.ReasonSourceUnavailable:
					return 0, fmt.Errorf("engine: layer %s: source unavailable", r.LayerID)
				case r.Status == engine.StatusUnavailable:
					o[j].failed = r.Reason
				case r.Reason == engine.ReasonOutsideCoverage:
					o[j].outside = true
				}
				for _, f := range r.Features {
					o[j].add([]byte(f.ID))
				}
			}
			out[i] = o
		}
		return d, nil
	})
}

// postgisPass runs the mix on PostGIS, worker w on connection w. The timed
// part reads every row into a buffer, as any client would; digests are
// computed after the clock stops, as for the engine.
func postgisPass(ctx context.Context, pg *postgis, ds *dataset, qs []query, workers int, out [][]outcome) (pass, error) {
	ids := make([][]string, len(qs))
	args := make([][]any, len(qs))
	for i, q := range qs {
		for _, li := range q.layers {
			ids[i] = append(ids[i], ds.layers[li].id)
		}
		args[i] = queryArgs(ds, &qs[i], q.layers)
	}
	type row struct{ layer, end int }
	type scratch struct {
		buf  []byte
		rows []row
	}
	bufs := make([]scratch, workers)
	return runPass(ctx, len(qs), workers, func(ctx context.Context, w, i int) (time.Duration, error) {
		sc := &bufs[w]
		sc.buf, sc.rows = sc.buf[:0], sc.rows[:0]
		start := time.Now()
		err := pg.query(ctx, w, args[i], func(layerID, id []byte) {
			j := slices.Index(ids[i], string(layerID))
			sc.buf = append(sc.buf, id...)
			sc.rows = append(sc.rows, row{j, len(sc.buf)})
		})
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if out != nil {
			o := make([]outcome, len(ids[i]))
			begin := 0
			for _, r := range sc.rows {
				if r.layer < 0 {
					return 0, fmt.Errorf("postgis returned a layer the query did not ask for")
				}
				o[r.layer].add(sc.buf[begin:r.end])
				begin = r.end
			}
			out[i] = o
		}
		return d, nil
	})
}
