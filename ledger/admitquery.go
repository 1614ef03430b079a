package ledger

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrRateLimited: Admit counted the admission over its limit; nothing
// was stored. AdmitResult.Window says when the window resets.
var ErrRateLimited = newError("ledger: rate limit exceeded")

// AdmitLimits are Admit's limits: the account's admission rate, its
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

// AdmitResult is what an admission counted and stored.
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
// The site is $4 (its id) and $5 (its geometry); admitBatch's
// admitBatchSQL is the same statement of the site it registered.
var admitQuerySQL = `WITH ` + admitQueryCTEs("$4::uuid", "$5::jsonb", "$2::uuid", "$3::uuid")

// admitQueryCTEs is admitQuerySQL's CTEs with the query's site id and
// geometry, its account and its integration given as the SQL expressions
// siteID, siteGeometry, account and integration: the one home of the
// admission's statement, for admitClaimed and admitBatch (which may
// name the account and integration by the key's hash: keyAccountSQL).
func admitQueryCTEs(siteID, siteGeometry, account, integration string) string {
	return `rc AS (SELECT rate_count(` + account + `, 'query_admissions', $13::bigint) AS v),
	ins AS (
		INSERT INTO queries (query_id, account_id, integration_id, site_id, site_geometry, radius_m, layer_ids,
			include_geometry, frozen_refs, status, created_at, attempts, started_at, claimed_until, idem_key)
		SELECT $1::uuid, ` + account + `, ` + integration + `, ` + siteID + `, ` + siteGeometry + `, $6::double precision, $7::text[], $8::boolean, $9::bytea[],
			CASE WHEN run THEN 'running' ELSE 'queued' END, $10::timestamptz,
			CASE WHEN run THEN 1 ELSE 0 END, CASE WHEN run THEN $10::timestamptz END, CASE WHEN run THEN $16::timestamptz END,
			nullif($18::text, '')
		FROM rc, ` + queryUsageOf(account) + ` u,
			LATERAL (SELECT $15::boolean AND u.running < $17::bigint AS run) r
		WHERE (rc.v & 4294967295) <= $14::bigint AND u.queued < $11 AND u.retained < $12
		RETURNING status)
	SELECT rc.v, (SELECT status FROM ins) FROM rc`
}

// admitArgs are admitQuerySQL's arguments but the site's ($4, $5: site4
// and site5); $18 is the Idempotency-Key the query is admitted under
// (empty: none), stored with it (QueryByIdemKey).
func admitArgs(q Query, frozen [][]byte, site4, site5 any, cur int64, lim AdmitLimits, now time.Time, idemKey string) []any {
	return []any{q.ID, q.AccountID, q.IntegrationID, site4, site5, q.RadiusM, q.LayerIDs, q.IncludeGeometry,
		frozen, q.CreatedAt, lim.MaxQueued, lim.MaxRetainedBytes, cur, lim.PerMinute, lim.RunNow, now.Add(lim.Lease), lim.MaxRunning, idemKey}
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

// Admit is POST /queries' admission, the ledger's one (AdmitRequest): it
// counts the query in the account's rate window (PerMinute), stores it
// within the account's limits, running for the caller to run when
// Limits.RunNow allows, and relaxes its commit (relaxed.go). Its options
// choose the statement, each one round trip:
//   - IdemKey empty: the query alone, the key claimed and the site
//     registered by the caller (admitClaimed);
//   - IdemKey set: the claim, the site's registration and its sections'
//     check too, pipelined (admitBatch), the key authenticated by the same
//     round trip with Auth;
//   - Answer set (needs Auth): the query stored finished with its answer's
//     response and audit record, in one call of siteenv_admit_answered
//     (admitAnswered, migration 0020).
//
// Errors: ErrAdmissionCheck (a check before the count failed: nothing
// written), ErrRateLimited (over the rate; Window says when it resets),
// ErrCapacity, ErrNotFound (no such account), ErrAnswerNeedsAuth.
func (l *Ledger) Admit(ctx context.Context, ar AdmitRequest) (Admission, error) {
	switch {
	case ar.Claimed:
		return l.admitClaimed(ctx, ar.Query, ar.IdemKey, ar.Limits)
	case ar.Answer != nil:
		return l.admitAnswered(ctx, ar)
	}
	return l.admitBatch(ctx, ar)
}

// admitClaimed is Admit of a request whose key the caller claimed itself
// (AdmitRequest.Claimed) and whose site is registered (ar.Query's
// SiteID and SiteGeometry): one pipelined relaxed transaction
// (lockedRelaxed) counts the admission in the account's rate window and,
// within the limit, stores the query with its inputs frozen (as
// CreateQuery), running when lim.RunNow allows. The account's row lock
// orders concurrent admissions of one account on every replica, so the
// queue, running and retained limits stay exact. The admission is counted
// in every case but ErrNotFound: a count is not undone.
func (l *Ledger) admitClaimed(ctx context.Context, q Query, idemKey string, lim AdmitLimits) (Admission, error) {
	now := l.now()
	q.ID, q.Status, q.CreatedAt = newID(), QueryQueued, now
	frozen, err := l.frozenRefs(ctx, q.Frozen)
	if err != nil {
		return Admission{}, err
	}
	cur := windowIndex(now, time.Minute)
	var (
		v      int64
		status *string
	)
	locked, err := l.lockedRelaxed(ctx, q.AccountID, func(b *pgx.Batch) {
		b.Queue(admitQuerySQL, admitArgs(q, frozen, q.SiteID, q.SiteGeometry, cur, lim, now, idemKey)...)
	}, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&v, &status) })
	if err != nil {
		return Admission{}, err
	}
	if !locked {
		return Admission{AdmitResult: AdmitResult{Window: rateWindow(v, now, time.Minute, cur)}}, ErrNotFound
	}
	res, err := admitted(q, v, status, lim, now, cur)
	return Admission{AdmitResult: res}, err
}
