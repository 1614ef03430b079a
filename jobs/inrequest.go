package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"siteenv/internal/phase"
	"siteenv/ledger"
)

// The in-request path: POST /queries admits a query running in its own
// process (ledger.Admit with RunNow) and executes it at once, beside
// the workers, instead of queueing it for a worker's claim (two round trips)
// and a hand-over. The attempt is the workers' own (execute: engine, result
// write, FinishQueryRow); it stops, requeues or fails exactly as a worker's
// does, and a crash of the process leaves the query running until its
// attempt lapses, when any replica's janitor requeues it (FailStaleQueries).

// NowResult is what RunNow saw of its attempt within its wait.
type NowResult struct {
	// Accepted is false when the runner is not started or is stopping:
	// nothing ran, and the caller must hand the query back (RequeueQuery).
	Accepted bool
	// Finish, when set, is the attempt's finish handed to the caller: the
	// result is stored, and the caller must store the finish
	// (PendingFinish.Stored, after ledger.FinishQueryCompleted) or hand it
	// back (PendingFinish.Decline), in every case.
	Finish *PendingFinish
	// Row is the finished row when the attempt stored it itself within the
	// wait (Row.ID is then the query's).
	Row ledger.Query
}

// PendingFinish is an in-request attempt's finish, handed to the request
// that waits for it so that the request stores it with its own response in
// one round trip (ledger.FinishQueryCompleted). The attempt waits for the
// request's word: Stored, or Decline (then it stores the finish itself).
type PendingFinish struct {
	ledger.QueryFinish
	reply chan finishReply
	once  sync.Once
}

type finishReply struct {
	row      ledger.Query
	kept     bool
	err      error
	declined bool
}

// Stored reports that the caller stored the finish (kept: the query was
// still running) or failed to (err).
func (p *PendingFinish) Stored(kept bool, err error) {
	p.once.Do(func() { p.reply <- finishReply{row: p.Row, kept: kept, err: err} })
}

// Decline hands the finish back to the attempt, which stores it itself. A
// no-op after Stored: callers defer it.
func (p *PendingFinish) Decline() {
	p.once.Do(func() { p.reply <- finishReply{declined: true} })
}

// handoffKey carries an in-request attempt's handoff in its context
// (finishQuery).
type handoffKey struct{}

// handoff is how an in-request attempt hands its finish to the request:
// ch is taken while the request waits, and gone is closed once it stops
// waiting. The attempt's send waits for one or the other, so a finish
// ready before the request begins to wait (a precomputed answer) is still
// handed over rather than stored by the attempt.
type handoff struct {
	ch   chan *PendingFinish
	gone chan struct{}
	// release gives the attempt's in-request slot back (once): when it
	// hands its finish over, its engine work is done, and the slot bounds
	// that work, not the finish's wait for the request's store of it with
	// its response.
	release func()
}

// RunNow executes q, which the caller admitted running for this process
// (ledger.Admit with AdmitLimits.RunNow and this
// runner's MaxRunning and Attempt), and waits up to d for it. When the
// attempt finishes within d its finish is handed over (NowResult.Finish);
// after d the attempt goes on and stores it itself, as a worker's would.
func (r *Runner) RunNow(ctx context.Context, q ledger.Query, d time.Duration) NowResult {
	return r.RunNowFrom(ctx, q, d, nil)
}

// RunNowFrom is RunNow with q's answer precomputed (Precompute), when pre
// was begun for q's inputs; nil or another query's: computed as RunNow does.
func (r *Runner) RunNowFrom(ctx context.Context, q ledger.Query, d time.Duration, pre *Precomputed) NowResult {
	r.mu.Lock()
	if !r.mu.started || r.mu.claimCtx.Err() != nil {
		r.mu.Unlock()
		return NowResult{}
	}
	execCtx := r.mu.execCtx
	pre = pre.take(q) // before this returns: the caller discards what was not taken
	r.running.Add(1)
	if !pre.handSlot() {
		r.inRequest.Add(1)
	}
	r.mu.Unlock()
	out := make(chan ledger.Query, 1)
	h := handoff{ch: make(chan *PendingFinish), gone: make(chan struct{}), release: sync.OnceFunc(func() { r.inRequest.Add(-1) })}
	defer close(h.gone)
	go func() {
		defer r.running.Done()
		defer h.release()
		var row ledger.Query
		defer func() { out <- row }() // buffered: never blocks
		actx := context.WithValue(execCtx, handoffKey{}, h)
		if pre != nil {
			actx = context.WithValue(actx, precomputedKey{}, pre)
		}
		if err := r.attemptNow(actx, q, &row); err != nil {
			r.cfg.Logger.Error("query attempt", "query_id", q.ID, "err", err)
		}
	}()
	if d <= 0 {
		return NowResult{Accepted: true}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case p := <-h.ch:
		return NowResult{Accepted: true, Finish: p}
	case row := <-out:
		if row.ID == q.ID {
			return NowResult{Accepted: true, Row: row}
		}
	case <-t.C:
	case <-ctx.Done():
	}
	return NowResult{Accepted: true}
}

