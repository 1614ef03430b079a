package ledger

import (
	"context"

	"github.com/google/uuid"
)

// DeliveryRowForTest returns a delivery's stored row as JSON text.
func DeliveryRowForTest(ctx context.Context, l *Ledger, id uuid.UUID) (string, error) {
	var s string
	err := l.pool.QueryRow(ctx, `SELECT row_to_json(d)::text FROM deliveries d WHERE delivery_id = $1`, id).Scan(&s)
	return s, err
}
