package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/google/uuid"

	"siteenv/ledger"
	"siteenv/store"
)

// Write-behind: a query's result is recomputable (its site, radius, layers
// and releases are frozen in its row, and compute yields the same records
// in the same order every time), so an in-request attempt need not wait for
// its result file's write and fsyncs before the answer. It encodes the
// records into memory (pendingResults), the finish is stored and the
// request answered with pages read from that copy, and the file is written
// behind (writeBehind); the copy is dropped once the file is stored. A
// page that finds neither (the process died before the write, the write
// failed, another replica asks first) recomputes the result from the row
// (OpenResult): the same bytes, so its cursors' offsets hold. What a crash
// can lose is the file, never the answer: docs/operations.md, Durability.

// writeBehindMaxFeatures bounds the results written behind (about 0.5 KiB
// a record without geometry): a larger one is written before the answer,
// as a worker's is, so memory holds only small results awaiting their
// write.
const writeBehindMaxFeatures = 10_000

func chunkFeatures(chunks []recordChunk) int {
	n := 0
	for _, c := range chunks {
		n += len(c.feats)
	}
	return n
}

// pendingResults are the results answered before their files are stored,
// by key, and their bytes in all (bounded by Config.WriteBehindBytes).
// Safe for concurrent use.
type pendingResults struct {
	mu    sync.Mutex
	m     map[string]*pendingResult
	bytes int64
}

type pendingResult struct {
	data    []byte
	dropped bool // released (DropResult) before its write finished; under mu
}

// reserve holds data as key's pending result unless the results pending
// would then exceed limit bytes; false: not held (store it now).
func (p *pendingResults) reserve(key string, data []byte, limit int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.m[key]
	held := p.bytes + int64(len(data))
	if old != nil {
		held -= int64(len(old.data))
	}
	if held > limit {
		return false
	}
	p.m[key], p.bytes = &pendingResult{data: data}, held
	return true
}

// deleteLocked forgets key's pending result; p.mu held.
func (p *pendingResults) deleteLocked(key string) {
	if e := p.m[key]; e != nil {
		p.bytes -= int64(len(e.data))
		delete(p.m, key)
	}
}

func (p *pendingResults) get(key string) *pendingResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[key]
}

func (p *pendingResults) remove(key string) {
	p.mu.Lock()
	p.deleteLocked(key)
	p.mu.Unlock()
}

// stored removes e once its file is stored; it reports whether e was
// dropped meanwhile (then the caller deletes the file).
func (p *pendingResults) stored(key string, e *pendingResult) (dropped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[key] == e {
		p.deleteLocked(key)
	}
	return e.dropped
}

// DropResult forgets a result released or deleted before its file was
// written (DELETE of its query): its write, if still to finish, deletes
// the file it stored. The caller deletes the stored object as before.
func (r *Runner) DropResult(key string) {
	r.pending.mu.Lock()
	if e := r.pending.m[key]; e != nil {
		e.dropped = true
		r.pending.deleteLocked(key)
	}
	r.pending.mu.Unlock()
}

// writeBehind stores key's pending result in the background; Stop waits
// for it. A failed write is logged and its copy dropped: the result's next
// page recomputes it.
func (r *Runner) writeBehind(ctx context.Context, key string) {
	e := r.pending.get(key)
	if e == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	write := func() {
		err := r.storeResult(ctx, key, e.data)
		if r.pending.stored(key, e) && err == nil {
			err = r.store.Delete(ctx, key)
		}
		if err != nil && !errors.Is(err, store.ErrNotExist) {
			r.cfg.Logger.Warn("result write behind the answer failed; its next page recomputes it", "key", key, "err", err)
		}
	}
	r.behindMu.Lock()
	if r.behindClosed { // stopped: nobody would wait for it
		r.behindMu.Unlock()
		write()
		return
	}
	r.behind.Add(1)
	r.behindMu.Unlock()
	go func() {
		defer r.behind.Done()
		write()
	}()
}

// storeResult writes data under key; a key already stored (an earlier
// attempt's, or another replica's recompute: the same bytes) is success.
func (r *Runner) storeResult(ctx context.Context, key string, data []byte) error {
	if v, ok := r.store.(store.VolatilePutter); ok {
		// Recomputable, and checked for its size when opened: no fsync.
		if err := v.PutVolatile(ctx, key, data); err != nil && !errors.Is(err, store.ErrExists) {
			return err
		}
		return nil
	}
	w, err := r.resultWriter(ctx, key)
	if errors.Is(err, store.ErrExists) {
		return nil
	}
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Commit(); err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	return nil
}

