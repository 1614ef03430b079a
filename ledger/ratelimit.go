package ledger

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Hit counts one event for account in bucket's current fixed window and reports
// whether the count is within limit. Counting happens in PostgreSQL so the limit
// holds across every key of the account and every server replica. retryAfter is
// the time left in the window when the limit is exceeded.
func (l *Ledger) Hit(ctx context.Context, account uuid.UUID, bucket string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error) {
	now := l.now()
	start := now.Truncate(window)
	var hits int
	err = l.pool.QueryRow(ctx, `INSERT INTO rate_windows (account_id, bucket, window_start, hits) VALUES ($1, $2, $3, 1)
		ON CONFLICT (account_id, bucket, window_start) DO UPDATE SET hits = rate_windows.hits + 1
		RETURNING hits`, account, bucket, start).Scan(&hits)
	if err != nil {
		return false, 0, translate(err)
	}
	if hits == 1 {
		// First hit of a new window: drop this account's finished windows.
		if _, err := l.pool.Exec(ctx, `DELETE FROM rate_windows WHERE account_id = $1 AND bucket = $2 AND window_start < $3`,
			account, bucket, start); err != nil {
			return false, 0, translate(err)
		}
	}
	if hits <= limit {
		return true, 0, nil
	}
	return false, start.Add(window).Sub(now), nil
}
