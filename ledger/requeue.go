package ledger

import (
	"context"

	"github.com/google/uuid"
)

const requeueQuerySQL = `UPDATE queries SET status = 'queued', claimed_until = NULL, started_at = NULL,
			attempts = greatest(attempts - 1, 0)
		WHERE query_id = $1 AND status = 'running'`

// RequeueQuery hands a running query back to the queue: its worker is
// shutting down and stopped the attempt. The attempt is not counted (the
// query did nothing wrong), so a rolling restart never fails a query.
// It reports whether the query was running; a query finished or cancelled
// meanwhile is left as it is.
func (l *Ledger) RequeueQuery(ctx context.Context, id uuid.UUID) (bool, error) {
	tag, err := l.pool.Exec(ctx, requeueQuerySQL, id)
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}
