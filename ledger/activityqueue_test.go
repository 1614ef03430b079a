package ledger_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// countActivity counts an integration's records through the feed.
func countActivity(t *testing.T, l *ledger.Ledger, integration uuid.UUID) int {
	t.Helper()
	rows, err := l.ListActivity(context.Background(), integration, ledger.ActivityFilter{Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// TestQueuedReadActivity proves the audit records of reads are all written
// though queued: records queued concurrently (more than one batch) are all
// in the feed of the process that queued them as soon as it lists; a
// record the database refuses loses only itself (its batch is retried one
// by one); and Close writes what is still queued, so a graceful stop loses
// nothing. Records keep the time they were queued at.
func TestQueuedReadActivity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, err := b.led.CreateAccount(b.ctx, "queued", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(outcome string) ledger.Activity {
		return ledger.Activity{Operation: "get_context", Outcome: outcome, RequestID: uuid.New(), HTTPStatus: 200}
	}

	// 1,200 records from 8 goroutines: several batches.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 150 {
				if err := b.led.QueueReadActivity(b.ctx, acct.ID, k.IntegrationID, rec("completed")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := countActivity(t, b.led, k.IntegrationID); n != 1200 {
		t.Fatalf("%d records listed, want 1200", n)
	}

	// A refused record (the outcome CHECK) among good ones.
	for i := range 10 {
		o := "completed"
		if i == 5 {
			o = "bogus"
		}
		if err := b.led.QueueReadActivity(b.ctx, acct.ID, k.IntegrationID, rec(o)); err != nil {
			t.Fatal(err)
		}
	}
	if n := countActivity(t, b.led, k.IntegrationID); n != 1209 {
		t.Fatalf("%d records listed, want 1209 (the refused one lost alone)", n)
	}

	// Two processes on one database: the second queues, then stops
	// gracefully; the first lists everything it queued.
	dsn := ledgertest.DSN(t)
	first, err := ledger.Open(b.ctx, dsn, ledger.Options{Clock: b.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	acct2, err := first.CreateAccount(b.ctx, "other", 0)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := first.CreateKey(b.ctx, ledger.KeyParams{Account: acct2.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	second, err := ledger.Open(b.ctx, dsn, ledger.Options{Clock: b.clock})
	if err != nil {
		t.Fatal(err)
	}
	want := rec("completed")
	for range 300 {
		if err := second.QueueReadActivity(b.ctx, acct2.ID, k2.IntegrationID, rec("completed")); err != nil {
			t.Fatal(err)
		}
	}
	if err := second.QueueReadActivity(b.ctx, acct2.ID, k2.IntegrationID, want); err != nil {
		t.Fatal(err)
	}
	second.Close()
	if n := countActivity(t, first, k2.IntegrationID); n != 301 {
		t.Fatalf("%d records after a graceful stop, want 301", n)
	}
	got, err := first.ListActivity(b.ctx, k2.IntegrationID, ledger.ActivityFilter{RequestID: &want.RequestID, Limit: 1})
	if err != nil || len(got) != 1 || !got[0].CreatedAt.Equal(b.clock.Now().UTC()) {
		t.Fatalf("record %+v, %v: want one stamped %s", got, err, b.clock.Now().UTC())
	}
}

// TestReadActivityLingers proves small batches of read records wait for
// more (Options.ActivityLinger) and are inserted together, and that
// FlushActivity does not wait out the linger: with a linger of an hour, 20
// records queued a round trip apart are not written while they linger, and
// are all written, in one transaction, as soon as the feed is read.
func TestReadActivityLingers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledgertest.DSN(t), ledger.Options{ActivityLinger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acct, err := l.CreateAccount(ctx, "linger", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := l.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		a := ledger.Activity{Operation: "get_context", Outcome: "completed", RequestID: uuid.New(), HTTPStatus: 200}
		if err := l.QueueReadActivity(ctx, acct.ID, k.IntegrationID, a); err != nil {
			t.Fatal(err)
		}
		// A round trip between records: time a writer that did not
		// linger would use to insert what is queued.
		if err := ledger.ExecForTest(ctx, l, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ledger.ActivityTransactionsForTest(ctx, l, k.IntegrationID); err != nil || n != 0 {
		t.Fatalf("records inserted by %d transactions (%v) while lingering", n, err)
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := l.FlushActivity(fctx); err != nil {
		t.Fatalf("flush waited out the linger: %v", err)
	}
	if n := countActivity(t, l, k.IntegrationID); n != 20 {
		t.Fatalf("%d records in the feed, want 20", n)
	}
	if n, err := ledger.ActivityTransactionsForTest(ctx, l, k.IntegrationID); err != nil || n != 1 {
		t.Fatalf("records inserted by %d transactions (%v), want 1", n, err)
	}
}
