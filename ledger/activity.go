package ledger

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Activity is one audit record: bounded metadata, never keys, tokens, raw
// inputs or results.
type Activity struct {
	ID           uuid.UUID
	Operation    string
	Outcome      string
	RequestID    uuid.UUID
	HTTPStatus   int
	ErrorCode    *string
	ResourceType *string
	ResourceID   *string
	CreatedAt    time.Time
}

// RecordActivity appends an audit record for an integration, durably.
func (l *Ledger) RecordActivity(ctx context.Context, account, integration uuid.UUID, a Activity) error {
	return l.recordActivity(ctx, account, integration, a, false)
}

// RecordReadActivity appends the audit record of a read with a relaxed
// commit: a PostgreSQL crash may lose the last moments of read records
// (see relaxed.go); the records of writes go through RecordActivity.
func (l *Ledger) RecordReadActivity(ctx context.Context, account, integration uuid.UUID, a Activity) error {
	return l.recordActivity(ctx, account, integration, a, true)
}

const insertActivitySQL = `INSERT INTO activity (activity_id, account_id, integration_id, operation, outcome, request_id,
			http_status, error_code, resource_type, resource_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

func (l *Ledger) recordActivity(ctx context.Context, account, integration uuid.UUID, a Activity, relaxed bool) error {
	if a.ID == uuid.Nil {
		a.ID = newID()
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = l.now()
	}
	exec := l.pool.Exec
	if relaxed {
		exec = l.execRelaxed
	}
	_, err := exec(ctx, insertActivitySQL,
		a.ID, account, integration, a.Operation, a.Outcome, a.RequestID, a.HTTPStatus, a.ErrorCode, a.ResourceType, a.ResourceID, a.CreatedAt)
	return translate(err)
}

// ActivityFilter narrows ListActivity. Zero fields do not filter.
type ActivityFilter struct {
	Operation     string
	Outcome       string
	RequestID     *uuid.UUID
	CreatedFrom   *time.Time // inclusive
	CreatedBefore *time.Time // exclusive
	// After continues a traversal after this (created_at, id), newest first.
	AfterTime *time.Time
	AfterID   uuid.UUID
	Limit     int
}

const listActivitySQL = `SELECT activity_id, operation, outcome, request_id, http_status, error_code, resource_type, resource_id, created_at
		FROM activity
		WHERE integration_id = $1
		  AND ($2 = '' OR operation = $2)
		  AND ($3 = '' OR outcome = $3)
		  AND ($4::uuid IS NULL OR request_id = $4)
		  AND ($5::timestamptz IS NULL OR created_at >= $5)
		  AND ($6::timestamptz IS NULL OR created_at < $6)
		  AND ($7::timestamptz IS NULL OR (created_at, activity_id) < ($7, $8))
		ORDER BY created_at DESC, activity_id DESC
		LIMIT $9`

// ListActivity returns an integration's activity, newest first, at most
// f.Limit+1 records so the caller can tell whether more exist.
//
// It first waits for the read records this process has queued (see
// QueueReadActivity), so the feed shows every read answered here before.
func (l *Ledger) ListActivity(ctx context.Context, integration uuid.UUID, f ActivityFilter) ([]Activity, error) {
	if err := l.FlushActivity(ctx); err != nil {
		return nil, err
	}
	rows, err := l.pool.Query(ctx, listActivitySQL,
		integration, f.Operation, f.Outcome, f.RequestID, f.CreatedFrom, f.CreatedBefore, f.AfterTime, f.AfterID, f.Limit+1)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []Activity
	for rows.Next() {
		var a Activity
		if err := rows.Scan(&a.ID, &a.Operation, &a.Outcome, &a.RequestID, &a.HTTPStatus, &a.ErrorCode, &a.ResourceType, &a.ResourceID, &a.CreatedAt); err != nil {
			return nil, translate(err)
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}
