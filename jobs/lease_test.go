package jobs_test

import (
	"context"
	"testing"
	"time"

	"siteenv/jobs"
	"siteenv/ledger"
)

// TestLivingOwnerKeepsItsClaimDeadOwnersIsTakenOver: an attempt held on its
// tile keeps its claim while its runner renews it, however far the (fake)
// clock moves; once renewals stop, as when its process is killed, another
// runner's sweep requeues the query one lease later and completes it. The
// former owner's late finish changes nothing.
func TestLivingOwnerKeepsItsClaimDeadOwnersIsTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const lease = 5 * time.Second
	gate := newGate(b.store)
	owner := b.runner(jobs.Config{Lease: lease, Attempt: time.Hour}, gate)
	other := b.runner(jobs.Config{Lease: lease}, nil)
	id := b.query()
	done := make(chan error, 1)
	go func() {
		_, err := owner.RunOnce(b.ctx)
		done <- err
	}()
	<-gate.opened // claimed, and held on its tile
	for i := range 4 {
		b.clk.Advance(4 * time.Second)
		if err := owner.RenewClaims(b.ctx); err != nil {
			t.Fatal(err)
		}
		if err := other.Recover(b.ctx); err != nil {
			t.Fatal(err)
		}
		if s := b.status(id); s != ledger.QueryRunning {
			t.Fatalf("renewal %d: a living owner's claim was taken (%s)", i, s)
		}
		if ran, err := other.RunOnce(b.ctx); ran || err != nil {
			t.Fatalf("renewal %d: another runner claimed a held query: %v %v", i, ran, err)
		}
	}
	// The owner stops renewing (killed): one lease later the query is
	// requeued and the other runner completes it.
	b.clk.Advance(lease)
	if err := other.Recover(b.ctx); err != nil {
		t.Fatal(err)
	}
	if s := b.status(id); s != ledger.QueryQueued {
		t.Fatalf("one lease after the last renewal: %s, want queued", s)
	}
	if ran, err := other.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("takeover RunOnce = %v, %v", ran, err)
	}
	want := b.get(id)
	if want.Status != ledger.QuerySucceeded || want.Attempts != 2 || featureCount(t, want) != 2 {
		t.Fatalf("taken over query %+v", want)
	}
	// The stalled owner wakes up and finishes: nothing changes.
	close(gate.open)
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the former owner's attempt did not end")
	}
	if got := b.get(id); got.Status != want.Status || got.Attempts != 2 || *got.ComputedAt != *want.ComputedAt {
		t.Fatalf("after the former owner's finish %+v, want %+v", got, want)
	}
}

// TestInRequestAttemptHoldsItsLease: a query admitted running for POST
// /queries' own attempt (RunNow) is a claim like a worker's: its runner
// renews it while the attempt lives, so another replica's sweep leaves it
// alone however far the clock moves.
func TestInRequestAttemptHoldsItsLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const lease = 5 * time.Second
	gate := newGate(b.store)
	owner := b.runner(jobs.Config{Workers: 1, Lease: lease, Attempt: time.Hour}, gate)
	other := b.runner(jobs.Config{Lease: lease}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	owner.Start(ctx)
	defer owner.Stop(context.Background()) //nolint:errcheck // the attempt ends before
	q := b.admit(true, lease)
	if res := owner.RunNow(b.ctx, q, 0); !res.Accepted {
		t.Fatalf("RunNow %+v", res)
	}
	<-gate.opened // running in the request's attempt, held on its tile
	for i := range 4 {
		b.clk.Advance(4 * time.Second)
		if err := owner.RenewClaims(b.ctx); err != nil {
			t.Fatal(err)
		}
		if err := other.Recover(b.ctx); err != nil {
			t.Fatal(err)
		}
		if s := b.status(q.ID); s != ledger.QueryRunning {
			t.Fatalf("renewal %d: the in-request attempt's claim was taken (%s)", i, s)
		}
	}
	close(gate.open)
	b.waitFor("the in-request attempt's finish", func() bool { return b.status(q.ID) == ledger.QuerySucceeded })
	if got := b.get(q.ID); got.Attempts != 1 {
		t.Fatalf("attempts %d, want 1: it was never taken over", got.Attempts)
	}
}
