package ledger_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestContextReads proves the one-statement read GET /context uses returns
// what Account, Integration, QueryUsage and Setting return one by one, and
// ErrNotFound when any row is missing.
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
	cv, err := b.led.ContextReads(b.ctx, acct.ID, k.IntegrationID)
	if err != nil {
		t.Fatal(err)
	}
	a, in, u := cv.Account, cv.Integration, cv.Usage
	if cv.ReportPrice != nil {
		t.Errorf("report price %d before it is set", *cv.ReportPrice)
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
	if _, err := b.led.ContextReads(b.ctx, acct.ID, uuid.New()); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("missing integration: %v", err)
	}
	if _, err := b.led.ContextReads(b.ctx, uuid.New(), k.IntegrationID); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("missing account: %v", err)
	}
	if err := b.led.SetSetting(b.ctx, ledger.SettingReportPrice, 40); err != nil {
		t.Fatal(err)
	}
	if cv, err := b.led.ContextReads(b.ctx, acct.ID, k.IntegrationID); err != nil || cv.ReportPrice == nil || *cv.ReportPrice != 40 {
		t.Errorf("report price %v, %v; want 40", cv.ReportPrice, err)
	}
	// The pool still serves after the failed batch.
	if _, err := b.led.Account(b.ctx, acct.ID); err != nil {
		t.Fatal(err)
	}
}
