package ledger

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// QueryFinish is a query's outcome as FinishQueryRow would store it,
// stamped when the attempt finished (PrepareFinish), for a caller that
// stores it together with something else (FinishQueryCompleted).
type QueryFinish struct {
	// Row is the query as it is once stored: the claimed row with the
	// finish's columns.
	Row     Query
	outcome []byte
}

// PrepareFinish stamps q's finish (as FinishQueryRow does) without storing
// it.
func (l *Ledger) PrepareFinish(q Query, status string, outcome []LayerOutcome, resultKey string, resultBytes int64, resultCount *int64, retain time.Duration) (QueryFinish, error) {
	oj, err := json.Marshal(outcome)
	if err != nil {
		return QueryFinish{}, err
	}
	now := l.now()
	q.Status, q.Outcome, q.ResultBytes, q.ResultCount, q.ComputedAt, q.ExpiresAt, q.ResultKey, q.ReleasedAt =
		status, outcome, resultBytes, resultCount, &now, nil, nil, nil
	if resultKey != "" {
		e := now.Add(retain)
		q.ResultKey, q.ExpiresAt = &resultKey, &e
	}
	return QueryFinish{Row: q, outcome: oj}, nil
}

// finishCompletedSQL is FinishQueryRow's update ($18-$26, the attempt
// checked as there) with completeAuditedSQL's ($1-$17) in one statement:
// the idempotency record and the audit record are written only when the
// finish is (the query was still running in that attempt).
const finishCompletedSQL = `WITH fin AS (
		UPDATE queries SET status = $18, outcome = $19, result_key = $20, result_bytes = $21, result_count = $22,
			computed_at = $23, expires_at = $24, claimed_until = NULL
		WHERE query_id = $25 AND status = 'running' AND ($26::int = 0 OR attempts = $26)
		RETURNING 1
	), done AS (
		UPDATE idempotency SET state = 'done', status = $4, content_type = $5, location = nullif($6, ''), body = $7, updated_at = $8,
			claim_token = NULL, lease_until = NULL
		WHERE integration_id = $1 AND idem_key = $2 AND claim_token = $3 AND state = 'running' AND EXISTS (SELECT 1 FROM fin)
		RETURNING 1
	), audit AS (
		INSERT INTO activity (activity_id, account_id, integration_id, operation, outcome, request_id,
			http_status, error_code, resource_type, resource_id, created_at)
		SELECT $9::uuid, $10::uuid, $1::uuid, $11::text, $12::text, $13::uuid, $14::integer, $15::text, $16::text, $17::text, $8::timestamptz
		WHERE EXISTS (SELECT 1 FROM fin)
	)
	SELECT (SELECT count(*) FROM fin), (SELECT count(*) FROM done)`

// FinishQueryCompleted stores f (FinishQueryRow's write) and the request's
// stored response and audit record (CompleteIdempotencyAuditedRelaxed's)
// in one relaxed statement, one round trip: what POST /queries writes once
// it has answered a query it ran in the request. kept is false when the
// query was no longer running in f.Row's attempt (cancelled, or taken over
// after its lease lapsed): then nothing is
// written and the claim stays the caller's. ErrClaimLost: the finish is
// kept but the claim was taken over (the response not stored).
func (l *Ledger) FinishQueryCompleted(ctx context.Context, f QueryFinish, integration uuid.UUID, key string, token uuid.UUID, r IdemResponse, account uuid.UUID, a Activity) (kept bool, err error) {
	if a.ID == uuid.Nil {
		a.ID = newID()
	}
	q := f.Row
	var fin, done int
	err = l.queryRowRelaxed(ctx, func(row pgx.Row) error { return row.Scan(&fin, &done) }, finishCompletedSQL,
		integration, key, token, r.Status, r.ContentType, r.Location, r.Body, l.now(),
		a.ID, account, a.Operation, a.Outcome, a.RequestID, a.HTTPStatus, a.ErrorCode, a.ResourceType, a.ResourceID,
		q.Status, f.outcome, q.ResultKey, q.ResultBytes, q.ResultCount, q.ComputedAt, q.ExpiresAt, q.ID, q.Attempts)
	if err != nil {
		return false, translate(err)
	}
	if fin == 0 {
		return false, nil
	}
	l.leases.remove(token)
	if done == 0 {
		return true, ErrClaimLost
	}
	return true, nil
}
