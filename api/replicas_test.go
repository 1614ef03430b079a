package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// twoReplicas sets up two Servers on one fake clock, each with a ledger of
// its own (as two processes have) over one database.
func twoReplicas(t *testing.T) (clk *clock.Fake, ledA, ledB *ledger.Ledger, a, b *harness) {
	t.Helper()
	clk = clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	dsn := ledgertest.DSN(t)
	open := func() *ledger.Ledger {
		l, err := ledger.Open(context.Background(), dsn, ledger.Options{Clock: clk, MaxConns: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	ledA, ledB = open(), open()
	return clk, ledA, ledB, setupOn(t, clk, ledA, nil), setupOn(t, clk, ledB, nil)
}

// TestReplicasShareLimitsRevocationAndAudit runs two Servers, each with a
// ledger of its own (as two processes have) over one database, and proves
// what the shortened read path keeps: the account's read limit is exact
// across both (the 121st read of the minute is refused on either, however
// the reads were spread); a key revoked through one process is refused on
// the very next request to either; and every read's audit record, queued
// behind its response, reaches the shared feed.
func TestReplicasShareLimitsRevocationAndAudit(t *testing.T) {
	t.Parallel()
	clk, ledA, ledB, a, b := twoReplicas(t)
	acct := a.account(0)
	k1 := a.key(acct, nil, "usage:read")
	k2 := b.key(acct, nil, "usage:read", "layers:read")

	// 120 reads spread unevenly over both replicas and both keys.
	for i := range 120 {
		h, k, path := a, k1, "/usage"
		if i%3 == 0 {
			h, k, path = b, k2, "/layers"
		}
		if r := h.do("GET", path, k.Secret, nil); r.status != 200 {
			t.Fatalf("read %d: %d %s", i, r.status, r.body)
		}
	}
	a.do("GET", "/context", k1.Secret, nil).problem(t, "rate_limited", 429)
	b.do("GET", "/context", k2.Secret, nil).problem(t, "rate_limited", 429)
	// Refusals count too (as they always did): the window holds 122.
	if w, err := ledA.Peek(a.ctx, acct, "reads", time.Minute); err != nil || w.Hits != 122 {
		t.Fatalf("window %+v %v, want 122 hits", w, err)
	}

	// The next window; then revoke through A and ask B at once.
	clk.Advance(time.Minute)
	if r := b.do("GET", "/context", k1.Secret, nil); r.status != 200 {
		t.Fatalf("next window: %d %s", r.status, r.body)
	}
	if err := ledA.RevokeKey(a.ctx, k1.KeyID); err != nil {
		t.Fatal(err)
	}
	b.do("GET", "/context", k1.Secret, nil).problem(t, "credential_revoked", 401)
	a.do("GET", "/usage", k1.Secret, nil).problem(t, "credential_revoked", 401)
	// The other key of the account still reads; the revoked attempts were
	// not counted against the account.
	if r := a.do("GET", "/context", k2.Secret, nil); r.status != 200 {
		t.Fatalf("other key: %d %s", r.status, r.body)
	}
	if w, err := ledB.Peek(b.ctx, acct, "reads", time.Minute); err != nil || w.Hits != 2 {
		t.Fatalf("window %+v %v, want 2 hits", w, err)
	}

	// Audit: every request above has its record. A's feed shows A's own
	// records at once; B's reach the database when B's writer has written
	// them (FlushActivity waits for that, as B's own feed reads do).
	if err := ledB.FlushActivity(b.ctx); err != nil {
		t.Fatal(err)
	}
	count := func(integration uuid.UUID, outcome string) int {
		t.Helper()
		rows, err := ledA.ListActivity(a.ctx, integration, ledger.ActivityFilter{Outcome: outcome, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if n := count(k1.IntegrationID, "completed"); n != 81 { // 80 reads, then 1 in the next window
		t.Errorf("key 1: %d completed records, want 81", n)
	}
	if n := count(k1.IntegrationID, "denied"); n != 1 {
		t.Errorf("key 1: %d denied records, want 1", n)
	}
	if n := count(k1.IntegrationID, "revoked"); n != 2 {
		t.Errorf("key 1: %d revoked records, want 2", n)
	}
	if n := count(k2.IntegrationID, "completed"); n != 41 {
		t.Errorf("key 2: %d completed records, want 41", n)
	}
	if n := count(k2.IntegrationID, "denied"); n != 1 {
		t.Errorf("key 2: %d denied records, want 1", n)
	}
}
