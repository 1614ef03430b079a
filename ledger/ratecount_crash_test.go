package ledger_test

import (
	"context"
	"testing"
	"time"

	"siteenv/clock"
	"siteenv/ledger"
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
	k := newCrashable(t, ctx, "ratecount-crash-", clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC)))
	l := k.open()
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

	k.crash()

	l = k.open()
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
