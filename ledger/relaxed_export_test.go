package ledger

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// RelaxedSettingForTest sets the session's synchronous_commit on, then
// reads it inside a relaxed transaction and after it. With a pool of one
// connection both run on the same session.
func RelaxedSettingForTest(ctx context.Context, l *Ledger) (inside, after string, err error) {
	if _, err := l.pool.Exec(ctx, `SET synchronous_commit = on`); err != nil {
		return "", "", err
	}
	err = l.relaxedTx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&inside)
	})
	if err != nil {
		return "", "", err
	}
	err = l.pool.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&after)
	return inside, after, err
}

// ExecRelaxedForTest runs execRelaxed.
func ExecRelaxedForTest(ctx context.Context, l *Ledger, sql string, args ...any) (int64, error) {
	tag, err := l.execRelaxed(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// PersistenceForTest is pg_class.relpersistence of a table ("p", "u").
func PersistenceForTest(ctx context.Context, l *Ledger, table string) (string, error) {
	var p string
	err := l.pool.QueryRow(ctx, `SELECT relpersistence::text FROM pg_class WHERE relname = $1 AND relkind = 'r'`, table).Scan(&p)
	return p, err
}

// RateWindowsForTest counts an account's rate windows.
func RateWindowsForTest(ctx context.Context, l *Ledger, account uuid.UUID) (int, error) {
	var n int
	err := l.pool.QueryRow(ctx, `SELECT count(*) FROM rate_windows WHERE account_id = $1`, account).Scan(&n)
	return n, err
}

// UUIDRoundTripForTest sends id and ids through PostgreSQL and back, and
// scans a NULL uuid into null (as given) and a *uuid.UUID.
func UUIDRoundTripForTest(ctx context.Context, l *Ledger, id uuid.UUID, ids []uuid.UUID, null uuid.UUID) (back uuid.UUID, arr []uuid.UUID, _ uuid.UUID, nullPtr *uuid.UUID, text string, err error) {
	err = l.pool.QueryRow(ctx, `SELECT $1::uuid, $2::uuid[], NULL::uuid, NULL::uuid, $1::uuid::text`, id, ids).Scan(&back, &arr, &null, &nullPtr, &text)
	return back, arr, null, nullPtr, text, err
}
