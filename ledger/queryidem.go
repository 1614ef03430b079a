package ledger

import (
	"context"

	"github.com/google/uuid"
)

// queryByIdemKeySQL reads the account's query admitted under an
// integration's Idempotency-Key (migration 0021).
const queryByIdemKeySQL = `SELECT ` + queryColumns + ` FROM queries
	WHERE integration_id = $1 AND idem_key = $2 AND account_id = $3 ORDER BY created_at LIMIT 1`

// QueryByIdemKey reads the query of account admitted under the
// integration's Idempotency-Key key: a retry that took the key's claim
// over from a process that died before it answered (IdemClaim.TookOver)
// finds there the query that process's admission committed, and answers
// with it instead of admitting another. ErrNotFound: none (the admission
// did not commit, or never ran).
func (l *Ledger) QueryByIdemKey(ctx context.Context, integration, account uuid.UUID, key string) (Query, error) {
	q, err := scanQuery(l.pool.QueryRow(ctx, queryByIdemKeySQL, integration, key, account))
	return q, translate(err)
}
