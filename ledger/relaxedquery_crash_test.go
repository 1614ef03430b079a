package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/clock"
	"siteenv/ledger"
)

// TestRelaxedQueryAnswerAfterCrash: POST /queries commits its admission
// (claim, site, query) and its answer (finish, stored response, audit
// record) relaxed, in two commits. A PostgreSQL crash then keeps both,
// neither, or the admission alone (the WAL writer flushed between them): a
// retry with the same Idempotency-Key replays the answer, whose query is
// stored finished; or runs afresh, the query unknown; or finds the claim in
// flight until its lease lapses, then runs afresh, the query left running
// for the janitor to requeue (docs/operations.md, "Durability"). A query
// answered first (AdmitRequest.Answer) is one commit: kept whole or lost
// whole, never in flight. A durable commit made after them (anything
// paid) flushes them: they survive.
func TestRelaxedQueryAnswerAfterCrash(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	cl := newCrashable(t, ctx, "relaxed-crash-", clk)
	l := cl.open()
	acct, err := l.CreateAccount(ctx, "crash", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := l.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"queries:run", "sites:write"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Authenticate(ctx, k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	auth := &ledger.AdmitAuth{KeyHash: ledger.HashKey(k.Secret), Scopes: []string{"queries:run"}, Datasets: []string{"l"}, Catalogue: p.Catalogue}
	// answer admits and answers one query under idemKey, all relaxed.
	answer := func(l *ledger.Ledger, idemKey, fingerprint string) uuid.UUID {
		t.Helper()
		res, err := l.Admit(ctx, ledger.AdmitRequest{Integration: k.IntegrationID, IdemKey: idemKey, Operation: "create_query",
			Fingerprint: []byte("f"), CreateSite: true,
			Site: ledger.Site{AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: fingerprint},
			Query: ledger.Query{AccountID: acct.ID, IntegrationID: k.IntegrationID, RadiusM: 100, LayerIDs: []string{"l"},
				Frozen: []ledger.FrozenLayer{{LayerID: "l"}}},
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 30}, PerMinute: 10,
				RunNow: true, MaxRunning: 4, Lease: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		f, err := l.PrepareFinish(res.Query, ledger.QuerySucceeded, []ledger.LayerOutcome{{LayerID: "l", DataStatus: "available", Coverage: "full"}},
			"", 0, nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := l.FinishQueryCompleted(ctx, f, k.IntegrationID, idemKey, res.Token,
			ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: []byte(`{"query_id":"` + res.Query.ID.String() + `"}`)},
			acct.ID, ledger.Activity{Operation: "create_query", Outcome: "completed", RequestID: uuid.New(), HTTPStatus: 200})
		if err != nil || !kept {
			t.Fatalf("answer %s: kept %v, %v", idemKey, kept, err)
		}
		return res.Query.ID
	}
	// answerFirst admits a query with its answer, one relaxed commit.
	answerFirst := func(l *ledger.Ledger, idemKey, fingerprint string) uuid.UUID {
		t.Helper()
		q := ledger.Query{ID: uuid.New(), AccountID: acct.ID, IntegrationID: k.IntegrationID, RadiusM: 100, LayerIDs: []string{"l"},
			Frozen: []ledger.FrozenLayer{{LayerID: "l"}}, CreatedAt: clk.Now()}
		f, err := l.PrepareFinish(q, ledger.QuerySucceeded, []ledger.LayerOutcome{{LayerID: "l", DataStatus: "available", Coverage: "full"}},
			"", 0, nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Admit(ctx, ledger.AdmitRequest{Auth: auth, IdemKey: idemKey, Operation: "create_query",
			Fingerprint: []byte("f"),
			Site:        ledger.Site{ID: uuid.New(), AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: fingerprint},
			Query:       q,
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 30}, PerMinute: 10,
				RunNow: true, MaxRunning: 4, Lease: time.Minute},
			Answer: &ledger.AdmitAnswer{Finish: f,
				Response: ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: []byte(`{"query_id":"` + q.ID.String() + `"}`)},
				Activity: ledger.Activity{Operation: "create_query", Outcome: "completed", RequestID: uuid.New(), HTTPStatus: 200}}})
		if err != nil || !res.Answered {
			t.Fatalf("answer first %s: %+v, %v", idemKey, res, err)
		}
		return q.ID
	}
	// retry is the client's retry after the crash: a replay of a stored
	// answer whose query is finished, or a fresh claim with no query.
	retry := func(l *ledger.Ledger, idemKey string, id uuid.UUID) (replayed bool) {
		t.Helper()
		claim, err := l.ClaimIdempotency(ctx, k.IntegrationID, idemKey, "create_query", []byte("f"))
		if err != nil {
			t.Fatal(err)
		}
		q, qerr := l.Query(ctx, acct.ID, id)
		switch claim.State {
		case ledger.IdemReplay:
			if qerr != nil || q.Status != ledger.QuerySucceeded || !strings.Contains(string(claim.Response.Body), id.String()) {
				t.Fatalf("%s: the answer survived but its query is %+v, %v", idemKey, q, qerr)
			}
			return true
		case ledger.IdemFresh:
			if !errors.Is(qerr, ledger.ErrNotFound) {
				t.Fatalf("%s: the answer was lost but its query is %+v, %v", idemKey, q, qerr)
			}
			return false
		case ledger.IdemInFlight:
			// The admission alone survived: its claim's lease lapses, then
			// the retry runs afresh.
			if qerr != nil || q.Status != ledger.QueryRunning {
				t.Fatalf("%s: the admission survived without its answer but its query is %+v, %v", idemKey, q, qerr)
			}
			clk.Advance(time.Minute)
			if again, err := l.ClaimIdempotency(ctx, k.IntegrationID, idemKey, "create_query", []byte("f")); err != nil || again.State != ledger.IdemFresh {
				t.Fatalf("%s: after the claim's lease: %+v, %v", idemKey, again, err)
			}
			return false
		}
		t.Fatalf("%s: claim state %v after the crash", idemKey, claim.State)
		return false
	}
	flushed := answer(l, "flushed", "fp-1")
	flushedFirst := answerFirst(l, "flushed-first", "fp-3")
	if _, err := l.CreateAccount(ctx, "a durable commit", 0); err != nil {
		t.Fatal(err)
	}
	last := answer(l, "last", "fp-2")
	lastFirst := answerFirst(l, "last-first", "fp-4")
	l.Close()
	cl.crash()

	l = cl.open()
	defer l.Close()
	if !retry(l, "flushed", flushed) || !retry(l, "flushed-first", flushedFirst) {
		t.Fatal("an answer followed by a durable commit was lost in the crash")
	}
	t.Logf("the last answers before the crash (no durable commit after them) were kept: %v, %v (answered first)",
		retry(l, "last", last), retry(l, "last-first", lastFirst))
}
