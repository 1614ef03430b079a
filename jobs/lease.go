package jobs

import (
	"context"
	"sync"
	"time"

	"siteenv/ledger"
)

// Claims are leases (ledger/joblease.go). A worker's claim on a query or a
// report lasts Config.Lease on the ledger clock; while the attempt runs, this
// process renews every claim it holds every Lease/3 (so two renewals can fail
// before a living claim lapses), and every replica's janitor looks for
// lapsed claims every Lease/2. A replica killed mid-attempt therefore has its
// work requeued within about 1.5 leases and run by any living replica, while
// an attempt of a living process may take as long as Attempt or
// ReportAttempt allow.

// claimKind tells a query claim from a report claim.
type claimKind uint8

const (
	queryClaim claimKind = iota
	reportClaim
)

// heldClaims are the claims this Runner's attempts hold. Safe for concurrent
// use.
type heldClaims struct {
	mu struct {
		sync.Mutex
		claims map[ledger.JobClaim]claimKind
	}
}

// hold records a claim until the returned func is called (the attempt
// ended: finished, requeued or failed).
func (h *heldClaims) hold(kind claimKind, c ledger.JobClaim) (release func()) {
	h.mu.Lock()
	if h.mu.claims == nil {
		h.mu.claims = map[ledger.JobClaim]claimKind{}
	}
	h.mu.claims[c] = kind
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.mu.claims, c)
		h.mu.Unlock()
	}
}

func (h *heldClaims) list() (queries, reports []ledger.JobClaim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c, k := range h.mu.claims {
		if k == queryClaim {
			queries = append(queries, c)
		} else {
			reports = append(reports, c)
		}
	}
	return queries, reports
}

// RenewClaims extends the lease of every claim this Runner's attempts hold
// to Lease from now on the ledger clock. The renewal loop Start launches
// calls it every Lease/3; tests call it to stand for a living process.
func (r *Runner) RenewClaims(ctx context.Context) error {
	queries, reports := r.claims.list()
	if len(queries)+len(reports) == 0 {
		return nil
	}
	lost, err := r.led.RenewJobLeases(ctx, queries, reports, r.cfg.Lease)
	if err != nil {
		return err
	}
	for _, c := range lost {
		// Usually an attempt that finished while being renewed; otherwise
		// this process stalled beyond its lease and another replica took
		// the work over (a query's result is the same either way; a report
		// keeps the first revision to land).
		r.cfg.Logger.Debug("claim no longer held", "id", c.ID, "attempt", c.Attempt)
	}
	return nil
}

// renewClaims runs RenewClaims every Lease/3 until ctx ends. Real time paces
// it (it is this process being alive); the lease is on the ledger clock.
func (r *Runner) renewClaims(ctx context.Context) {
	t := time.NewTicker(r.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, r.cfg.Lease/3)
		err := r.RenewClaims(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("job lease renewal failed", "err", err)
		}
	}
}

// Recover requeues the queries and report builds whose claims lapsed (their
// process died), failing those that used MaxAttempts (a report refunded
// once), and fails queries queued past QueueLimit. The janitor runs it every
// Lease/2 and as part of every Sweep.
func (r *Runner) Recover(ctx context.Context) error {
	if err := r.led.FailStaleQueries(ctx, r.cfg.QueueLimit, r.cfg.MaxAttempts); err != nil {
		return err
	}
	failed, err := r.led.FailStaleReports(ctx, r.cfg.MaxAttempts)
	if err != nil {
		return err
	}
	for _, id := range failed {
		r.cfg.Logger.Error("report build failed: its attempts expired", "report_id", id, "reason_code", ReasonInternalError,
			"max_attempts", r.cfg.MaxAttempts)
	}
	return nil
}
