package ledger

import "context"

// BumpSchemaForTest records a migration newer than this binary knows.
func BumpSchemaForTest(ctx context.Context, l *Ledger, version int) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')`, version)
	return err
}
