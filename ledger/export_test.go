package ledger

import (
	"context"
	"time"
)

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

// StopLeasesForTest stops renewing l's idempotency leases, as if its process
// had died: its running claims lapse after the lease.
func StopLeasesForTest(l *Ledger) { l.stopLeases() }

// ExecForTest runs one statement and returns its error as the ledger
// classifies it.
func ExecForTest(ctx context.Context, l *Ledger, sql string, args ...any) error {
	_, err := l.pool.Exec(ctx, sql, args...)
	return translate(err)
}

// LeaseReachesForTest reports whether the running claim's lease lasts until
// at least t.
func LeaseReachesForTest(ctx context.Context, l *Ledger, integration [16]byte, key string, t time.Time) bool {
	var ok bool
	err := l.pool.QueryRow(ctx, `SELECT lease_until >= $3 FROM idempotency WHERE integration_id = $1 AND idem_key = $2 AND state = 'running'`,
		integration, key, t).Scan(&ok)
	return err == nil && ok
}

// ActivityTransactionsForTest counts the transactions that inserted an
// integration's audit records.
func ActivityTransactionsForTest(ctx context.Context, l *Ledger, integration [16]byte) (int, error) {
	var n int
	err := l.pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM activity WHERE integration_id = $1`, integration).Scan(&n)
	return n, err
}
