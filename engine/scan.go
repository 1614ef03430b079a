package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Scanning a query's tiles.
//
// Workers take (layer, tile) items in turn. A tile's candidates (its
// index's answer for the search boxes) are evaluated by the worker that
// took it; a tile with more than two chunks of candidates (scanChunk) is
// shared instead: its worker publishes it and every worker with nothing
// left to take joins in, a chunk at a time. Without that, a query whose
// work sits in one or two large tiles (a site inside a dense layer: the
// slowest queries) ran on one core while the other idled.
//
// The query's goroutine is the first worker. The others start at once when
// the tiles' estimates promise enough candidates (parallelMinCandidates),
// or else when a tile is first shared: estimates assume a tile's rows
// spread evenly over its box, and clustered data defeats that (a tile of a
// whole state can hold thousands of features around one city).

// parallelMinCandidates: a query whose tiles' estimates promise fewer
// candidates starts its other workers only if a tile turns out large
// enough to share; waking them for a small query costs more than they save.
const parallelMinCandidates = 1000

// scanChunk is the number of candidates a worker evaluates at a time from a
// shared tile: small enough to balance features of very different sizes,
// large enough that claiming one costs nothing in comparison.
const scanChunk = 128

// sharedTile is a tile whose candidates are evaluated by several workers.
type sharedTile struct {
	it     *tileItem
	se     *shardEntry
	cands  []int32
	chunks int32
	next   atomic.Int32 // the next chunk to claim
	feats  [][]Feature  // matches per chunk
}

// tileQueue hands out a query's items and the chunks of its shared tiles,
// and runs its workers.
type tileQueue struct {
	e     *Engine
	ev    *evaluator // the first worker's
	ctx   context.Context
	items []tileItem
	next  atomic.Int32 // the next item to take
	chunk int

	mu      sync.Mutex
	cond    sync.Cond
	decided int           // items taken and either scanned or shared
	open    []*sharedTile // shared tiles that may have chunks left
	shared  []*sharedTile // every shared tile, for finish

	started  sync.Once // the other workers
	wg       sync.WaitGroup
	cancel   context.CancelFunc
	errOnce  sync.Once
	firstErr error
}

// scanItems scans every item, on up to e.workers goroutines; ev serves
// the first.
func (e *Engine) scanItems(ctx context.Context, ev *evaluator, items []tileItem) error {
	if len(items) == 0 {
		return nil
	}
	if e.workers <= 1 {
		for i := range items {
			if err := e.scanItem(ctx, ev, &items[i], nil); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := &tileQueue{e: e, ev: ev, ctx: ctx, items: items, chunk: e.scanChunk, cancel: cancel}
	q.cond.L = &q.mu
	var est float64
	for i := range items {
		est += items[i].est
	}
	if len(items) > 1 && est >= e.parallelMin {
		q.start()
	}
	q.fail(e.work(ctx, ev, q))
	q.wg.Wait()
	q.finish()
	return q.firstErr
}

// start starts the other workers, once.
func (q *tileQueue) start() {
	q.started.Do(func() {
		for range q.e.workers - 1 {
			ev := q.ev.fork()
			q.wg.Add(1)
			go func() {
				defer q.wg.Done()
				q.fail(q.e.work(q.ctx, ev, q))
			}()
		}
	})
}

// fail records a worker's error (the first one is the query's) and stops
// the others.
func (q *tileQueue) fail(err error) {
	if err != nil {
		q.errOnce.Do(func() { q.firstErr = err })
		q.cancel()
	}
}

// work takes items until none is left, then helps with shared tiles until
// every chunk is claimed.
func (e *Engine) work(ctx context.Context, ev *evaluator, q *tileQueue) error {
	for {
		if i := int(q.next.Add(1)) - 1; i < len(q.items) {
			if err := e.scanItem(ctx, ev, &q.items[i], q); err != nil {
				return err
			}
			continue
		}
		st := q.waitOpen()
		if st == nil {
			return nil
		}
		if err := e.scanShared(ctx, ev, st); err != nil {
			return err
		}
	}
}

// waitOpen returns a shared tile with chunks left, waiting while items
// still being looked at may become one; nil when no more can.
func (q *tileQueue) waitOpen() *sharedTile {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for len(q.open) > 0 {
			st := q.open[len(q.open)-1]
			if st.next.Load() < st.chunks {
				return st
			}
			q.open = q.open[:len(q.open)-1]
		}
		if q.decided == len(q.items) {
			return nil
		}
		q.cond.Wait()
	}
}

// decide records that an item taken from q was scanned or shared (st).
func (q *tileQueue) decide(st *sharedTile) {
	q.mu.Lock()
	q.decided++
	if st != nil {
		q.open = append(q.open, st)
		q.shared = append(q.shared, st)
	}
	q.mu.Unlock()
	q.cond.Broadcast()
	if st != nil {
		q.start()
	}
}

// finish releases the shared tiles' shards and gathers their matches, once
// every worker has stopped.
func (q *tileQueue) finish() {
	if len(q.shared) > 0 {
		q.e.mu.Lock()
		q.e.mu.sharedTiles += int64(len(q.shared))
		q.e.mu.Unlock()
	}
	for _, st := range q.shared {
		q.e.release(st.se)
		if !st.it.run.failed() {
			st.it.feats = slices.Concat(st.feats...)
		}
	}
}

// scanItem scans one tile, or shares it through q (nil: never) when it has
// more than two chunks of candidates. Its error is ctx's: a tile that
// cannot be read or decoded fails its layer as source_unavailable.
func (e *Engine) scanItem(ctx context.Context, ev *evaluator, it *tileItem, q *tileQueue) error {
	se, err := e.acquireItem(ctx, it)
	if se == nil {
		if q != nil {
			q.decide(nil)
		}
		return err
	}
	cands := ev.candidates(se.s)
	if q != nil && len(cands) > 2*q.chunk {
		n := (len(cands) + q.chunk - 1) / q.chunk
		st := &sharedTile{it: it, se: se, cands: slices.Clone(cands), chunks: int32(n), feats: make([][]Feature, n)}
		q.decide(st) // before scanning, so that idle workers join at once
		return e.scanShared(ctx, ev, st)
	}
	if q != nil {
		q.decide(nil)
	}
	col := collector{run: it.run, z: &ev.z, e: e, ctx: ctx}
	err = ev.scan(ctx, se.s, cands, &col)
	e.release(se)
	if err != nil {
		return e.unreadable(ctx, it, err)
	}
	if !it.run.failed() {
		it.feats = col.feats
	}
	return nil
}

// acquireItem returns the shard of the item's tile; nil when there is nothing to
// scan: the layer has failed, the tile cannot be had (the layer fails
// source_unavailable) or ctx is done (its error).
func (e *Engine) acquireItem(ctx context.Context, it *tileItem) (*shardEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if it.run.failed() {
		return nil, nil
	}
	se, err := e.acquire(ctx, it.te)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e.log.Warn("engine: tile unavailable; layer answered source_unavailable",
			"layer_id", it.run.lr.LayerID, "release_id", it.run.lr.ReleaseID, "tile_key", it.te.Key, "err", err)
		it.run.fail(ReasonSourceUnavailable, "")
		return nil, nil
	}
	return se, nil
}

