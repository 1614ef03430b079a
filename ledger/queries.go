package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Query statuses.
const (
	QueryQueued    = "queued"
	QueryRunning   = "running"
	QuerySucceeded = "succeeded"
	QueryPartial   = "partial"
	QueryFailed    = "failed"
	QueryCancelled = "cancelled"
)

// ErrCapacity: the account's query queue or retained storage is full.
var ErrCapacity = newError("ledger: query capacity exceeded")

// FrozenLayer is what a query captured of a layer when it was created.
type FrozenLayer struct {
	LayerID       string          `json:"layer_id"`
	ReleaseID     *string         `json:"release_id"`
	SectionKey    string          `json:"section_key"`
	SchemaVersion string          `json:"schema_version"`
	FieldSchema   json.RawMessage `json:"field_schema"`
	Sources       json.RawMessage `json:"sources"`
	Coverage      json.RawMessage `json:"coverage"`
}

// LayerOutcome is one layer's result.
type LayerOutcome struct {
	LayerID    string `json:"layer_id"`
	DataStatus string `json:"data_status"`
	Reason     string `json:"reason,omitempty"`
	Coverage   string `json:"coverage"`
	Count      *int64 `json:"count"`
}

// Query is an asynchronous spatial query.
type Query struct {
	ID              uuid.UUID
	AccountID       uuid.UUID
	IntegrationID   uuid.UUID
	SiteID          uuid.UUID
	SiteGeometry    json.RawMessage
	RadiusM         float64
	LayerIDs        []string
	IncludeGeometry bool
	Frozen          []FrozenLayer
	Status          string
	Outcome         []LayerOutcome
	ResultKey       *string
	ResultBytes     int64
	ResultCount     *int64
	Attempts        int
	CreatedAt       time.Time
	ComputedAt      *time.Time
	ExpiresAt       *time.Time
	ReleasedAt      *time.Time
}

const queryColumns = `query_id, account_id, integration_id, site_id, site_geometry, radius_m, layer_ids, include_geometry, ` + queryFrozenSQL + `, status,
	outcome, result_key, result_bytes, result_count, attempts, created_at, computed_at, expires_at, released_at`

func scanQuery(row pgx.Row) (Query, error) {
	var q Query
	var frozen, outcome []byte
	err := row.Scan(&q.ID, &q.AccountID, &q.IntegrationID, &q.SiteID, &q.SiteGeometry, &q.RadiusM, &q.LayerIDs, &q.IncludeGeometry,
		&frozen, &q.Status, &outcome, &q.ResultKey, &q.ResultBytes, &q.ResultCount, &q.Attempts, &q.CreatedAt, &q.ComputedAt,
		&q.ExpiresAt, &q.ReleasedAt)
	if err != nil {
		return q, err
	}
	if err := json.Unmarshal(frozen, &q.Frozen); err != nil {
		return q, err
	}
	if outcome != nil {
		if err := json.Unmarshal(outcome, &q.Outcome); err != nil {
			return q, err
		}
	}
	return q, nil
}

// QueryLimits are the per-account admission limits.
type QueryLimits struct {
	MaxQueued        int64
	MaxRetainedBytes int64
}

// CreateQuery admits a query: within the account's queue and retained-bytes
// limits (else ErrCapacity) it is stored queued, its inputs frozen.
func (l *Ledger) CreateQuery(ctx context.Context, q Query, lim QueryLimits) (Query, error) {
	q.ID, q.Status, q.CreatedAt = newID(), QueryQueued, l.now()
	frozen, err := l.frozenRefs(ctx, q.Frozen)
	if err != nil {
		return Query{}, err
	}
	// One round trip (lockedRelaxed): the account's lock keeps its limits
	// exact across replicas.
	var inserted bool
	locked, err := l.lockedRelaxed(ctx, q.AccountID, func(b *pgx.Batch) {
		b.Queue(createQuerySQL, q.ID, q.AccountID, q.IntegrationID, q.SiteID, q.SiteGeometry, q.RadiusM, q.LayerIDs, q.IncludeGeometry,
			frozen, q.CreatedAt, lim.MaxQueued, lim.MaxRetainedBytes)
	}, func(br pgx.BatchResults) (err error) {
		var id uuid.UUID
		inserted, err = scanOptional(br.QueryRow(), &id)
		return err
	})
	switch {
	case err != nil:
		return Query{}, err
	case !locked:
		return Query{}, ErrNotFound
	case !inserted:
		return Query{}, ErrCapacity
	}
	return q, nil
}

