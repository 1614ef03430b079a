package ledger_test

import (
	"context"
	"testing"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestFlushStatsReportsAtOnce: writes made in quick succession on the
// ledger's connections are in pg_stat_wal as soon as FlushStats returns (a
// backend that reported less than a second before would otherwise hold
// them for PostgreSQL's idle interval, 10 s), and FlushStats is not counted
// as a round trip.
func TestFlushStatsReportsAtOnce(t *testing.T) {
	ctx := context.Background()
	dsn := ledgertest.DSN(t)
	led, conn := onDSN(t, dsn, clock.Real{}), rawConn(t, dsn)
	if err := ledger.ExecForTest(ctx, led, `CREATE TABLE flush_probe (n integer)`); err != nil {
		t.Fatal(err)
	}
	records := func() int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(ctx, `SELECT wal_records FROM pg_stat_wal`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := records()
	const writes = 5
	for i := range writes {
		if err := ledger.ExecForTest(ctx, led, `INSERT INTO flush_probe VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
	}
	trips := led.RoundTrips()
	if err := led.FlushStats(ctx); err != nil {
		t.Fatal(err)
	}
	// Each insert writes its row's record and its commit's.
	if got := records() - before; got < 2*writes {
		t.Errorf("pg_stat_wal shows %d WAL records of %d inserts after FlushStats, want at least %d", got, writes, 2*writes)
	}
	if after := led.RoundTrips(); after != trips {
		t.Errorf("FlushStats counted as round trips: %+v -> %+v", trips, after)
	}
}
