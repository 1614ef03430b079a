package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotMigrated: the database answers but lacks migrations this binary
// needs (another process is still migrating it, or it was restored from an
// older dump).
var ErrNotMigrated = newError("ledger: database schema is not migrated")

const appliedMigrationsSQL = `SELECT count(*) FROM schema_migrations WHERE version = ANY($1)`

// Ready checks that the database answers and holds every migration this
// binary knows: one indexed query, cheap enough for a readiness probe
// polled every second. The error matches ErrUnavailable or ErrNotMigrated.
func (l *Ledger) Ready(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	versions := make([]int32, len(ms))
	for i, m := range ms {
		versions[i] = int32(m.version)
	}
	var applied int
	err = l.pool.QueryRow(ctx, appliedMigrationsSQL, versions).Scan(&applied)
	if err != nil {
		err = translate(err)
		if errors.Is(err, ErrUnavailable) {
			return err
		}
		// schema_migrations itself is missing: nothing was migrated.
		return fmt.Errorf("%w: %v", ErrNotMigrated, err)
	}
	if applied != len(ms) {
		return fmt.Errorf("%w: %d of %d migrations applied", ErrNotMigrated, applied, len(ms))
	}
	return nil
}

// PoolStats is a snapshot of the connection pool, for metrics.
type PoolStats struct {
	MaxConns, TotalConns, IdleConns, AcquiredConns, ConstructingConns int32
	// Cumulative since Open.
	AcquireCount, EmptyAcquireCount, CanceledAcquireCount, NewConnsCount int64
	MaxLifetimeDestroyCount, MaxIdleDestroyCount                         int64
	AcquireDuration, EmptyAcquireWaitTime                                time.Duration
}

// PoolStats reads the pool's counters (no database round trip).
func (l *Ledger) PoolStats() PoolStats {
	s := l.pool.Stat()
	return PoolStats{
		MaxConns: s.MaxConns(), TotalConns: s.TotalConns(), IdleConns: s.IdleConns(),
		AcquiredConns: s.AcquiredConns(), ConstructingConns: s.ConstructingConns(),
		AcquireCount: s.AcquireCount(), EmptyAcquireCount: s.EmptyAcquireCount(),
		CanceledAcquireCount: s.CanceledAcquireCount(), NewConnsCount: s.NewConnsCount(),
		MaxLifetimeDestroyCount: s.MaxLifetimeDestroyCount(), MaxIdleDestroyCount: s.MaxIdleDestroyCount(),
		AcquireDuration: s.AcquireDuration(), EmptyAcquireWaitTime: s.EmptyAcquireWaitTime(),
	}
}

// QueueStats is the query queue across every replica.
type QueueStats struct {
	Queued, Running int64
	// OldestQueued is the age of the longest-waiting queued query (0: none).
	OldestQueued time.Duration
}

const queueHealthSQL = `SELECT
			(SELECT count(*) FROM queries WHERE status = 'queued'),
			(SELECT count(*) FROM queries WHERE status = 'running'),
			(SELECT min(created_at) FROM queries WHERE status = 'queued')`

// QueueStats counts queued and running queries. It reads only the partial
// indexes on those two statuses, so its cost follows the queue, not the
// history (finished queries are counted where they finish, by the runner).
func (l *Ledger) QueueStats(ctx context.Context) (QueueStats, error) {
	var s QueueStats
	var oldest *time.Time
	err := l.pool.QueryRow(ctx, queueHealthSQL).Scan(&s.Queued, &s.Running, &oldest)
	if err != nil {
		return QueueStats{}, translate(err)
	}
	if oldest != nil {
		s.OldestQueued = max(0, l.now().Sub(*oldest))
	}
	return s, nil
}
