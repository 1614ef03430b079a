package ledger_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestQueryUsageFollowsEveryChange: the usage counters (query_usage, kept
// by triggers) equal the aggregate over the account's queries after every
// kind of change a query goes through: admission queued and running, a
// claim, finishes with and without a result, a release, a cancel, expiry,
// a requeue, stale attempts requeued and failed across two accounts in
// one statement, and a lease renewal that changes nothing counted.
func TestQueryUsageFollowsEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	dsn := ledgertest.DSN(t)
	led, conn := onDSN(t, dsn, clk), rawConn(t, dsn)
	type acct struct {
		id, integration uuid.UUID
		site            ledger.Site
	}
	mk := func() acct {
		a, err := led.CreateAccount(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		k, err := led.CreateKey(ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{"queries:run"}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := led.CreateSite(ctx, ledger.Site{AccountID: a.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "a"})
		if err != nil {
			t.Fatal(err)
		}
		return acct{a.ID, k.IntegrationID, s}
	}
	accts := []acct{mk(), mk()}
	check := func(step string) {
		t.Helper()
		for _, a := range accts {
			got, err := led.QueryUsage(ctx, a.id)
			if err != nil {
				t.Fatal(err)
			}
			var want ledger.QueryUsage
			if err := conn.QueryRow(ctx, `SELECT coalesce(sum(result_bytes) FILTER (WHERE result_key IS NOT NULL), 0),
					count(*) FILTER (WHERE status = 'queued'), count(*) FILTER (WHERE status = 'running'),
					min(expires_at) FILTER (WHERE result_key IS NOT NULL)
				FROM queries WHERE account_id = $1`, a.id).Scan(&want.RetainedBytes, &want.Queued, &want.Running, &want.NextResultExpiry); err != nil {
				t.Fatal(err)
			}
			if got.RetainedBytes != want.RetainedBytes || got.Queued != want.Queued || got.Running != want.Running ||
				(got.NextResultExpiry == nil) != (want.NextResultExpiry == nil) ||
				(got.NextResultExpiry != nil && !got.NextResultExpiry.Equal(*want.NextResultExpiry)) {
				t.Fatalf("%s: usage %+v, the queries hold %+v", step, got, want)
			}
		}
	}
	lim := ledger.QueryLimits{MaxQueued: 100, MaxRetainedBytes: 1 << 40}
	q := func(a acct) ledger.Query {
		return ledger.Query{AccountID: a.id, IntegrationID: a.integration, SiteID: a.site.ID, SiteGeometry: a.site.Geometry, LayerIDs: []string{"x"}}
	}
	check("no queries")
	for i := 0; i < 6; i++ {
		for _, a := range accts {
			if _, err := led.CreateQuery(ctx, q(a), lim); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("queued")
	running, err := led.Admit(ctx, ledger.AdmitRequest{Claimed: true, Query: q(accts[0]), Limits: ledger.AdmitLimits{QueryLimits: lim, PerMinute: 100, RunNow: true, MaxRunning: 4, Lease: time.Minute}})
	if err != nil || running.Query.Status != ledger.QueryRunning {
		t.Fatalf("admitted %+v, %v", running, err)
	}
	check("admitted running")
	var claimed []ledger.Query
	for i := 0; i < 6; i++ {
		c, err := led.ClaimQuery(ctx, 4, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, c)
	}
	check("claimed")
	if _, err := led.RenewJobLeases(ctx, []ledger.JobClaim{{ID: claimed[0].ID, Attempt: claimed[0].Attempts}}, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	check("lease renewed")
	n := int64(3)
	if _, kept, err := led.FinishQueryRow(ctx, running.Query, ledger.QuerySucceeded, nil, "r/1", 1000, &n, time.Hour); err != nil || !kept {
		t.Fatalf("finish: %v %v", kept, err)
	}
	clk.Advance(time.Minute)
	if _, err := led.FinishQuery(ctx, claimed[0].ID, ledger.QuerySucceeded, nil, "r/2", 2500, &n, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := led.FinishQuery(ctx, claimed[1].ID, ledger.QueryFailed, nil, "", 0, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	check("finished")
	if _, err := led.CancelOrRelease(ctx, running.Query.AccountID, running.Query.ID); err != nil {
		t.Fatal(err)
	}
	check("released")
	if _, err := led.CancelOrRelease(ctx, claimed[2].AccountID, claimed[2].ID); err != nil {
		t.Fatal(err)
	}
	check("cancelled")
	if _, err := led.RequeueQuery(ctx, claimed[3].ID); err != nil {
		t.Fatal(err)
	}
	check("requeued")
	clk.Advance(3 * time.Hour)
	if keys, err := led.ExpireResults(ctx); err != nil || len(keys) != 1 {
		t.Fatalf("expired %v, %v", keys, err)
	}
	check("expired")
	// Stale attempts of both accounts, requeued or failed in one statement.
	if err := led.FailStaleQueries(ctx, 10*time.Hour, 1); err != nil {
		t.Fatal(err)
	}
	check("stale attempts failed")
	if err := led.FailStaleQueries(ctx, time.Minute, 3); err != nil {
		t.Fatal(err)
	}
	check("stale queue failed")
}
