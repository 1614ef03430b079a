package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"siteenv/ledger"
)

// The in-request path: POST /queries admits a query running in its own
// process (ledger.AdmitQuery with RunNow) and executes it at once, beside
// the workers, instead of queueing it for a worker's claim (two round trips)
// and a hand-over. The attempt is the workers' own (execute: engine, result
// write, FinishQueryRow); it stops, requeues or fails exactly as a worker's
// does, and a crash of the process leaves the query running until its
// attempt lapses, when any replica's janitor requeues it (FailStaleQueries).

// RunNow executes q, which the caller admitted running for this process
// (ledger.AdmitQuery with AdmitLimits.RunNow and this runner's MaxRunning and
// Attempt), and waits up to d for it. It returns the finished row when the
// attempt kept one within d (done); the attempt goes on after d, as a
// worker's would. accepted is false when the runner is not started or is
// stopping: nothing ran, and the caller must hand q back (RequeueQuery).
func (r *Runner) RunNow(ctx context.Context, q ledger.Query, d time.Duration) (row ledger.Query, done, accepted bool) {
	r.mu.Lock()
	if !r.mu.started || r.mu.claimCtx.Err() != nil {
		r.mu.Unlock()
		return ledger.Query{}, false, false
	}
	execCtx := r.mu.execCtx
	r.running.Add(1)
	r.mu.Unlock()
	out := make(chan ledger.Query, 1)
	go func() {
		defer r.running.Done()
		var row ledger.Query
		defer func() { out <- row }() // buffered: never blocks
		if err := r.attemptNow(execCtx, q, &row); err != nil {
			r.cfg.Logger.Error("query attempt", "query_id", q.ID, "err", err)
		}
	}()
	if d <= 0 {
		return ledger.Query{}, false, true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case row = <-out:
		return row, row.ID == q.ID, true
	case <-t.C:
	case <-ctx.Done():
	}
	return ledger.Query{}, false, true
}

// RunLimits are the running limits RunNow's caller admits under: the
// account's MaxRunning and one Attempt; ok is false while the runner is not
// started or is stopping (RunNow would refuse: admit the query queued).
func (r *Runner) RunLimits() (maxRunning int, attempt time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg.MaxRunning, r.cfg.Attempt, r.mu.started && r.mu.claimCtx.Err() == nil
}

// attemptNow is runOnce's attempt of an already claimed q under execCtx:
// bounded by Attempt, stopped by a cancellation of the query, requeued when
// Stop's deadline interrupts it. row receives the finished row when kept.
func (r *Runner) attemptNow(execCtx context.Context, q ledger.Query, row *ledger.Query) error {
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
