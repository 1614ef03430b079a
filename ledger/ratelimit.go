package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// RateWindow is an account's count in the current fixed window of a bucket.
type RateWindow struct {
	// Hits counted in the window (including the one just counted, for Count).
	Hits int
	// Reset is the time left in the window.
	Reset time.Duration
}

// Hit counts one event for account in bucket's current fixed window and reports
// whether the count is within limit. Counting happens in PostgreSQL so the limit
// holds across every key of the account and every server replica. retryAfter is
// the time left in the window when the limit is exceeded.
func (l *Ledger) Hit(ctx context.Context, account uuid.UUID, bucket string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error) {
	w, err := l.Count(ctx, account, bucket, window)
	if err != nil {
		return false, 0, err
	}
	if w.Hits <= limit {
		return true, 0, nil
	}
	return false, w.Reset, nil
}

// Count counts one event for account in bucket's current fixed window and
// returns the window after counting; Hit compares it with a limit.
func (l *Ledger) Count(ctx context.Context, account uuid.UUID, bucket string, window time.Duration) (RateWindow, error) {
	now := l.now()
	start := now.Truncate(window)
	var hits int
	err := l.pool.QueryRow(ctx, `INSERT INTO rate_windows (account_id, bucket, window_start, hits) VALUES ($1, $2, $3, 1)
		ON CONFLICT (account_id, bucket, window_start) DO UPDATE SET hits = rate_windows.hits + 1
		RETURNING hits`, account, bucket, start).Scan(&hits)
	if err != nil {
		return RateWindow{}, translate(err)
	}
	if hits == 1 {
		// First hit of a new window: drop this account's finished windows.
		if err := l.dropFinishedWindows(ctx, account, bucket, start); err != nil {
			return RateWindow{}, err
		}
	}
	return RateWindow{Hits: hits, Reset: start.Add(window).Sub(now)}, nil
}

// dropFinishedWindows deletes account's windows of bucket before start.
func (l *Ledger) dropFinishedWindows(ctx context.Context, account uuid.UUID, bucket string, start time.Time) error {
	_, err := l.pool.Exec(ctx, `DELETE FROM rate_windows WHERE account_id = $1 AND bucket = $2 AND window_start < $3`,
		account, bucket, start)
	return translate(err)
}

// Peek reads account's count in bucket's current window without counting.
func (l *Ledger) Peek(ctx context.Context, account uuid.UUID, bucket string, window time.Duration) (RateWindow, error) {
	now := l.now()
	start := now.Truncate(window)
	var hits int
	err := l.pool.QueryRow(ctx, `SELECT hits FROM rate_windows WHERE account_id = $1 AND bucket = $2 AND window_start = $3`,
		account, bucket, start).Scan(&hits)
	if err = translate(err); err != nil && !errors.Is(err, ErrNotFound) {
		return RateWindow{}, err
	}
	return RateWindow{Hits: hits, Reset: start.Add(window).Sub(now)}, nil
}
