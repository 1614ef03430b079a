package ledger

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"siteenv/internal/phase"
)

// RoundTrips counts what the ledger sends PostgreSQL: every Exec, Query or
// QueryRow on the pool is one round trip and one statement, and every
// pipelined batch one round trip of its statements. The count covers the
// whole process (requests, the runner, the janitor, lease renewal, the
// audit writer); siteenv bench api reads it around a pass to report the
// round trips per query. A statement prepared on first use on a connection
// costs one more round trip that is not counted.
type RoundTrips struct {
	Trips, Statements int64
}

// roundTrips is the pool's pgx tracer behind Ledger.RoundTrips. It also
// times each round trip into the phase recorder of the request whose
// context it was sent with (phase.FromContext; none outside a timed
// request), so the handlers time no ledger work themselves.
type roundTrips struct{ trips, statements atomic.Int64 }

func (t *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.trips.Add(1)
	t.statements.Add(1)
	phase.FromContext(ctx).RoundTripStart()
	return ctx
}

func (t *roundTrips) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	phase.FromContext(ctx).RoundTripEnd()
}

func (t *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.trips.Add(1)
	phase.FromContext(ctx).RoundTripStart()
	return ctx
}

func (t *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	t.statements.Add(1)
}

func (t *roundTrips) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	phase.FromContext(ctx).RoundTripEnd()
}

// RoundTrips reads the counts so far.
func (l *Ledger) RoundTrips() RoundTrips {
	return RoundTrips{Trips: l.trips.trips.Load(), Statements: l.trips.statements.Load()}
}

// FlushStats makes every idle connection of the pool report its cumulative
// statistics (pg_stat_wal's among them) at once: a backend otherwise
// reports at most once a second, and one that reported less than a second
// before it went idle waits for PostgreSQL's idle interval (10 s). siteenv
// bench api calls it before reading pg_stat_wal around a pass. A backend
// reports before it answers ReadyForQuery, so the reports are in when this
// returns. It is sent on each wire connection, below the tracer, so it is
// not counted in RoundTrips; busy connections are left alone.
func (l *Ledger) FlushStats(ctx context.Context) error {
	conns := l.pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		if _, err := c.Conn().PgConn().Exec(ctx, `SELECT pg_stat_force_next_flush()`).ReadAll(); err != nil {
			return fmt.Errorf("ledger: flush statistics: %w", err)
		}
	}
	return nil
}
