package queries

import (
	"time"

	"siteenv/ledger"
)

// Limits are an account's admission limits: its queue, its retained
// result bytes and its admissions a minute (counted in PostgreSQL, so they
// hold across replicas).
type Limits struct {
	MaxQueued, MaxRetainedBytes int64
	PerMinute                   int
}

// RunLimits are a runner's limits on queries it runs in the request that
// admitted them (jobs.Runner.RunLimits); ok is false when it runs none.
type RunLimits func() (maxRunning int, lease time.Duration, ok bool)

// Admit is the ledger's AdmitLimits of l, with the query admitted running
// in this process when run allows (nil: queued, for a worker).
func (l Limits) Admit(run RunLimits) ledger.AdmitLimits {
	lim := ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: l.MaxQueued, MaxRetainedBytes: l.MaxRetainedBytes}, PerMinute: l.PerMinute}
	if run != nil {
		lim.MaxRunning, lim.Lease, lim.RunNow = run()
	}
	return lim
}
