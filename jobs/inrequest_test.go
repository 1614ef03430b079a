package jobs_test

import (
	"context"
	"testing"
	"time"

	"siteenv/jobs"
	"siteenv/ledger"
)

// admit admits a 100 m query of the release as POST /queries does, running
// for this process when runNow.
func (b *bundle) admit(runNow bool, lease time.Duration) ledger.Query {
	b.t.Helper()
	res, err := b.led.Admit(b.ctx, ledger.AdmitRequest{Claimed: true, Query: ledger.Query{AccountID: b.account, IntegrationID: b.integ, SiteID: b.site,
		SiteGeometry: b.siteGeometry(), RadiusM: 100, LayerIDs: []string{layerID}, Frozen: b.frozen},
		Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 1000, MaxRetainedBytes: 1 << 30}, PerMinute: 1000,
			RunNow: runNow, MaxRunning: 4, Lease: lease}})
	if err != nil {
		b.t.Fatal(err)
	}
	return res.Query
}

// A query admitted running is executed by RunNow in the request, and its
// finished row handed back: no worker claims it.
func TestRunNowExecutesAnAdmittedQuery(t *testing.T) {
	b := setup(t)
	r := b.runner(jobs.Config{Workers: 1}, nil)
	if _, _, ok := r.RunLimits(); ok {
		t.Fatal("RunLimits ok before Start")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Start(ctx)
	defer r.Stop(context.Background()) //nolint:errcheck // asserted below
	if _, _, ok := r.RunLimits(); !ok {
		t.Fatal("RunLimits not ok once started")
	}
	q := b.admit(true, time.Minute)
	if q.Status != ledger.QueryRunning || q.Attempts != 1 {
		t.Fatalf("admitted %s, attempts %d; want running, 1", q.Status, q.Attempts)
	}
	res := r.RunNow(b.ctx, q, 30*time.Second)
	if !res.Accepted || res.Finish == nil {
		t.Fatalf("RunNow %+v: want its finish handed over", res)
	}
	if row := res.Finish.Row; row.ID != q.ID || row.Status != ledger.QuerySucceeded || featureCount(t, row) != 2 {
		t.Fatalf("handed row %+v", row)
	}
	if s := b.status(q.ID); s != ledger.QueryRunning {
		t.Fatalf("stored before the request stored it: %s", s)
	}
	// The engine's work is done once the finish is handed over: its slot
	// is given back while the finish waits for the request's store.
	if n := jobs.InRequest(r); n != 0 {
		t.Fatalf("%d in-request slots taken while the handed finish waits; want 0", n)
	}
	// The request declines (say its response failed): the attempt stores
	// the finish itself.
	res.Finish.Decline()
	b.waitFor("the attempt's own finish", func() bool { return b.status(q.ID) == ledger.QuerySucceeded })
	stored := b.get(q.ID)
	if featureCount(t, stored) != 2 || stored.Attempts != 1 {
		t.Fatalf("stored %s, attempts %d", stored.Status, stored.Attempts)
	}
	// Stored by the request with its response, in one statement.
	q2 := b.admit(true, time.Minute)
	res = r.RunNow(b.ctx, q2, 30*time.Second)
	if res.Finish == nil {
		t.Fatalf("RunNow %+v", res)
	}
	claim, err := b.led.ClaimIdempotency(b.ctx, b.integ, "key-2", "create_query", []byte("f"))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := b.led.FinishQueryCompleted(b.ctx, res.Finish.QueryFinish, b.integ, "key-2", claim.Token,
		ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: []byte("{}")}, b.account,
		ledger.Activity{Operation: "create_query", Outcome: "completed", RequestID: q2.ID, HTTPStatus: 200})
	res.Finish.Stored(kept, err)
	if !kept || err != nil {
		t.Fatalf("FinishQueryCompleted kept %v, %v", kept, err)
	}
	if got := b.get(q2.ID); got.Status != ledger.QuerySucceeded || featureCount(t, got) != 2 ||
		!got.ComputedAt.Equal(*res.Finish.Row.ComputedAt) || !got.ExpiresAt.Equal(*res.Finish.Row.ExpiresAt) {
		t.Fatalf("stored %+v; handed %+v", got, res.Finish.Row)
	}
	if replay, err := b.led.ClaimIdempotency(b.ctx, b.integ, "key-2", "create_query", []byte("f")); err != nil || replay.State != ledger.IdemReplay {
		t.Fatalf("the stored response: %+v, %v", replay, err)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := jobs.InRequest(r); n != 0 {
		t.Fatalf("%d in-request slots taken after Stop", n)
	}
	if _, _, ok := r.RunLimits(); ok {
		t.Fatal("RunLimits ok after Stop")
	}
	if res := r.RunNow(b.ctx, b.admit(true, time.Minute), time.Second); res.Accepted {
		t.Fatal("RunNow accepted a query after Stop")
	}
}

// A process that dies after admitting a query running (before or while
// running it) leaves it running until its lease lapses (nobody renews it); then any
// replica's janitor requeues it and a worker computes it from its frozen
// inputs.
func TestQueryAdmittedRunningSurvivesItsProcess(t *testing.T) {
	b := setup(t)
	q := b.admit(true, time.Minute)
	// The admitting process is gone: nobody runs it. Another replica:
	r := b.runner(jobs.Config{Workers: 1, Attempt: time.Minute}, nil)
	if ran, err := r.RunOnce(b.ctx); err != nil || ran {
		t.Fatalf("a worker claimed a query held by its admitting process: ran %v, %v", ran, err)
	}
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if s := b.status(q.ID); s != ledger.QueryRunning {
		t.Fatalf("requeued before its lease lapsed: %s", s)
	}
	b.clk.Advance(time.Minute + time.Second)
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if s := b.status(q.ID); s != ledger.QueryQueued {
		t.Fatalf("after the lease lapsed: %s, want queued", s)
	}
	if ran, err := r.RunOnce(b.ctx); err != nil || !ran {
		t.Fatalf("RunOnce: ran %v, %v", ran, err)
	}
	got := b.get(q.ID)
	if got.Status != ledger.QuerySucceeded || featureCount(t, got) != 2 || got.Attempts != 2 {
		t.Fatalf("after takeover: %s, attempts %d", got.Status, got.Attempts)
	}
}
