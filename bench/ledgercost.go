package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ledgerCost is what the API cost its ledger's PostgreSQL: the round trips
// and statements the ledger's pool sent (ledger.RoundTrips) and the WAL
// writes and flushes (fsyncs) the server made (pg_stat_wal: every backend,
// the WAL writer and the checkpointer).
type ledgerCost struct {
	Trips, Statements   int64
	WALWrites, WALSyncs int64
	// WALFPI are full-page images: the first change of a page after a
	// checkpoint writes the whole 8 kB page to the WAL (full_page_writes).
	WALFPI, WALBytes int64
}

func (c ledgerCost) minus(o ledgerCost) ledgerCost {
	return ledgerCost{Trips: c.Trips - o.Trips, Statements: c.Statements - o.Statements,
		WALWrites: c.WALWrites - o.WALWrites, WALSyncs: c.WALSyncs - o.WALSyncs,
		WALFPI: c.WALFPI - o.WALFPI, WALBytes: c.WALBytes - o.WALBytes}
}

// perQuery is c over n queries, as every pass's report line gives it.
func (c ledgerCost) perQuery(n int) string {
	q := float64(max(n, 1))
	return fmt.Sprintf("%.2f round trips, %.2f statements; WAL %.2f writes, %.2f flushes, %.2f full-page images, %.1f kB",
		float64(c.Trips)/q, float64(c.Statements)/q, float64(c.WALWrites)/q, float64(c.WALSyncs)/q, float64(c.WALFPI)/q, float64(c.WALBytes)/q/1e3)
}

// walWriterSettle is how long ledgerCost waits, after the ledger's
// connections have reported their statistics (Ledger.FlushStats), for the
// WAL writer to report its own: it reports once a cycle (wal_writer_delay,
// 200 ms).
const walWriterSettle = 500 * time.Millisecond

// ledgerCost reads the counts so far, once every backend has reported.
func (a *apiSide) ledgerCost(ctx context.Context) (ledgerCost, error) {
	rt := a.led.RoundTrips()
	if err := a.led.FlushStats(ctx); err != nil {
		return ledgerCost{}, err
	}
	if err := sleepCtx(ctx, walWriterSettle); err != nil {
		return ledgerCost{}, err
	}
	c := ledgerCost{Trips: rt.Trips, Statements: rt.Statements}
	conn, err := pgx.Connect(ctx, a.cluster.DSN("siteenv"))
	if err != nil {
		return ledgerCost{}, err
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT wal_write, wal_sync, wal_fpi, wal_bytes::bigint FROM pg_stat_wal`).Scan(&c.WALWrites, &c.WALSyncs, &c.WALFPI, &c.WALBytes); err != nil {
		return ledgerCost{}, fmt.Errorf("bench: pg_stat_wal: %w", err)
	}
	return c, nil
}
