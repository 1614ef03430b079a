package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrRateLimited: AdmitQuery counted the admission over its limit; nothing
// was stored. AdmitResult.Window says when the window resets.
var ErrRateLimited = newError("ledger: rate limit exceeded")

// AdmitLimits are AdmitQuery's limits: the account's admission rate, its
// queue and retained bytes (CreateQuery's), and when the query may start at
// once in the admitting process (RunNow).
type AdmitLimits struct {
	QueryLimits
	// PerMinute admissions of the account (BucketQueryAdmissions).
	PerMinute int
	// RunNow: store the query running, claimed by the caller for one Lease
	// (which its runner renews, as a worker's claim: joblease.go), when the
	// account runs fewer than MaxRunning queries; queued otherwise, for a
	// runner to claim.
	RunNow     bool
	MaxRunning int
	Lease      time.Duration
}

// AdmitResult is what AdmitQuery counted and stored.
type AdmitResult struct {
	// Window is the admission's rate window after counting it.
	Window RateWindow
	// Query as stored: Status is QueryRunning when the caller holds its
	// attempt (then it must run it, or RequeueQuery it), else QueryQueued.
	Query Query
}

// admitQuerySQL counts the admission in the account's query_admissions
// window (rate_count: $13 is the window's index) and, within $14 per
// window, inserts the query as createQuerySQL does (within $11 queued and
// $12 retained bytes). With $15 it is inserted running, attempt 1, claimed
// until $16, when the account runs fewer than $17 queries. The counter's
// value is returned with the inserted status (NULL: not inserted). rc is
// read twice, so PostgreSQL evaluates it once (a CTE of a volatile call).
// The site is $4 (its id) and $5 (its geometry); AdmitQueryBatch's
// admitBatchSQL is the same statement of the site it registered.
var admitQuerySQL = `WITH ` + admitQueryCTEs("$4::uuid", "$5::jsonb", "$2::uuid", "$3::uuid")

// admitQueryCTEs is admitQuerySQL's CTEs with the query's site id and
// geometry, its account and its integration given as the SQL expressions
// siteID, siteGeometry, account and integration: the one home of the
// admission's statement, for AdmitQuery and AdmitQueryBatch (which may
// name the account and integration by the key's hash: keyAccountSQL).
func admitQueryCTEs(siteID, siteGeometry, account, integration string) string {
	return `rc AS (SELECT rate_count(` + account + `, 'query_admissions', $13::bigint) AS v),
	ins AS (
		INSERT INTO queries (query_id, account_id, integration_id, site_id, site_geometry, radius_m, layer_ids,
			include_geometry, frozen_refs, status, created_at, attempts, started_at, claimed_until)
		SELECT $1::uuid, ` + account + `, ` + integration + `, ` + siteID + `, ` + siteGeometry + `, $6::double precision, $7::text[], $8::boolean, $9::bytea[],
			CASE WHEN run THEN 'running' ELSE 'queued' END, $10::timestamptz,
			CASE WHEN run THEN 1 ELSE 0 END, CASE WHEN run THEN $10::timestamptz END, CASE WHEN run THEN $16::timestamptz END
		FROM rc, ` + queryUsageOf(account) + ` u,
			LATERAL (SELECT $15::boolean AND u.running < $17::bigint AS run) r
		WHERE (rc.v & 4294967295) <= $14::bigint AND u.queued < $11 AND u.retained < $12
		RETURNING status)
	SELECT rc.v, (SELECT status FROM ins) FROM rc`
}

// admitArgs are admitQuerySQL's arguments but the site's ($4, $5: site4
// and site5).
func admitArgs(q Query, frozen [][]byte, site4, site5 any, cur int64, lim AdmitLimits, now time.Time) []any {
	return []any{q.ID, q.AccountID, q.IntegrationID, site4, site5, q.RadiusM, q.LayerIDs, q.IncludeGeometry,
		frozen, q.CreatedAt, lim.MaxQueued, lim.MaxRetainedBytes, cur, lim.PerMinute, lim.RunNow, now.Add(lim.Lease), lim.MaxRunning}
}

// admitted is the admission's outcome from what admitQuerySQL returned
// (the counter's value v and the inserted status): q as stored, or
// ErrRateLimited or ErrCapacity with the window.
func admitted(q Query, v int64, status *string, lim AdmitLimits, now time.Time, cur int64) (AdmitResult, error) {
	res := AdmitResult{Window: rateWindow(v, now, time.Minute, cur)}
	switch {
	case res.Window.Hits > lim.PerMinute:
		return res, ErrRateLimited
	case status == nil:
		return res, ErrCapacity
	}
	q.Status = *status
	if q.Status == QueryRunning {
		q.Attempts = 1
	}
	res.Query = q
	return res, nil
}

// AdmitQuery admits a query in one round trip: it counts the admission in
// the account's rate window and, within the limit, stores the query with
// its inputs frozen (as CreateQuery), running when lim.RunNow allows. The
// account's row lock orders concurrent admissions of one account on every
// replica, so the queue, running and retained limits stay exact.
// Relaxed commit (relaxed.go). Errors: ErrRateLimited (over the rate,
// nothing stored; the result's Window is set), ErrCapacity, ErrNotFound (no
// such account). The admission is counted in every case but ErrNotFound: a
// count is not undone.
func (l *Ledger) AdmitQuery(ctx context.Context, q Query, lim AdmitLimits) (AdmitResult, error) {
	now := l.now()
	q.ID, q.Status, q.CreatedAt = newID(), QueryQueued, now
	frozen, err := l.frozenRefs(ctx, q.Frozen)
	if err != nil {
		return AdmitResult{}, err
	}
	cur := windowIndex(now, time.Minute)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(lockAccountSQL, q.AccountID)
	b.Queue(admitQuerySQL, admitArgs(q, frozen, q.SiteID, q.SiteGeometry, cur, lim, now)...)
	b.Queue("COMMIT")
	br := l.pool.SendBatch(ctx, b)
	var (
		locked bool
		v      int64
		status *string
	)
	err = func() error {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		var id any
		switch err := br.QueryRow().Scan(&id); {
		case err == nil:
			locked = true
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := br.QueryRow().Scan(&v, &status); err != nil {
			return err
		}
		_, err := br.Exec()
		return err
	}()
	// On an error the transaction is left aborted and pgxpool discards the
	// connection instead of reusing it (as with execRelaxed).
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return AdmitResult{}, translate(err)
	}
	if !locked {
		return AdmitResult{Window: rateWindow(v, now, time.Minute, cur)}, ErrNotFound
	}
	return admitted(q, v, status, lim, now, cur)
}