// createQuerySQL inserts a queued query when the account (locked by the
// statement before it) has fewer than $11 queued and under $12 bytes of
// retained results; no row otherwise.
var createQuerySQL = `INSERT INTO queries (query_id, account_id, integration_id, site_id, site_geometry, radius_m, layer_ids,
		include_geometry, frozen_refs, status, created_at)
	SELECT $1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::jsonb, $6::double precision, $7::text[], $8::boolean, $9::bytea[], 'queued', $10::timestamptz
	FROM ` + queryUsageOf("$2::uuid") + ` u
	WHERE u.queued < $11 AND u.retained < $12 AND EXISTS (SELECT 1 FROM accounts WHERE account_id = $2::uuid)
	RETURNING query_id`

// Query reads one of an account's queries.
func (l *Ledger) Query(ctx context.Context, account, id uuid.UUID) (Query, error) {
	q, err := scanQuery(l.pool.QueryRow(ctx, querySQL, id, account))
	return q, translate(err)
}

// QueryLive is what of a finished query can still change: its result is
// released (DELETE) or dropped at expiry. Its status is read too, so a
// caller holding an earlier copy sees when that copy is stale.
type QueryLive struct {
	Status      string
	ResultKey   *string
	ResultBytes int64
	ReleasedAt  *time.Time
}

// QueryLive reads a query's live columns; a query of another account is
// ErrNotFound, as with Query.
func (l *Ledger) QueryLive(ctx context.Context, account, id uuid.UUID) (QueryLive, error) {
	var v QueryLive
	err := l.pool.QueryRow(ctx, queryLiveSQL, id, account).
		Scan(&v.Status, &v.ResultKey, &v.ResultBytes, &v.ReleasedAt)
	return v, translate(err)
}

// QueryStatus reads a query's status alone: workers poll it to stop
// executing a query cancelled meanwhile.
func (l *Ledger) QueryStatus(ctx context.Context, id uuid.UUID) (string, error) {
	var status string
	err := l.pool.QueryRow(ctx, queryStatusSQL, id).Scan(&status)
	return status, translate(err)
}

// ClaimQuery hands the oldest queued query whose account runs fewer than
// maxRunning queries to a worker, for attempt (then it may be reclaimed).
// Replicas share the queue: FOR UPDATE SKIP LOCKED. ErrNotFound: nothing to do.
func (l *Ledger) ClaimQuery(ctx context.Context, maxRunning int, attempt time.Duration) (Query, error) {
	// Two round trips in the common case, each a pipelined batch (was six):
	// open the transaction and pick the queued candidates; then lock the
	// first candidate's account, claim the query if the account runs fewer
	// than maxRunning, and commit. The UPDATE is a statement after the lock,
	// so under READ COMMITTED its count sees every claim committed before
	// the lock was granted: exact across replicas, as before. A candidate
	// whose account is full ends that transaction and the next try skips
	// the account.
	var skip []uuid.UUID
	for {
		q, full, err := l.claimOnce(ctx, maxRunning, attempt, skip)
		if err != nil {
			return Query{}, translate(err)
		}
		if full == uuid.Nil {
			return q, nil
		}
		skip = append(skip, full)
	}
}

// claimOnce tries the oldest queued query of an account not in skip. It
// returns the claimed query, or the account found running maxRunning
// (nothing claimed), or pgx.ErrNoRows when no query is ready.
func (l *Ledger) claimOnce(ctx context.Context, maxRunning int, attempt time.Duration, skip []uuid.UUID) (Query, uuid.UUID, error) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return Query{}, uuid.Nil, err
	}
	// A connection left inside the transaction by an error is closed by
	// the pool on release, never reused.
	defer conn.Release()
	if skip == nil {
		skip = []uuid.UUID{}
	}
	// Relaxed commit: see relaxed.go for what a crash could lose.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(nextQueuedSQL, skip)
	br := conn.SendBatch(ctx, b)
	var id, account uuid.UUID
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.QueryRow().Scan(&id, &account)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = conn.Exec(ctx, "COMMIT")
		if err == nil {
			err = pgx.ErrNoRows
		}
		return Query{}, uuid.Nil, err
	}
	if err != nil {
		return Query{}, uuid.Nil, err
	}
	now := l.now()
	b = &pgx.Batch{}
	// The account lock makes the running count exact across replicas.
	b.Queue(lockAccountSQL, account)
	b.Queue(claimQuerySQL, id, now, now.Add(attempt), account, maxRunning)
	b.Queue("COMMIT")
	br = conn.SendBatch(ctx, b)
	var locked uuid.UUID
	err = br.QueryRow().Scan(&locked)
	var q Query
	full := uuid.Nil
	if err == nil {
		q, err = scanQuery(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			full, err = account, nil
		}
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Query{}, uuid.Nil, err
	}
	return q, full, nil
}