// ErrResultDiffers: a result computed again did not come out as the
// stored row says it was answered (its size differs), so it is not served.
var ErrResultDiffers = errors.New("jobs: recomputed result differs from the one answered")

// OpenResult opens q's retained result for reading its pages: the copy in
// memory while its file is being written behind, else the stored file,
// else (lost with a crash, or its write failed) the result computed again
// from the query's frozen inputs, served and stored again. A result no
// longer retained (released, expired: the ledger's row has no key) is
// store.ErrNotExist. q needs its ID, account and result key (the row is
// read again before recomputing), and its bytes to catch a file whose
// write a crash cut short (PutVolatile): one of another size than the
// bytes answered is removed and computed again.
func (r *Runner) OpenResult(ctx context.Context, q ledger.Query) (store.Object, error) {
	if q.ResultKey == nil {
		return nil, store.ErrNotExist
	}
	key := *q.ResultKey
	if e := r.pending.get(key); e != nil {
		return bytesObject(e.data), nil
	}
	obj, err := r.store.Open(ctx, key)
	if err == nil && q.ResultBytes > 0 && obj.Size() != q.ResultBytes {
		obj.Close()
		r.cfg.Logger.Warn("result file cut short; computing it again", "query_id", q.ID, "bytes", obj.Size(), "answered", q.ResultBytes)
		if err := r.store.Delete(context.WithoutCancel(ctx), key); err != nil && !errors.Is(err, store.ErrNotExist) {
			return nil, err
		}
		err = store.ErrNotExist
	}
	if !errors.Is(err, store.ErrNotExist) {
		return obj, err
	}
	if e := r.pending.get(key); e != nil { // a recompute here finished meanwhile
		return bytesObject(e.data), nil
	}
	data, err := r.recompute(ctx, q.AccountID, q.ID, key)
	if err != nil {
		return nil, err
	}
	return bytesObject(data), nil
}

// recompute computes query id's result again from its row and stores it
// behind; store.ErrNotExist when the row no longer retains key.
func (r *Runner) recompute(ctx context.Context, account, id uuid.UUID, key string) ([]byte, error) {
	full, err := r.led.Query(ctx, account, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, store.ErrNotExist
	}
	if err != nil {
		return nil, err
	}
	if full.ResultKey == nil || *full.ResultKey != key || full.ResultBytes == 0 {
		return nil, store.ErrNotExist
	}
	c, err := r.compute(ctx, full)
	if err != nil {
		return nil, fmt.Errorf("jobs: recompute query %s: %w", full.ID, err)
	}
	var mem memWriter
	if _, err := writeRecords(&mem, c.chunks, full.IncludeGeometry, runtime.GOMAXPROCS(0)); err != nil {
		return nil, fmt.Errorf("jobs: recompute query %s: %w", full.ID, err)
	}
	if int64(len(mem.b)) != full.ResultBytes {
		r.cfg.Logger.Error("recomputed result differs", "query_id", full.ID, "bytes", len(mem.b), "answered", full.ResultBytes)
		return nil, fmt.Errorf("%w: query %s: %d bytes, answered %d", ErrResultDiffers, full.ID, len(mem.b), full.ResultBytes)
	}
	r.cfg.Logger.Info("result recomputed", "query_id", full.ID, "bytes", len(mem.b))
	if !r.pending.reserve(key, mem.b, r.cfg.WriteBehindBytes) {
		// Too much awaits its write already: stored now; a failure leaves
		// the next page to recompute it again.
		if err := r.storeResult(ctx, key, mem.b); err != nil {
			r.cfg.Logger.Warn("recomputed result not stored; its next page recomputes it", "key", key, "err", err)
		}
		return mem.b, nil
	}
	r.writeBehind(ctx, key)
	return mem.b, nil
}

// memWriter is a store.Writer into memory (a result written behind).
type memWriter struct{ b []byte }

func (m *memWriter) Write(p []byte) (int, error) {
	m.b = append(m.b, p...)
	return len(p), nil
}
func (m *memWriter) Commit() error { return nil }
func (m *memWriter) Abort()        {}

// bytesObject is a store.Object over bytes in memory.
type bytesObject []byte

func (o bytesObject) Size() int64  { return int64(len(o)) }
func (o bytesObject) Close() error { return nil }

func (o bytesObject) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("jobs: read at negative offset %d", off)
	}
	if off >= int64(len(o)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, o[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
