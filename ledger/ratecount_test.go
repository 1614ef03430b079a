package ledger_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestRateCountExactAcrossReplicas: hits counted at once through two
// replicas get the numbers 1..n exactly, in a window already begun and in
// one they all find finished (every one racing to begin it); a replica
// whose clock lags counts on in the window the other began instead of
// restarting it; the counters are unlogged sequences, one per bucket,
// created with the account (or by the first count of a bucket without
// one); a counted read takes no transaction id (it writes nothing).
func TestRateCountExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := ledgertest.DSN(t)
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	var replicas [2]*ledger.Ledger
	for i := range replicas {
		l, err := ledger.Open(ctx, dsn, ledger.Options{Clock: clk, MaxConns: 10})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		replicas[i] = l
	}
	acct, err := replicas[0].CreateAccount(ctx, "rate count", 0)
	if err != nil {
		t.Fatal(err)
	}
	key, err := replicas[0].CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	burst := func(name, bucket string, from int) {
		t.Helper()
		hits := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := replicas[i%2]
				if i%4 < 2 {
					var w ledger.RateWindow
					w, errs[i] = l.Count(ctx, acct.ID, bucket, time.Minute)
					hits[i] = w.Hits
					return
				}
				_, w, counted, err := l.AuthenticateCount(ctx, key.Secret, nil, bucket, time.Minute)
				if err == nil && !counted {
					t.Errorf("%s: a live key's read not counted", name)
				}
				hits[i], errs[i] = w.Hits, err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		slices.Sort(hits)
		for i, h := range hits {
			if h != from+i {
				t.Fatalf("%s: hits %v, want %d..%d each once", name, hits, from, from+n-1)
			}
		}
	}
	// The account's counters come with it.
	if p, err := ledger.RateCountersForTest(ctx, replicas[0], acct.ID); err != nil || !slices.Equal(p, []string{"u", "u"}) {
		t.Fatalf("counters' persistence %q, %v; want two unlogged sequences", p, err)
	}
	if w, err := replicas[0].Count(ctx, acct.ID, ledger.BucketReads, time.Minute); err != nil || w.Hits != 1 {
		t.Fatalf("first count: %+v %v", w, err)
	}
	clk.Advance(time.Minute)
	burst("a finished window", ledger.BucketReads, 1) // all race to begin the new one
	burst("a window begun", ledger.BucketReads, n+1)
	clk.Advance(time.Minute)
	burst("the next window", ledger.BucketReads, 1)
	// A bucket without a counter: all race to create it.
	burst("a new bucket", "exports", 1)
	if w, err := replicas[1].Peek(ctx, acct.ID, ledger.BucketReads, time.Minute); err != nil || w.Hits != n || w.Reset != 30*time.Second {
		t.Fatalf("peek: %+v %v", w, err)
	}

	// A lagging replica: another clock a minute behind counts on in the
	// newer window rather than restarting its own.
	lagClk := clock.NewFake(clk.Now().Add(-time.Minute))
	lag, err := ledger.Open(ctx, dsn, ledger.Options{Clock: lagClk, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer lag.Close()
	if w, err := lag.Count(ctx, acct.ID, ledger.BucketReads, time.Minute); err != nil || w.Hits != n+1 || w.Reset != 90*time.Second {
		t.Fatalf("lagging replica: %+v %v, want hit %d of the newer window", w, err, n+1)
	}
	if w, err := replicas[0].Count(ctx, acct.ID, ledger.BucketReads, time.Minute); err != nil || w.Hits != n+2 {
		t.Fatalf("after the lagging replica: %+v %v", w, err)
	}

	// Buckets count apart, each in a counter of its own.
	if w, err := replicas[0].Count(ctx, acct.ID, ledger.BucketQueryAdmissions, time.Minute); err != nil || w.Hits != 1 {
		t.Fatalf("another bucket: %+v %v", w, err)
	}
	if p, err := ledger.RateCountersForTest(ctx, replicas[0], acct.ID); err != nil || !slices.Equal(p, []string{"u", "u", "u"}) {
		t.Fatalf("counters' persistence %q, %v; want three unlogged sequences", p, err)
	}
	counted, xid, err := ledger.AuthenticateCountXIDForTest(ctx, replicas[0], key.Secret, ledger.BucketReads, time.Minute)
	if err != nil || !counted || xid {
		t.Fatalf("a counted read: counted %v, took a transaction id %v, %v", counted, xid, err)
	}
}