// FinishQuery records a query's outcome and retained result, unless it was
// cancelled meanwhile (then the result is not kept: returns false).
func (l *Ledger) FinishQuery(ctx context.Context, id uuid.UUID, status string, outcome []LayerOutcome, resultKey string, resultBytes int64, resultCount *int64, retain time.Duration) (bool, error) {
	_, kept, err := l.FinishQueryRow(ctx, Query{ID: id}, status, outcome, resultKey, resultBytes, resultCount, retain)
	return kept, err
}

// FinishQueryRow is FinishQuery of q (the row as claimed) returning q as
// now stored when kept: the columns the finish wrote, read back from the
// statement, over the claimed row's unchanged ones. The worker hands it to
// a request waiting for the query, which then need not read it back.
//
// The finish names the attempt it ran (q.Attempts, as RenewJobLeases does):
// an attempt that stalled beyond its lease, whose query was requeued and
// claimed again, finds the query running in another attempt and writes
// nothing (kept false), so it cannot overwrite the new owner's finish.
// q.Attempts 0 (FinishQuery) finishes whichever attempt runs.
func (l *Ledger) FinishQueryRow(ctx context.Context, q Query, status string, outcome []LayerOutcome, resultKey string, resultBytes int64, resultCount *int64, retain time.Duration) (Query, bool, error) {
	id := q.ID
	oj, err := json.Marshal(outcome)
	if err != nil {
		return Query{}, false, err
	}
	now := l.now()
	var key *string
	var expires *time.Time
	if resultKey != "" {
		key = &resultKey
		e := now.Add(retain)
		expires = &e
	}
	// Relaxed commit (see relaxed.go for what a crash could lose), in one
	// round trip.
	var oc []byte
	err = l.queryRowRelaxed(ctx, func(row pgx.Row) error {
		return row.Scan(&q.Status, &oc, &q.ResultKey, &q.ResultBytes, &q.ResultCount, &q.Attempts, &q.ComputedAt, &q.ExpiresAt, &q.ReleasedAt)
	}, `UPDATE queries SET status = $2, outcome = $3, result_key = $4, result_bytes = $5, result_count = $6,
			computed_at = $7, expires_at = $8, claimed_until = NULL
		WHERE query_id = $1 AND status = 'running' AND ($9::int = 0 OR attempts = $9)
		RETURNING status, outcome, result_key, result_bytes, result_count, attempts, computed_at, expires_at, released_at`,
		id, status, oj, key, resultBytes, resultCount, now, expires, q.Attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return Query{}, false, nil // no longer running in q's attempt: cancelled or taken over
	}
	if err == nil {
		q.Outcome = nil
		err = json.Unmarshal(oc, &q.Outcome)
	}
	if err != nil {
		return Query{}, false, translate(err)
	}
	return q, true, nil
}

// CancelOrRelease cancels a queued or running query, or releases a finished
// query's retained result. It returns the result key to delete (if any).
// Repeating it is safe.
func (l *Ledger) CancelOrRelease(ctx context.Context, account, id uuid.UUID) (resultKey string, err error) {
	err = l.tx(ctx, func(tx pgx.Tx) error {
		q, err := scanQuery(tx.QueryRow(ctx, lockQuerySQL, id, account))
		if err != nil {
			return err
		}
		now := l.now()
		switch q.Status {
		case QueryQueued, QueryRunning:
			_, err = tx.Exec(ctx, cancelQuerySQL, id, now)
			return err
		}
		if q.ResultKey != nil {
			resultKey = *q.ResultKey
		}
		_, err = tx.Exec(ctx, releaseResultSQL, id, now)
		return err
	})
	return resultKey, translate(err)
}

// ExpireResults drops retained results past their expiry and returns their
// keys for deletion from the store.
func (l *Ledger) ExpireResults(ctx context.Context) ([]string, error) {
	rows, err := l.pool.Query(ctx, expireResultsSQL, l.now())
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k *string
		if err := rows.Scan(&k); err != nil {
			return nil, translate(err)
		}
		if k != nil {
			keys = append(keys, *k)
		}
	}
	return keys, translate(rows.Err())
}

