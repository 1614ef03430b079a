package ledger

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CompleteIdempotencyAuditedRelaxed is CompleteIdempotencyAudited committed
// relaxed (synchronous_commit off, relaxed.go): for a free operation whose
// inputs are frozen (POST /queries), where no WAL flush need precede the
// response. A PostgreSQL crash within the WAL writer's delay after it loses
// the stored response together with everything the request wrote before
// it (its site registration, its query and that query's states, all
// relaxed and flushed in order): the client holds an answer naming a query
// the ledger forgot (GET answers not_found), and its retry with the same
// Idempotency-Key runs the query afresh on the then current releases. No
// money, grant or receipt is involved: paid operations keep the durable
// CompleteIdempotencyAudited.
func (l *Ledger) CompleteIdempotencyAuditedRelaxed(ctx context.Context, integration uuid.UUID, key string, token uuid.UUID, r IdemResponse, account uuid.UUID, a Activity) error {
	l.leases.remove(token)
	if a.ID == uuid.Nil {
		a.ID = newID()
	}
	var done int
	err := l.queryRowRelaxed(ctx, func(row pgx.Row) error { return row.Scan(&done) }, completeAuditedSQL,
		integration, key, token, r.Status, r.ContentType, r.Location, r.Body, l.now(),
		a.ID, account, a.Operation, a.Outcome, a.RequestID, a.HTTPStatus, a.ErrorCode, a.ResourceType, a.ResourceID)
	if err != nil {
		return translate(err)
	}
	if done == 0 {
		return ErrClaimLost
	}
	return nil
}
