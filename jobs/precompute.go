package jobs

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/paulmach/orb"

	"siteenv/internal/phase"
	"siteenv/ledger"
)

// Precomputed is a query's engine answer begun before the query is
// admitted: a request whose key this replica saw admitted moments ago
// (api) runs the engine and encodes the records while the admission is in
// the ledger, so that the answer waits for the longer of the two instead
// of their sum. The answer depends only on the query's frozen inputs (site,
// radius, layers, releases, include_geometry), which the request holds
// before the admission stores them. The caller either hands it to the
// attempt (RunNowFrom) or discards it; Discard after a hand-over is a no-op,
// so callers defer it.
type Precomputed struct {
	q    ledger.Query
	done chan struct{}
	// ctx is the computation's, under the runner's and the attempt
	// timeout; cancel ends it once the answer is used (wait, Stored) or
	// discarded, so that it does not stay among the runner's contexts,
	// with its timer, until the timeout.
	ctx    context.Context
	cancel context.CancelFunc
	taken  atomic.Bool
	// slot is who holds the in-request slot the precomputation took:
	// slotHeld (its goroutine), slotReleased, or slotHanded (the attempt
	// that took the answer, which releases it when it ends).
	slot atomic.Int32
	// Set before done is closed.
	c    computed
	err  error
	mem  []byte // the encoded records, when few enough to answer from memory
	size int64
}

// precomputes counts the precomputations begun and those used (by an
// attempt, or stored with their admission: first), for tests and the bench
// (PrecomputeCounts, AnsweredFirst).
type precomputes struct{ begun, used, first atomic.Int64 }

// DecodedSite is the site of a query to precompute as its caller holds it
// decoded, so that the precomputation neither decodes the query's stored
// SiteGeometry again (about 1 ms for 10,000 positions) nor, when Checked,
// validates it again. The zero value hands nothing over: the stored JSON
// is decoded and validated as for any query.
type DecodedSite struct {
	// Geometry is exactly what geo.DecodeStored gives for the query's
	// SiteGeometry, coordinate for coordinate: the precomputed answer must
	// be the one computed from the stored JSON (compute). A geometry
	// stored as json.Marshal(geojson.NewGeometry(g)) decodes to g bit for
	// bit (geo's TestStoredRoundTrip). The caller does not modify it
	// once handed over: the engine reads it while the request goes on.
	Geometry orb.Geometry
	// Checked: Geometry passed geo.Validate (engine.Request.SiteChecked).
	Checked bool
}

// Precompute begins q's engine answer (q as it will be admitted, but for
// its ID and status), from site when it holds the geometry. Nil when the
// runner would not run q in the request now (RunLimits' ok is false): the
// attempt then computes as usual.
func (r *Runner) Precompute(q ledger.Query, site DecodedSite) *Precomputed {
	r.mu.Lock()
	if !r.mu.started || r.mu.claimCtx.Err() != nil || r.inRequest.Load() >= maxInRequest() {
		r.mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithTimeoutCause(r.mu.execCtx, r.cfg.Attempt, errAttemptTimeout)
	r.running.Add(1)
	r.inRequest.Add(1)
	r.mu.Unlock()
	r.pre.begun.Add(1)
	p := &Precomputed{q: q, done: make(chan struct{}), ctx: ctx, cancel: cancel}
	go func() {
		defer r.running.Done()
		defer p.releaseSlot(r)
		defer close(p.done)
		p.c, p.err = r.computeFrom(ctx, q, site)
		if p.err != nil || len(p.c.chunks) == 0 || chunkFeatures(p.c.chunks) > writeBehindMaxFeatures {
			return
		}
		tw := r.cfg.Phases.Start()
		m := &memWriter{}
		if size, err := writeRecords(m, p.c.chunks, q.IncludeGeometry, runtime.GOMAXPROCS(0)); err == nil {
			p.mem, p.size = m.b, size
		}
		r.cfg.Phases.Done(phase.ResultWrite, tw)
	}()
	return p
}

// The states of Precomputed.slot.
const (
	slotHeld int32 = iota
	slotReleased
	slotHanded
)

// releaseSlot gives the precomputation's in-request slot back as it ends,
// unless the attempt that took its answer holds it now.
func (p *Precomputed) releaseSlot(r *Runner) {
	if p.slot.CompareAndSwap(slotHeld, slotReleased) {
		r.inRequest.Add(-1)
	}
}

// handSlot passes the precomputation's in-request slot, while it still
// holds it, to the attempt that took its answer: the two are one query's
// work and count once against maxInRequest. Counted twice, a query whose
// admission returned before its engine finished held two of the slots,
// and the next admissions were queued for the workers while the slots
// were full. False: the slot is given back already (the attempt takes one
// of its own).
func (p *Precomputed) handSlot() bool {
	return p != nil && p.slot.CompareAndSwap(slotHeld, slotHanded)
}

// Discard stops a precomputation no attempt took (the admission refused
// the query, queued it, or failed). Safe on nil.
func (p *Precomputed) Discard() {
	if p != nil && !p.taken.Load() {
		p.cancel()
	}
}

// PrecomputeCounts are the precomputations begun and used so far.
func (r *Runner) PrecomputeCounts() (begun, used int64) {
	return r.pre.begun.Load(), r.pre.used.Load()
}

// AnsweredFirst counts the answers stored with their admission so far
// (AnswerFirst); each is also counted as used.
func (r *Runner) AnsweredFirst() int64 { return r.pre.first.Load() }

// precomputedKey carries an attempt's Precomputed in its context.
type precomputedKey struct{}

// take hands p to the attempt of q: nil unless p was begun for q's inputs
// (the site is the caller's to vouch for: the admission registers the site
// of the request's fingerprint, whose stored GeoJSON may be spelt
// differently).
func (p *Precomputed) take(q ledger.Query) *Precomputed {
	if p == nil || !sameInputs(p.q, q) || !p.taken.CompareAndSwap(false, true) {
		return nil
	}
	return p
}

func sameInputs(a, b ledger.Query) bool {
	return a.RadiusM == b.RadiusM && a.IncludeGeometry == b.IncludeGeometry && slices.Equal(a.LayerIDs, b.LayerIDs) &&
		slices.EqualFunc(a.Frozen, b.Frozen, func(x, y ledger.FrozenLayer) bool {
			return x.LayerID == y.LayerID && (x.ReleaseID == nil) == (y.ReleaseID == nil) &&
				(x.ReleaseID == nil || *x.ReleaseID == *y.ReleaseID) && bytes.Equal(x.Coverage, y.Coverage)
		})
}

// errRecompute: the precomputation failed; the attempt computes afresh,
// so that its outcome (an engine failure, its own interruption) is the one
// a computing attempt has.
var errRecompute = errors.New("jobs: recompute")

// wait is the precomputed answer, once ready (ctx: the attempt's).
func (p *Precomputed) wait(ctx context.Context) (computed, error) {
	defer p.cancel()
	select {
	case <-p.done:
		if p.err != nil {
			return computed{}, errRecompute
		}
		return p.c, nil
	case <-ctx.Done():
		return computed{}, ctx.Err()
	}
}
