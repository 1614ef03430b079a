package ledger_test

import (
	"encoding/json"
	"testing"
	"time"

	"siteenv/ledger"
)

// TestStalledAttemptCannotFinishTheNewOwnersQuery: an attempt that stalled
// beyond its lease, whose query was requeued and claimed again, finishes
// nothing: neither its own finish (FinishQueryRow) nor a request's finish
// with its stored response (FinishQueryCompleted) overwrites the running
// attempt's, and the new owner's finish is the one kept.
func TestStalledAttemptCannotFinishTheNewOwnersQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, err := b.led.CreateAccount(b.ctx, "stalled", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{ledger.ScopeQueriesRun, ledger.ScopeSitesWrite}})
	if err != nil {
		t.Fatal(err)
	}
	const lease = 5 * time.Second
	res, err := b.led.Admit(b.ctx, ledger.AdmitRequest{Integration: k.IntegrationID, IdemKey: "stalled-1", Operation: "create_query",
		Fingerprint: []byte("f"), CreateSite: true,
		Site: ledger.Site{AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "stalled"},
		Query: ledger.Query{AccountID: acct.ID, IntegrationID: k.IntegrationID, RadiusM: 100, LayerIDs: []string{"l"},
			Frozen: []ledger.FrozenLayer{{LayerID: "l"}}},
		Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 30}, PerMinute: 10,
			RunNow: true, MaxRunning: 4, Lease: lease}})
	if err != nil {
		t.Fatal(err)
	}
	stalled := res.Query
	if stalled.Status != ledger.QueryRunning || stalled.Attempts != 1 {
		t.Fatalf("admitted %s in attempt %d, want running in attempt 1", stalled.Status, stalled.Attempts)
	}
	// The first attempt stalls: its lease lapses, the janitor requeues the
	// query and another worker claims it (attempt 2).
	b.clock.Advance(lease + time.Second)
	if err := b.led.FailStaleQueries(b.ctx, time.Hour, 5); err != nil {
		t.Fatal(err)
	}
	owner, err := b.led.ClaimQuery(b.ctx, 4, lease)
	if err != nil || owner.ID != stalled.ID || owner.Attempts != 2 {
		t.Fatalf("claim after the lapse: %s attempt %d, %v", owner.ID, owner.Attempts, err)
	}

	// The stalled attempt wakes and finishes, both ways.
	one := int64(1)
	stale := []ledger.LayerOutcome{{LayerID: "l", DataStatus: "available", Coverage: "full"}}
	f, err := b.led.PrepareFinish(stalled, ledger.QuerySucceeded, stale, "results/stale", 10, &one, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := b.led.FinishQueryCompleted(b.ctx, f, k.IntegrationID, "stalled-1", res.Token,
		ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: []byte(`{}`)}, acct.ID,
		ledger.Activity{Operation: "create_query", Outcome: "completed", HTTPStatus: 200})
	if err != nil || kept {
		t.Fatalf("stalled FinishQueryCompleted: kept %v, %v; want nothing written", kept, err)
	}
	if _, kept, err := b.led.FinishQueryRow(b.ctx, stalled, ledger.QuerySucceeded, stale, "results/stale", 10, &one, time.Hour); err != nil || kept {
		t.Fatalf("stalled FinishQueryRow: kept %v, %v; want nothing written", kept, err)
	}
	q, err := b.led.Query(b.ctx, acct.ID, stalled.ID)
	if err != nil {
		t.Fatal(err)
	}
	if q.Status != ledger.QueryRunning || q.ResultKey != nil || q.Attempts != 2 {
		t.Fatalf("after the stalled finishes: %s, key %v, attempt %d; want running, no key, attempt 2", q.Status, q.ResultKey, q.Attempts)
	}
	// The owner's lease is still renewable: the stalled finish left it alone.
	if lost, err := b.led.RenewJobLeases(b.ctx, []ledger.JobClaim{{ID: owner.ID, Attempt: owner.Attempts}}, nil, lease); err != nil || len(lost) != 0 {
		t.Fatalf("owner's renewal: lost %v, %v", lost, err)
	}

	// The new owner's finish is kept.
	mine := []ledger.LayerOutcome{{LayerID: "l", DataStatus: "available", Coverage: "partial"}}
	done, kept, err := b.led.FinishQueryRow(b.ctx, owner, ledger.QueryPartial, mine, "results/owner", 20, nil, time.Hour)
	if err != nil || !kept {
		t.Fatalf("owner's finish: kept %v, %v", kept, err)
	}
	if done.Status != ledger.QueryPartial || done.ResultKey == nil || *done.ResultKey != "results/owner" || done.Attempts != 2 {
		t.Fatalf("owner's finish stored %s, key %v, attempt %d", done.Status, done.ResultKey, done.Attempts)
	}
	// A finish without an attempt (FinishQuery, by id) still finishes
	// whichever attempt runs: here none does any more.
	if kept, err := b.led.FinishQuery(b.ctx, stalled.ID, ledger.QueryFailed, nil, "", 0, nil, time.Hour); err != nil || kept {
		t.Fatalf("FinishQuery of a finished query: kept %v, %v", kept, err)
	}
}
