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

// crashable is a durable PostgreSQL cluster of one test that the test can
// crash (its postmaster killed) and that comes back by crash recovery, for
// the tests of what a crash keeps and loses (relaxed commits, unlogged
// counters).
type crashable struct {
	t   *testing.T
	ctx context.Context
	dir string
	c   *pgembed.Cluster
	clk clock.Clock
}

// newCrashable starts the cluster under a temporary directory named after
// prefix, supervised so that it starts again after a crash, and stops and
// removes it when the test ends. ctx bounds the test.
func newCrashable(t *testing.T, ctx context.Context, prefix string, clk clock.Clock) *crashable {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the server's OS user must reach it
		t.Fatal(err)
	}
	// Durable (not ephemeral): what was committed durably must survive.
	c, err := pgembed.Start(ctx, filepath.Join(dir, "pg"), pgembed.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) }) //nolint:errcheck
	c.Supervise(ctx)                                   // starts the server again after a crash
	return &crashable{t: t, ctx: ctx, dir: dir, c: c, clk: clk}
}

// open opens a ledger on the cluster, waiting for it to be back after a
// crash.
func (k *crashable) open() *ledger.Ledger {
	k.t.Helper()
	for {
		l, err := ledger.Open(k.ctx, k.c.DSN("siteenv"), ledger.Options{Clock: k.clk, MaxConns: 2, Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			return l
		}
		if k.ctx.Err() != nil {
			k.t.Fatalf("PostgreSQL is not back: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// crash kills the postmaster and returns once it is gone, so the next open
// cannot reach the old server.
func (k *crashable) crash() {
	k.t.Helper()
	pidFile, err := os.ReadFile(filepath.Join(k.dir, "pg", "data", "postmaster.pid"))
	if err != nil {
		k.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidFile), "\n", 2)[0]))
	if err != nil {
		k.t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		k.t.Fatal(err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(50 * time.Millisecond)
	}
}
