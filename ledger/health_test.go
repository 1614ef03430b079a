package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestReadyNeedsEveryMigration: Ready passes on a migrated database and
// reports ErrNotMigrated once a migration this binary needs is missing.
func TestReadyNeedsEveryMigration(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.led.Ready(b.ctx); err != nil {
		t.Fatalf("migrated database not ready: %v", err)
	}
	if err := ledger.ExecForTest(b.ctx, b.led, `DELETE FROM schema_migrations WHERE version = $1`, ledger.SchemaVersion()); err != nil {
		t.Fatal(err)
	}
	if err := b.led.Ready(b.ctx); !errors.Is(err, ledger.ErrNotMigrated) || errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("missing migration: %v, want ErrNotMigrated", err)
	}
	if err := ledger.ExecForTest(b.ctx, b.led, `DROP TABLE schema_migrations`); err != nil {
		t.Fatal(err)
	}
	if err := b.led.Ready(b.ctx); !errors.Is(err, ledger.ErrNotMigrated) {
		t.Fatalf("no migrations table: %v, want ErrNotMigrated", err)
	}
}

// TestCountAndPeek: Count counts and reports the window, Peek reads it
// without counting, and a new window starts from zero.
func TestCountAndPeek(t *testing.T) {
	t.Parallel()
	b := setup(t) // 30 s into the minute
	acct, err := b.led.CreateAccount(b.ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := b.led.Peek(b.ctx, acct.ID, "reads", time.Minute); err != nil || w.Hits != 0 || w.Reset != 30*time.Second {
		t.Fatalf("empty window: %+v %v", w, err)
	}
	for i := 1; i <= 2; i++ {
		if w, err := b.led.Count(b.ctx, acct.ID, "reads", time.Minute); err != nil || w.Hits != i || w.Reset != 30*time.Second {
			t.Fatalf("count %d: %+v %v", i, w, err)
		}
	}
	b.clock.Advance(10 * time.Second)
	for range 2 {
		if w, err := b.led.Peek(b.ctx, acct.ID, "reads", time.Minute); err != nil || w.Hits != 2 || w.Reset != 20*time.Second {
			t.Fatalf("peek: %+v %v", w, err)
		}
	}
	if w, _ := b.led.Peek(b.ctx, acct.ID, "query_admissions", time.Minute); w.Hits != 0 {
		t.Fatalf("another bucket: %+v", w)
	}
	if w, _ := b.led.Peek(b.ctx, uuid.New(), "reads", time.Minute); w.Hits != 0 {
		t.Fatalf("another account: %+v", w)
	}
	b.clock.Advance(20 * time.Second)
	if w, _ := b.led.Peek(b.ctx, acct.ID, "reads", time.Minute); w.Hits != 0 || w.Reset != time.Minute {
		t.Fatalf("next window: %+v", w)
	}
}

// TestPoolAndQueueStats: the pool reports its limit and use; an empty queue
// counts nothing.
func TestPoolAndQueueStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.led.Ping(b.ctx); err != nil {
		t.Fatal(err)
	}
	ps := b.led.PoolStats()
	if ps.MaxConns <= 0 || ps.TotalConns <= 0 || ps.AcquireCount <= 0 {
		t.Fatalf("pool stats %+v", ps)
	}
	qs, err := b.led.QueueStats(b.ctx)
	if err != nil || qs != (ledger.QueueStats{}) {
		t.Fatalf("queue stats %+v %v", qs, err)
	}
}
