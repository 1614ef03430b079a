package ledger_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestContextReads proves the pipelined read GET /context uses returns what
// Account, Integration and QueryUsage return one by one, and ErrNotFound
// when any row is missing.
func TestContextReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, err := b.led.CreateAccount(b.ctx, "ctx reads", 42)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	a, in, u, err := b.led.ContextReads(b.ctx, acct.ID, k.IntegrationID)
	if err != nil {
		t.Fatal(err)
	}
	wa, _ := b.led.Account(b.ctx, acct.ID)
	wi, _ := b.led.Integration(b.ctx, k.IntegrationID)
	wu, _ := b.led.QueryUsage(b.ctx, acct.ID)
	if !reflect.DeepEqual(a, wa) || !reflect.DeepEqual(in, wi) || !reflect.DeepEqual(u, wu) {
		t.Fatalf("got %+v %+v %+v\nwant %+v %+v %+v", a, in, u, wa, wi, wu)
	}
	if a.CreditBalance != 42 {
		t.Errorf("balance %d", a.CreditBalance)
	}
	if _, _, _, err := b.led.ContextReads(b.ctx, acct.ID, uuid.New()); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("missing integration: %v", err)
	}
	// The pool still serves after the failed batch.
	if _, err := b.led.Account(b.ctx, acct.ID); err != nil {
		t.Fatal(err)
	}
}
