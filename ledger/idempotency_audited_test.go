package ledger_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestCompleteIdempotencyAudited proves the stored response and the audit
// record commit together: the holder's completion stores the response for
// replay and appends the record; a completion whose claim was lost appends
// the record (the request did run) and reports ErrClaimLost, storing
// nothing; a refused record (the outcome CHECK) fails the whole statement,
// leaving the claim running.
func TestCompleteIdempotencyAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, err := b.led.CreateAccount(b.ctx, "audited", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	fp := []byte("fp")
	c, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "a1", "create_site", fp)
	if err != nil || c.State != ledger.IdemFresh {
		t.Fatalf("claim %v %v", c.State, err)
	}
	rec := func(outcome string) ledger.Activity {
		return ledger.Activity{Operation: "create_site", Outcome: outcome, RequestID: uuid.New(), HTTPStatus: 200}
	}
	resp := ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: []byte(`{"x":1}`)}
	// A refused record: nothing is written, the claim stays running.
	if err := b.led.CompleteIdempotencyAudited(b.ctx, k.IntegrationID, "a1", c.Token, resp, acct.ID, rec("bogus")); err == nil || errors.Is(err, ledger.ErrClaimLost) {
		t.Fatalf("refused record: %v", err)
	}
	if again, _ := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "a1", "create_site", fp); again.State != ledger.IdemInFlight {
		t.Fatalf("after a failed completion the claim is %v, want in flight", again.State)
	}
	// A stranger's completion: its record, no response.
	stranger := rec("completed")
	if err := b.led.CompleteIdempotencyAudited(b.ctx, k.IntegrationID, "a1", uuid.New(), resp, acct.ID, stranger); !errors.Is(err, ledger.ErrClaimLost) {
		t.Fatalf("stranger: %v", err)
	}
	// The holder's.
	holder := rec("completed")
	if err := b.led.CompleteIdempotencyAudited(b.ctx, k.IntegrationID, "a1", c.Token, resp, acct.ID, holder); err != nil {
		t.Fatal(err)
	}
	if r, _ := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "a1", "create_site", fp); r.State != ledger.IdemReplay || string(r.Response.Body) != `{"x":1}` {
		t.Fatalf("replay %v %s", r.State, r.Response.Body)
	}
	for _, a := range []ledger.Activity{stranger, holder} {
		rows, err := b.led.ListActivity(b.ctx, k.IntegrationID, ledger.ActivityFilter{RequestID: &a.RequestID, Limit: 2})
		if err != nil || len(rows) != 1 || rows[0].Operation != "create_site" || rows[0].HTTPStatus != 200 {
			t.Fatalf("record of %s: %+v %v", a.RequestID, rows, err)
		}
	}
	if rows, _ := b.led.ListActivity(b.ctx, k.IntegrationID, ledger.ActivityFilter{Limit: 10}); len(rows) != 2 {
		t.Fatalf("%d records, want 2", len(rows))
	}
}