// finishQuery stores an attempt's finish (FinishQueryRow, timed as the
// Finish phase), or, for an in-request attempt whose request is still
// waiting, hands it to the request and takes the request's word on it (the
// request times its store as its own).
func (r *Runner) finishQuery(ctx context.Context, q ledger.Query, status string, outcome []ledger.LayerOutcome, key string, size int64, count *int64) (ledger.Query, bool, error) {
	if h, ok := ctx.Value(handoffKey{}).(handoff); ok {
		f, err := r.led.PrepareFinish(q, status, outcome, key, size, count, r.cfg.Retain)
		if err != nil {
			return ledger.Query{}, false, err
		}
		p := &PendingFinish{QueryFinish: f, reply: make(chan finishReply, 1)}
		h.release()
		select {
		case h.ch <- p:
			if rep := <-p.reply; !rep.declined {
				return rep.row, rep.kept, rep.err
			}
		case <-h.gone: // the request stopped waiting
		}
	}
	defer r.cfg.Phases.Done(phase.Finish, r.cfg.Phases.Start())
	return r.led.FinishQueryRow(context.WithoutCancel(ctx), q, status, outcome, key, size, count, r.cfg.Retain)
}

// RunLimits are the running limits RunNow's caller admits under: the
// account's MaxRunning and the claim's Lease; ok is false while the runner
// is not started or is stopping (RunNow would refuse), or while
// maxInRequest() attempts already run in requests: then the caller admits
// the query queued, for the workers.
func (r *Runner) RunLimits() (maxRunning int, lease time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok = r.mu.started && r.mu.claimCtx.Err() == nil && r.inRequest.Load() < maxInRequest()
	// The admitted query's claim is a lease like a worker's (lease.go):
	// attemptNow holds it, so this process renews it while the attempt
	// lives, and a crash lets any replica take it over within a lease.
	return r.cfg.MaxRunning, r.cfg.Lease, ok
}

// maxInRequest bounds the attempts running in requests at once (RunLimits),
// as Workers bounds the workers': a burst of requests from many accounts
// queues beyond it instead of running every query at once.
func maxInRequest() int64 { return int64(4 * runtime.GOMAXPROCS(0)) }

// attemptNow is runOnce's attempt of an already claimed q under execCtx:
// bounded by Attempt, stopped by a cancellation of the query, requeued when
// Stop's deadline interrupts it. row receives the finished row when kept.
func (r *Runner) attemptNow(execCtx context.Context, q ledger.Query, row *ledger.Query) error {
	defer r.claims.hold(queryClaim, ledger.JobClaim{ID: q.ID, Attempt: q.Attempts})()
	began := time.Now()
	tctx, cancelTimeout := context.WithTimeoutCause(execCtx, r.cfg.Attempt, errAttemptTimeout)
	defer cancelTimeout()
	actx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	stop := r.watchCancel(actx, q.ID, cancel)
	var rec recorded
	err := r.execute(actx, q, &rec, row)
	stop()
	if obs := r.cfg.ObserveAttempt; obs != nil {
		obs(attemptOutcome(actx, err, rec), time.Since(began))
	}
	if errors.Is(context.Cause(actx), errCancelled) {
		return nil // DELETE cancelled it: nothing to record
	}
	if !interrupted(actx) {
		return err
	}
	rctx, cancelRequeue := context.WithTimeout(context.WithoutCancel(execCtx), requeueTimeout)
	defer cancelRequeue()
	if _, rerr := r.led.RequeueQuery(rctx, q.ID); rerr != nil {
		rerr = fmt.Errorf("jobs: requeue interrupted query %s: %w", q.ID, rerr)
		r.mu.Lock()
		r.mu.requeueErrs = append(r.mu.requeueErrs, rerr)
		r.mu.Unlock()
		return rerr
	}
	return nil
}