// FailStaleQueries fails queries queued longer than queueLimit (queue_timeout)
// and requeues running queries whose attempt expired (a crashed worker), up
// to maxAttempts; beyond that they fail.
func (l *Ledger) FailStaleQueries(ctx context.Context, queueLimit time.Duration, maxAttempts int) error {
	now := l.now()
	err := l.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, failQueuedSQL, now.Add(-queueLimit), now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, requeueStaleSQL, now, maxAttempts); err != nil {
			return err
		}
		return nil
	})
	return translate(err)
}

// QueryUsage is an account's query footprint for /usage and /context.
type QueryUsage struct {
	RetainedBytes    int64
	Queued, Running  int64
	NextResultExpiry *time.Time
}

// QueryUsage counts an account's retained results and queue.
func (l *Ledger) QueryUsage(ctx context.Context, account uuid.UUID) (QueryUsage, error) {
	var u QueryUsage
	err := l.pool.QueryRow(ctx, queryUsageSQL, account).Scan(&u.RetainedBytes, &u.Queued, &u.Running, &u.NextResultExpiry)
	return u, translate(err)
}

var queryUsageSQL = `SELECT u.retained, u.queued, u.running, u.next_expiry FROM ` + queryUsageOf("$1::uuid") + ` u`

// queryUsageOf is the usage of the account given as the SQL expression
// account, as one row (zeros for an account without queries): retained,
// queued, running (query_usage, kept by triggers: migration 0017) and
// next_expiry, the earliest retained result's expiry.
func queryUsageOf(account string) string {
	return `(SELECT coalesce(max(retained_bytes), 0) AS retained, coalesce(max(queued), 0) AS queued,
			coalesce(max(running), 0) AS running,
			(SELECT min(expires_at) FROM queries WHERE account_id = ` + account + ` AND result_key IS NOT NULL) AS next_expiry
		FROM query_usage WHERE account_id = ` + account + `)`
}

// ContextView is what GET /context reports from the ledger.
type ContextView struct {
	Account     Account
	Integration Integration
	Usage       QueryUsage
	// ReportPrice is the report-price setting; nil until an operator sets it.
	ReportPrice *int64
}

// contextSQL reads the account, the integration, the account's query usage
// (queryUsageSQL) and the report price in one statement; no row when the
// account or the integration is missing.
var contextSQL = `SELECT a.account_id, a.name, a.credit_balance, a.dataset_ids,
		i.integration_id, i.spend_limit, i.credits_used,
		u.retained, u.queued, u.running, u.next_expiry,
		(SELECT value FROM settings WHERE name = $3)
	FROM accounts a
	JOIN integrations i ON i.integration_id = $2
	CROSS JOIN LATERAL ` + queryUsageOf("a.account_id") + ` u
	WHERE a.account_id = $1`

// ContextReads reads what GET /context reports (Account, Integration,
// QueryUsage and the report price) in one statement, one round trip.
// ErrNotFound when the account or the integration is missing.
func (l *Ledger) ContextReads(ctx context.Context, account, integration uuid.UUID) (ContextView, error) {
	return scanContext(l.pool.QueryRow(ctx, contextSQL, account, integration, SettingReportPrice))
}

func scanContext(row pgx.Row) (ContextView, error) {
	var v ContextView
	a, in, u := &v.Account, &v.Integration, &v.Usage
	err := row.Scan(
		&a.ID, &a.Name, &a.CreditBalance, &a.DatasetIDs,
		&in.ID, &in.SpendLimit, &in.CreditsUsed,
		&u.RetainedBytes, &u.Queued, &u.Running, &u.NextResultExpiry,
		&v.ReportPrice)
	if err != nil {
		return ContextView{}, translate(err)
	}
	return v, nil
}

// QueryFilter narrows ListQueries.
type QueryFilter struct {
	SiteID        *uuid.UUID
	Status        string
	CreatedFrom   *time.Time
	CreatedBefore *time.Time
	// Snapshot excludes queries created after the traversal began.
	Snapshot  time.Time
	AfterTime *time.Time
	AfterID   uuid.UUID
	// DatasetIDs nil: all; otherwise only queries whose layers are all in it.
	DatasetIDs []string
	Limit      int
}

// ListQueries returns an account's queries newest first, at most Limit+1.
func (l *Ledger) ListQueries(ctx context.Context, account uuid.UUID, f QueryFilter) ([]Query, error) {
	rows, err := l.pool.Query(ctx, listQueriesSQL,
		account, f.SiteID, f.Status, f.CreatedFrom, f.CreatedBefore, f.Snapshot, f.AfterTime, f.AfterID, f.DatasetIDs, f.Limit+1)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []Query
	for rows.Next() {
		q, err := scanQuery(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, q)
	}
	return out, translate(rows.Err())
}

