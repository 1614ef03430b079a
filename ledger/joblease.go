package ledger

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Query and report claims are leases, as idempotency claims are
// (idempotency.go).
//
// ClaimQuery and ClaimReport set claimed_until to the ledger clock plus the
// lease the caller passes; the process running the attempt renews it with
// RenewJobLeases while the attempt lives. A claim whose process died (kill
// -9, a lost machine) stops being renewed and lapses within one lease, and
// the next FailStaleQueries or FailStaleReports of any replica requeues it
// (or fails it, refunded for a report, once it used its attempts). How long
// one attempt may run is the worker's own deadline, not the claim's: a long
// build of a living process keeps its claim however long it takes.
//
// A renewal names the attempt it renews (the claim's attempts count), so a
// process that stalled beyond its lease, whose work was requeued and claimed
// again, cannot extend the new owner's claim as if it were its own.

// JobClaim names one claimed attempt of a query or a report: its id and the
// attempts count its claim recorded.
type JobClaim struct {
	ID      uuid.UUID
	Attempt int
}

// RenewJobLeases extends to now+lease the claims of the queries and reports
// named that are still running in the attempt named. It returns the claims
// it no longer found held (finished, cancelled, or requeued after a lapse);
// their workers should stop. A renewal lost with a PostgreSQL crash costs at
// most one lease: the next renewal writes it again.
func (l *Ledger) RenewJobLeases(ctx context.Context, queries, reports []JobClaim, lease time.Duration) (lost []JobClaim, err error) {
	until := l.now().Add(lease)
	for _, set := range []struct {
		claims []JobClaim
		sql    string
	}{
		{queries, `UPDATE queries q SET claimed_until = $3 FROM unnest($1::uuid[], $2::int[]) AS c(id, n)
			WHERE q.query_id = c.id AND q.attempts = c.n AND q.status = 'running' RETURNING q.query_id`},
		{reports, `UPDATE reports r SET claimed_until = $3 FROM unnest($1::uuid[], $2::int[]) AS c(id, n)
			WHERE r.report_id = c.id AND r.attempts = c.n AND r.status = 'running' RETURNING r.report_id`},
	} {
		if len(set.claims) == 0 {
			continue
		}
		ids := make([]uuid.UUID, len(set.claims))
		ns := make([]int32, len(set.claims))
		for i, c := range set.claims {
			ids[i], ns[i] = c.ID, int32(c.Attempt)
		}
		rows, err := l.pool.Query(ctx, set.sql, ids, ns, until)
		if err != nil {
			return nil, translate(err)
		}
		held := map[uuid.UUID]bool{}
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, translate(err)
			}
			held[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, translate(err)
		}
		for _, c := range set.claims {
			if !held[c.ID] {
				lost = append(lost, c)
			}
		}
	}
	return lost, nil
}
