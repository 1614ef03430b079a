package ledger

import "context"

// BumpSchemaForTest records a migration newer than this binary knows.
func BumpSchemaForTest(ctx context.Context, l *Ledger, version int) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')`, version)
	return err
}

// SetFaultHook installs a fault injector (tests only).
func SetFaultHook(l *Ledger, hook func(ctx context.Context, point string) error) { l.faultHook = hook }

// CorruptBalanceForTest sets a balance without a ledger entry.
func CorruptBalanceForTest(ctx context.Context, l *Ledger, account [16]byte, balance int64) {
	_, _ = l.pool.Exec(ctx, `UPDATE accounts SET credit_balance = $2 WHERE account_id = $1`, account, balance)
}