// The statements of queries, by what they do.
const (
	// listQueriesSQL reads an account's queries newest first, filtered.
	listQueriesSQL = `SELECT ` + queryColumns + ` FROM queries
		WHERE account_id = $1
		  AND ($2::uuid IS NULL OR site_id = $2)
		  AND ($3 = '' OR status = $3)
		  AND ($4::timestamptz IS NULL OR created_at >= $4)
		  AND ($5::timestamptz IS NULL OR created_at < $5)
		  AND created_at <= $6
		  AND ($7::timestamptz IS NULL OR (created_at, query_id) < ($7, $8))
		  AND ($9::text[] IS NULL OR layer_ids <@ $9)
		ORDER BY created_at DESC, query_id DESC LIMIT $10`
	// querySQL reads an account's query.
	querySQL = `SELECT ` + queryColumns + ` FROM queries WHERE query_id = $1 AND account_id = $2`
	// queryLiveSQL reads what of a finished query can still change.
	queryLiveSQL = `SELECT status, result_key, result_bytes, released_at FROM queries WHERE query_id = $1 AND account_id = $2`
	// queryStatusSQL reads a query's status.
	queryStatusSQL = `SELECT status FROM queries WHERE query_id = $1`
	// nextQueuedSQL locks the oldest queued query of an account not in $1.
	nextQueuedSQL = `SELECT query_id, account_id FROM queries WHERE status = 'queued' AND account_id <> ALL ($1)
		ORDER BY created_at, query_id FOR UPDATE SKIP LOCKED LIMIT 1`
	// claimQuerySQL starts an attempt of query $1 until $3 when its account runs fewer than $5 queries.
	claimQuerySQL = `UPDATE queries SET status = 'running', attempts = attempts + 1, started_at = $2, claimed_until = $3
		WHERE query_id = $1 AND (SELECT count(*) FROM queries WHERE account_id = $4 AND status = 'running') < $5
		RETURNING ` + queryColumns
	// lockQuerySQL reads and locks an account's query.
	lockQuerySQL = `SELECT ` + queryColumns + ` FROM queries WHERE query_id = $1 AND account_id = $2 FOR UPDATE`
	// cancelQuerySQL cancels a query at $2.
	cancelQuerySQL = `UPDATE queries SET status = 'cancelled', computed_at = $2, claimed_until = NULL WHERE query_id = $1`
	// releaseResultSQL releases a query's result at $2.
	releaseResultSQL = `UPDATE queries SET released_at = coalesce(released_at, $2), result_key = NULL, result_bytes = 0 WHERE query_id = $1`
	// expireResultsSQL drops the results expired by $1 and returns their keys.
	expireResultsSQL = `WITH expired AS (
			SELECT query_id, result_key FROM queries WHERE result_key IS NOT NULL AND expires_at <= $1 FOR UPDATE)
		UPDATE queries q SET result_key = NULL, result_bytes = 0 FROM expired e
		WHERE q.query_id = e.query_id RETURNING e.result_key`
	// failQueuedSQL fails the queries queued since $1 or earlier (queue_timeout).
	failQueuedSQL = `UPDATE queries SET status = 'failed', computed_at = $2,
				outcome = (SELECT jsonb_agg(jsonb_build_object('layer_id', l, 'data_status', 'unavailable', 'reason', 'queue_timeout', 'coverage', 'unknown', 'count', NULL))
				           FROM unnest(layer_ids) AS l)
			WHERE status = 'queued' AND created_at <= $1`
	// requeueStaleSQL requeues (or, after $2 attempts, fails) the running queries whose attempt lapsed by $1.
	requeueStaleSQL = `UPDATE queries SET status = CASE WHEN attempts >= $2 THEN 'failed' ELSE 'queued' END, claimed_until = NULL,
				outcome = CASE WHEN attempts >= $2 THEN (SELECT jsonb_agg(jsonb_build_object('layer_id', l, 'data_status', 'unavailable',
					'reason', 'source_unavailable', 'coverage', 'unknown', 'count', NULL)) FROM unnest(layer_ids) AS l) ELSE outcome END,
				computed_at = CASE WHEN attempts >= $2 THEN $1 ELSE computed_at END
			WHERE status = 'running' AND claimed_until <= $1`
)
