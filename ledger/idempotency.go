package ledger

import (
	"bytes"
	"context"
	"time"

	"github.com/google/uuid"
)

// IdemResponse is a stored first response, replayed byte for byte.
type IdemResponse struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// IdemState says what a claim found.
type IdemState int

const (
	// IdemFresh: the caller owns the key and must Complete or Release it.
	IdemFresh IdemState = iota
	// IdemReplay: a finished first response exists (IdemClaim.Response).
	IdemReplay
	// IdemMismatch: the key was used for a different logical request.
	IdemMismatch
	// IdemInFlight: the first request is still running.
	IdemInFlight
)

// IdemClaim is the outcome of ClaimIdempotency.
type IdemClaim struct {
	State    IdemState
	Response IdemResponse
}

// ClaimIdempotency claims (integration, key) for a request whose logical
// identity is (operation, fingerprint). A running claim older than stale is
// taken over, so a crashed replica does not block its key forever.
func (l *Ledger) ClaimIdempotency(ctx context.Context, integration uuid.UUID, key, operation string, fingerprint []byte, stale time.Duration) (IdemClaim, error) {
	now := l.now()
	tag, err := l.pool.Exec(ctx, `INSERT INTO idempotency (integration_id, idem_key, operation, fingerprint, state, created_at, updated_at)
		VALUES ($1, $2, $3, $4, 'running', $5, $5) ON CONFLICT DO NOTHING`, integration, key, operation, fingerprint, now)
	if err != nil {
		return IdemClaim{}, translate(err)
	}
	if tag.RowsAffected() == 1 {
		return IdemClaim{State: IdemFresh}, nil
	}
	var (
		op, state  string
		fp         []byte
		status     *int
		ctype, loc *string
		body       []byte
		updated    time.Time
	)
	err = l.pool.QueryRow(ctx, `SELECT operation, fingerprint, state, status, content_type, location, body, updated_at
		FROM idempotency WHERE integration_id = $1 AND idem_key = $2`, integration, key).
		Scan(&op, &fp, &state, &status, &ctype, &loc, &body, &updated)
	if err != nil {
		return IdemClaim{}, translate(err)
	}
	if op != operation || !bytes.Equal(fp, fingerprint) {
		return IdemClaim{State: IdemMismatch}, nil
	}
	if state == "done" {
		r := IdemResponse{Status: *status, Body: body}
		if ctype != nil {
			r.ContentType = *ctype
		}
		if loc != nil {
			r.Location = *loc
		}
		return IdemClaim{State: IdemReplay, Response: r}, nil
	}
	if now.Sub(updated) > stale {
		tag, err := l.pool.Exec(ctx, `UPDATE idempotency SET updated_at = $3
			WHERE integration_id = $1 AND idem_key = $2 AND state = 'running' AND updated_at = $4`, integration, key, now, updated)
		if err != nil {
			return IdemClaim{}, translate(err)
		}
		if tag.RowsAffected() == 1 {
			return IdemClaim{State: IdemFresh}, nil
		}
	}
	return IdemClaim{State: IdemInFlight}, nil
}

// CompleteIdempotency stores the first response for replay.
func (l *Ledger) CompleteIdempotency(ctx context.Context, integration uuid.UUID, key string, r IdemResponse) error {
	_, err := l.pool.Exec(ctx, `UPDATE idempotency SET state = 'done', status = $3, content_type = $4, location = nullif($5, ''), body = $6, updated_at = $7
		WHERE integration_id = $1 AND idem_key = $2`, integration, key, r.Status, r.ContentType, r.Location, r.Body, l.now())
	return translate(err)
}

// ReleaseIdempotency forgets a running claim so that a retry executes again
// (used after retryable failures, which must not be replayed).
func (l *Ledger) ReleaseIdempotency(ctx context.Context, integration uuid.UUID, key string) error {
	_, err := l.pool.Exec(ctx, `DELETE FROM idempotency WHERE integration_id = $1 AND idem_key = $2 AND state = 'running'`, integration, key)
	return translate(err)
}
