package ledger_test

import (
	"errors"
	"testing"
	"time"

	"siteenv/ledger"
)

// TestAuthenticateCount proves the one-statement key lookup and read count
// behaves as Authenticate followed by Count: a live key with the scopes is
// counted in its account's window (shared by the account's keys, and with
// Count); a key lacking a scope, a revoked key and an unknown key count
// nothing; a revocation applies to the very next call; a new window starts
// from one.
func TestAuthenticateCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, err := b.led.CreateAccount(b.ctx, "auth count", 0)
	if err != nil {
		t.Fatal(err)
	}
	k1, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{ledger.ScopeUsageRead, ledger.ScopeSitesRead}})
	if err != nil {
		t.Fatal(err)
	}
	k2, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{ledger.ScopeSitesRead}})
	if err != nil {
		t.Fatal(err)
	}
	peek := func() int {
		t.Helper()
		w, err := b.led.Peek(b.ctx, acct.ID, "reads", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return w.Hits
	}
	for i := 1; i <= 3; i++ {
		p, w, counted, err := b.led.AuthenticateCount(b.ctx, k1.Secret, []string{ledger.ScopeUsageRead}, "reads", time.Minute)
		if err != nil || !counted || w.Hits != i || w.Reset != 30*time.Second || p.KeyID != k1.KeyID || p.AccountID != acct.ID ||
			p.IntegrationID != k1.IntegrationID || !p.HasScope(ledger.ScopeSitesRead) {
			t.Fatalf("call %d: %+v %+v %v %v", i, p, w, counted, err)
		}
	}
	// Another key of the account shares the window, and so does Count.
	if _, w, counted, err := b.led.AuthenticateCount(b.ctx, k2.Secret, nil, "reads", time.Minute); err != nil || !counted || w.Hits != 4 {
		t.Fatalf("second key: %+v %v %v", w, counted, err)
	}
	if w, err := b.led.Count(b.ctx, acct.ID, "reads", time.Minute); err != nil || w.Hits != 5 {
		t.Fatalf("Count after: %+v %v", w, err)
	}
	// A missing scope: the principal, nothing counted.
	p, _, counted, err := b.led.AuthenticateCount(b.ctx, k2.Secret, []string{ledger.ScopeUsageRead}, "reads", time.Minute)
	if err != nil || counted || p.KeyID != k2.KeyID || peek() != 5 {
		t.Fatalf("missing scope: %+v %v %v, hits %d", p, counted, err, peek())
	}
	// Unknown key.
	if _, _, counted, err := b.led.AuthenticateCount(b.ctx, "sek_nope", nil, "reads", time.Minute); !errors.Is(err, ledger.ErrNotFound) || counted {
		t.Fatalf("unknown key: %v %v", counted, err)
	}
	// Revoked: refused on the very next call, with its principal, uncounted.
	if err := b.led.RevokeKey(b.ctx, k1.KeyID); err != nil {
		t.Fatal(err)
	}
	p, _, counted, err = b.led.AuthenticateCount(b.ctx, k1.Secret, []string{ledger.ScopeUsageRead}, "reads", time.Minute)
	if !errors.Is(err, ledger.ErrKeyRevoked) || counted || p.KeyID != k1.KeyID || !p.Revoked || peek() != 5 {
		t.Fatalf("revoked: %+v %v %v, hits %d", p, counted, err, peek())
	}
	// The next window starts at one.
	b.clock.Advance(time.Minute)
	if peek() != 0 {
		t.Fatalf("next window before its first hit: %d hits", peek())
	}
	if _, w, counted, err := b.led.AuthenticateCount(b.ctx, k2.Secret, nil, "reads", time.Minute); err != nil || !counted || w.Hits != 1 || w.Reset != 30*time.Second {
		t.Fatalf("next window: %+v %v %v", w, counted, err)
	}
	if peek() != 1 {
		t.Fatalf("next window: %d hits, want 1", peek())
	}
}
