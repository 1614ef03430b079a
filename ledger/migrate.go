package ledger

import (
	"context"
	"embed"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("ledger: migration %q lacks a number", e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("ledger: migration %q: %w", e.Name(), err)
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// SchemaVersion is the newest migration this binary knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrationLock serialises migrations across replicas starting at once.
const migrationLock = 7301947230

const (
	migrationLockSQL         = `SELECT pg_advisory_lock($1)`
	createMigrationsTableSQL = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
	appliedVersionsSQL = `SELECT version FROM schema_migrations`
	recordMigrationSQL = `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`
)

func (l *Ledger) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("ledger: connect: %w", ErrUnavailable)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, migrationLockSQL, migrationLock); err != nil {
		return translate(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock) //nolint:errcheck
	if _, err := conn.Exec(ctx, createMigrationsTableSQL); err != nil {
		return translate(err)
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, appliedVersionsSQL)
	if err != nil {
		return translate(err)
	}
	current := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return translate(err)
		}
		applied[v] = true
		current = max(current, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return translate(err)
	}
	newest := ms[len(ms)-1].version
	if current > newest {
		return fmt.Errorf("%w: database is at migration %d, this binary knows up to %d; upgrade siteenv", ErrSchemaTooNew, current, newest)
	}
	for _, m := range ms {
		// Any migration not yet applied runs, in order, even one numbered
		// below the newest applied (branches can land out of order).
		if applied[m.version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("ledger: migration %s: %w", m.name, err)
			}
			_, err := tx.Exec(ctx, recordMigrationSQL, m.version, m.name)
			return err
		})
		if err != nil {
			return err
		}
		l.log.Info("applied migration", "name", m.name)
	}
	return nil
}
