package ledger_test

import (
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestRelaxedCommits proves the relaxed commits are scoped: a relaxed
// transaction runs with synchronous_commit off while the pool's sessions
// keep the durable default; a failing relaxed statement reports its error
// and leaves no aborted transaction behind for later users of the pool; a
// relaxed statement reports its row count; read audit records are recorded
// and listed like any other.
func TestRelaxedCommits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one, err := ledger.Open(b.ctx, ledgertest.DSN(t), ledger.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	inside, after, err := ledger.RelaxedSettingForTest(b.ctx, one)
	if err != nil || inside != "off" || after != "on" {
		t.Fatalf("synchronous_commit inside %q, after %q, err %v", inside, after, err)
	}
	// A batch's implicit transaction (Admit with a key) is relaxed alone too,
	// and plans its statements generically.
	inside, after, err = ledger.RelaxedBatchSettingForTest(b.ctx, one)
	if err != nil || inside != "off force_generic_plan" || after != "on auto" {
		t.Fatalf("batch: synchronous_commit inside %q, after %q, err %v", inside, after, err)
	}
	// More failures than the pool has connections: an aborted transaction
	// handed back to the pool would fail a later statement.
	for i := range 25 {
		if _, err := ledger.ExecRelaxedForTest(b.ctx, b.led, `INSERT INTO no_such_table VALUES (1)`); err == nil {
			t.Fatalf("failure %d not reported", i)
		}
	}
	acct, err := b.led.CreateAccount(b.ctx, "relaxed", 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := ledger.ExecRelaxedForTest(b.ctx, b.led, `UPDATE accounts SET name = name WHERE account_id = $1`, acct.ID)
	if err != nil || n != 1 {
		t.Fatalf("relaxed update: %d rows, %v", n, err)
	}
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	rid := uuid.New()
	if err := b.led.RecordReadActivity(b.ctx, acct.ID, k.IntegrationID, ledger.Activity{Operation: "get_context", Outcome: "completed", RequestID: rid, HTTPStatus: 200}); err != nil {
		t.Fatal(err)
	}
	got, err := b.led.ListActivity(b.ctx, k.IntegrationID, ledger.ActivityFilter{RequestID: &rid, Limit: 10})
	if err != nil || len(got) != 1 || got[0].Operation != "get_context" {
		t.Fatalf("read activity: %+v %v", got, err)
	}
}
