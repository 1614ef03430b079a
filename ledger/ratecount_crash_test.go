package ledger_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/pgembed"
)

// TestRateCountersRestartAfterCrash: a PostgreSQL crash (its postmaster
// killed) resets the unlogged counters, as the README says: after crash
// recovery the account's current window reads as empty and counts again
// from one, with no error, while the account itself (committed durably)
// is still there.
func TestRateCountersRestartAfterCrash(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "ratecount-crash-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // the server's OS user must reach it
		t.Fatal(err)
	}
	// Durable (not ephemeral): the account must survive the crash.
	c, err := pgembed.Start(ctx, filepath.Join(dir, "pg"), pgembed.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background()) //nolint:errcheck
	c.Supervise(ctx)                   // starts the server again after the crash
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	open := func() *ledger.Ledger {
		t.Helper()
		for {
			l, err := ledger.Open(ctx, c.DSN("siteenv"), ledger.Options{Clock: clk, MaxConns: 2, Logger: slog.New(slog.DiscardHandler)})
			if err == nil {
				return l
			}
			if ctx.Err() != nil {
				t.Fatalf("PostgreSQL is not back: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	l := open()
	acct, err := l.CreateAccount(ctx, "crash", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if w, err := l.Count(ctx, acct.ID, ledger.BucketReads, time.Minute); err != nil || w.Hits != i {
			t.Fatalf("count %d: %+v %v", i, w, err)
		}
	}
	l.Close()

	pidFile, err := os.ReadFile(filepath.Join(dir, "pg", "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidFile), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(pid, 0) == nil { // until it is gone, so open cannot reach the old server
		time.Sleep(50 * time.Millisecond)
	}

	l = open()
	defer l.Close()
	if _, err := l.Account(ctx, acct.ID); err != nil {
		t.Fatalf("the account after the crash: %v", err)
	}
	if w, err := l.Peek(ctx, acct.ID, ledger.BucketReads, time.Minute); err != nil || w.Hits != 0 {
		t.Fatalf("the window after the crash: %+v %v, want it empty", w, err)
	}
	for i := 1; i <= 2; i++ {
		if w, err := l.Count(ctx, acct.ID, ledger.BucketReads, time.Minute); err != nil || w.Hits != i {
			t.Fatalf("count %d after the crash: %+v %v", i, w, err)
		}
	}
}