// unreadable answers a scan's error: ctx's, or a tile that cannot be
// decoded, which fails the layer as source_unavailable.
func (e *Engine) unreadable(ctx context.Context, it *tileItem, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	e.log.Warn("engine: tile unreadable; layer answered source_unavailable",
		"layer_id", it.run.lr.LayerID, "release_id", it.run.lr.ReleaseID, "tile_key", it.te.Key, "err", err)
	it.run.fail(ReasonSourceUnavailable, "")
	return nil
}

// scanShared evaluates chunks of st until none is left to claim. The
// shard is released by finish, once no worker can be reading it.
func (e *Engine) scanShared(ctx context.Context, ev *evaluator, st *sharedTile) error {
	for {
		c := st.next.Add(1) - 1
		if c >= st.chunks {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if st.it.run.failed() {
			continue
		}
		lo := int(c) * len(st.cands) / int(st.chunks)
		hi := int(c+1) * len(st.cands) / int(st.chunks)
		col := collector{run: st.it.run, z: &ev.z, e: e, ctx: ctx}
		if err := ev.scan(ctx, st.se.s, st.cands[lo:hi], &col); err != nil {
			if err := e.unreadable(ctx, st.it, err); err != nil {
				return err
			}
			continue
		}
		st.feats[c] = col.feats
	}
}

// candidates returns the rows of s whose index boxes meet a search box, in
// ev's buffer (valid until its next call).
func (ev *evaluator) candidates(s *shard) []int32 {
	cands := ev.cands[:0]
	for _, sb := range ev.boxes {
		cands = s.ix.search(toBox32(sb), cands)
	}
	if len(ev.boxes) > 1 {
		slices.Sort(cands)
		cands = slices.Compact(cands)
	}
	ev.cands = cands
	return cands
}

// scan evaluates candidate rows cands of s and hands members to col. It
// stops early when col fails a limit.
func (ev *evaluator) scan(ctx context.Context, s *shard, cands []int32, col *collector) error {
	for j, i := range cands {
		if j&255 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		w := s.geoms.raw(i)
		var member bool
		var d float64
		if hg := s.heavyGeom(i, w); hg != nil {
			member, d = ev.heavy(hg)
		} else if p, ok := wkbPointXY(w); ok {
			member, d = ev.point(p)
		} else {
			w, err := expandWKB(w, &ev.wkbScratch)
			if err != nil {
				return err
			}
			if err := ev.fg.decodeWKB(w); err != nil {
				return err
			}
			member, d = ev.feature(&ev.fg)
		}
		if member {
			if err := col.add(s, int(i), d); err != nil {
				return err
			}
			if col.run.failed() {
				return nil
			}
		}
	}
	return nil
}
