package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestAcquireIsAllOrNothing interrupts the purchase at every step — by a
// cancelled context and by a failing connection — and checks that nothing
// remains, then that a retry with the same key completes it exactly once.
func TestAcquireIsAllOrNothing(t *testing.T) {
	t.Parallel()
	points := []string{"acquire:locked", "acquire:checked", "acquire:purchase", "acquire:receipt", "acquire:grants"}
	for _, point := range points {
		for _, how := range []string{"cancel", "error"} {
			t.Run(point+"/"+how, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				acct, _ := b.led.CreateAccount(b.ctx, "", 100)
				k, _ := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"access:acquire"}})
				if err := b.led.SetSection(b.ctx, "flood", "Flood", 30); err != nil {
					t.Fatal(err)
				}
				site, err := b.led.CreateSite(b.ctx, ledger.Site{AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "aa"})
				if err != nil {
					t.Fatal(err)
				}
				params := ledger.AcquireParams{Account: acct.ID, Integration: k.IntegrationID, IdemKey: "retry-me", SiteID: site.ID, Sections: []string{"flood"}}

				ctx, cancel := context.WithCancel(b.ctx)
				defer cancel()
				injected := errors.New("injected fault")
				ledger.SetFaultHook(b.led, func(_ context.Context, p string) error {
					if p != point {
						return nil
					}
					if how == "cancel" {
						cancel()
						return ctx.Err()
					}
					return injected
				})
				if _, err := b.led.Acquire(ctx, params); err == nil {
					t.Fatal("interrupted purchase succeeded")
				}
				ledger.SetFaultHook(b.led, nil)
				a, _ := b.led.Account(b.ctx, acct.ID)
				if a.CreditBalance != 100 {
					t.Fatalf("balance %d after an interrupted purchase", a.CreditBalance)
				}
				if ps, _ := b.led.ListPurchases(b.ctx, acct.ID, ledger.PurchaseFilter{Limit: 10}); len(ps) != 0 {
					t.Fatalf("%d purchases after an interrupted purchase", len(ps))
				}
				if sa, _ := b.led.SiteAccess(b.ctx, acct.ID, site.ID); len(sa.Granted) != 0 {
					t.Fatal("access granted by an interrupted purchase")
				}
				checkInvariants(t, b)

				p1, err := b.led.Acquire(b.ctx, params)
				if err != nil || p1.CreditsCharged != 30 {
					t.Fatalf("retry: %+v %v", p1, err)
				}
				p2, err := b.led.Acquire(b.ctx, params)
				if err != nil || p2.ID != p1.ID {
					t.Fatalf("second retry made another purchase: %v %v", p2.ID, err)
				}
				a, _ = b.led.Account(b.ctx, acct.ID)
				if a.CreditBalance != 70 {
					t.Fatalf("balance %d, want 70", a.CreditBalance)
				}
				checkInvariants(t, b)
			})
		}
	}
}

func checkInvariants(t *testing.T, b bundle) {
	t.Helper()
	v, err := b.led.Check(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 0 {
		t.Fatalf("invariants: %+v", v)
	}
}

func TestCheckFindsBrokenInvariants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _ := b.led.CreateAccount(b.ctx, "", 50)
	checkInvariants(t, b)
	ledger.CorruptBalanceForTest(b.ctx, b.led, acct.ID, 999)
	v, err := b.led.Check(b.ctx)
	if err != nil || len(v) != 1 || v[0].Rule != "balance = grants - debits + refunds" {
		t.Fatalf("check did not catch a balance without entries: %+v %v", v, err)
	}
}

func TestImportLegacyIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _ := b.led.CreateAccount(b.ctx, "", 0)
	entries := []ledger.LegacyUsage{{LegacyID: "L1", AccountID: acct.ID, Credits: 5}, {LegacyID: "L2", AccountID: acct.ID, Credits: 6}}
	if n, err := b.led.ImportLegacy(b.ctx, entries); err != nil || n != 2 {
		t.Fatalf("%d %v", n, err)
	}
	if n, err := b.led.ImportLegacy(b.ctx, entries); err != nil || n != 0 {
		t.Fatalf("re-import added %d (%v)", n, err)
	}
	p, err := b.led.Purchase(b.ctx, acct.ID, ledger.LegacyPurchaseID("L2"))
	if err != nil || p.Kind != "legacy_usage" || p.Receipt != nil || p.CreatedAt != nil {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := b.led.Purchase(b.ctx, uuid.New(), ledger.LegacyPurchaseID("L2")); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatal("another account read a legacy purchase")
	}
	checkInvariants(t, b)
}
