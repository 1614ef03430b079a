package api

import (
	"context"
	"errors"
	"time"

	"siteenv/internal/phase"
	"siteenv/ledger"
)

// nowRunner is the in-request part of the job runner (jobs.Runner.RunNow):
// a query admitted running in this process executes at once, beside the
// workers, without a claim and a hand-over.
type nowRunner interface {
	RunNow(ctx context.Context, q ledger.Query, d time.Duration) (row ledger.Query, done, accepted bool)
	RunLimits() (maxRunning int, attempt time.Duration, ok bool)
}

// admitQuery counts the query against the account's admissions and stores
// it, in one round trip (ledger.AdmitQuery): running, for this process to
// execute, when the server has a runner that runs queries in the request
// and the account runs fewer than its limit; queued otherwise.
func (s *Server) admitQuery(r *request, q ledger.Query) (ledger.Query, error) {
	lim := ledger.AdmitLimits{
		QueryLimits: ledger.QueryLimits{MaxQueued: Limits["max_queued_queries"], MaxRetainedBytes: Limits["max_retained_result_bytes"]},
		PerMinute:   queryAdmissionsPerMinute,
	}
	if nr, ok := s.runner.(nowRunner); ok {
		lim.MaxRunning, lim.Attempt, lim.RunNow = nr.RunLimits()
	}
	res, err := s.led.AdmitQuery(r.c, q, lim)
	if errors.Is(err, ledger.ErrRateLimited) || err == nil || errors.Is(err, ledger.ErrCapacity) {
		if rerr := s.checkRate(r, ledger.BucketQueryAdmissions, queryAdmissionsPerMinute, res.Window); rerr != nil {
			return ledger.Query{}, rerr
		}
	}
	return res.Query, err
}

// runQuery runs q in this request when it was admitted running, and waits
// up to d for it; a queued q is left to the runner's workers, woken and
// waited for as before. It returns the finished row when one was handed
// over (its ID is then q's), else the zero Query: the caller reads the
// ledger.
func (s *Server) runQuery(r *request, q ledger.Query, d time.Duration) ledger.Query {
	if s.runner == nil {
		return ledger.Query{}
	}
	defer r.phases.Done(phase.Wait, r.phases.Start())
	if nr, ok := s.runner.(nowRunner); ok && q.Status == ledger.QueryRunning {
		row, done, accepted := nr.RunNow(r.c, q, d)
		if accepted {
			if done {
				return row
			}
			return ledger.Query{}
		}
		// The runner is stopping: hand the query to the queue, where a
		// worker of this or another replica claims it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.c), claimSettleTimeout)
		defer cancel()
		if _, err := s.led.RequeueQuery(ctx, q.ID); err != nil {
			s.log.Warn("requeue of a query admitted running failed; its attempt lapses and the janitor requeues it",
				"query_id", q.ID, "err", err)
		}
	}
	s.runner.Notify()
	done, _ := s.runner.Wait(r.c, q.ID, d)
	return done
}
