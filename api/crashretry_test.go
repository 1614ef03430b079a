package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/store"
)

// gatedRunner is a replica whose runner never runs a query: its requests
// wait on gate (a process about to die).
type gatedRunner struct{ gate chan struct{} }

func (g gatedRunner) Notify() {}
func (g gatedRunner) Wait(ctx context.Context, _ uuid.UUID, _ time.Duration) (ledger.Query, bool) {
	select {
	case <-g.gate:
	case <-ctx.Done():
	}
	return ledger.Query{}, false
}

// crashedAdmission sets up two replicas over one database and store, A
// whose runner never runs a query and B with a real one, and has A admit a
// query under Idempotency-Key idem and die before it answers: its claim's
// lease has lapsed by the end. It returns B, the key k that sent it, the
// request's body, its account and the id of the query A's admission
// committed.
func crashedAdmission(t *testing.T, idem string) (b *harness, acct uuid.UUID, k ledger.NewKey, body, admitted string) {
	t.Helper()
	clk, ledA, ledB, a, b := twoReplicas(t)
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runner := newRunner(t, jobs.Config{Workers: 2, Poll: 20 * time.Millisecond, TempDir: t.TempDir()}, ledB,
		newEngine(t, st, engine.Options{MemoryBudget: 64 << 20}), st)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	runner.Start(ctx)
	api.SetQueryBackend(b.srv, st, runner)
	stopBehind(t, b, runner)
	qb := &queryHarness{harness: b, store: st, runner: runner}
	qb.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10)})
	gate := make(chan struct{})
	api.SetQueryBackend(a.srv, st, gatedRunner{gate: gate})
	acct = b.account(0)
	k = b.key(acct, nil, "queries:run", "sites:read", "sites:write")
	body = `{"site":{"kind":"point","longitude":151.0,"latitude":-33.81},"layer_ids":["nsw.bores"],"radius_m":100}`

	// Replica A admits the query and hangs before it answers.
	answeredA := make(chan struct{})
	go func() {
		defer close(answeredA)
		req, _ := http.NewRequestWithContext(ctx, "POST", a.base+"/queries", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+k.Secret)
		req.Header.Set("Idempotency-Key", idem)
		if resp, err := a.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	t.Cleanup(func() {
		close(gate)
		<-answeredA
	})
	var ids []string
	for len(ids) == 0 {
		select {
		case <-answeredA:
			t.Fatal("replica A answered before it was stopped")
		default:
		}
		ids, _ = historyIDs(t, b.do("GET", "/queries", k.Secret, nil))
	}
	// A dies: its claim is no longer renewed, and lapses; nothing more of
	// it reaches the ledger.
	ledA.Close()
	clk.Advance(ledger.DefaultIdempotencyLease + time.Second)
	return b, acct, k, body, ids[0]
}

// A replica that dies after its admission of a query committed, before it
// answered, leaves the query to be run by a worker and its claim to lapse.
// The client's retry with the same Idempotency-Key on another replica takes
// the claim over and answers with that query: one query, the one the
// admission committed, never a second the client would be billed the
// rate for and the first id never seen.
func TestRetryAfterACrashGetsTheCommittedQuery(t *testing.T) {
	t.Parallel()
	b, _, k, body, admitted := crashedAdmission(t, "crash-retry-1")
	r := b.do("POST", "/queries", k.Secret, []byte(body), "Idempotency-Key", "crash-retry-1", "Prefer", "wait=3")
	if r.status != 200 && r.status != 202 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if got := r.json(t)["query_id"]; got != admitted {
		t.Fatalf("retry answered query %v, want %s, the one the first admission committed", got, admitted)
	}
	if hist, _ := historyIDs(t, b.do("GET", "/queries", k.Secret, nil)); len(hist) != 1 {
		t.Fatalf("history %v: want the one query", hist)
	}
}

// The same crash, and a sibling key of the integration restricted away
// from the query's layer retries with the Idempotency-Key first: it is
// refused as a fresh request of its own would be, and the claim it took
// over stays taken over, so the original client's retry still gets the
// query the admission committed, never a second one.
func TestRestrictedSiblingRetryAfterACrashLeavesTheQuery(t *testing.T) {
	t.Parallel()
	b, acct, k, body, admitted := crashedAdmission(t, "crash-retry-2")
	sib := b.sibling(acct, k, []string{"nsw.other"}, "queries:run", "sites:read", "sites:write")
	if r := b.do("POST", "/queries", sib.Secret, []byte(body), "Idempotency-Key", "crash-retry-2", "Prefer", "wait=3"); r.status < 400 || r.status >= 500 {
		t.Fatalf("restricted sibling's retry: %d %s, want its refusal", r.status, r.body)
	}
	r := b.do("POST", "/queries", k.Secret, []byte(body), "Idempotency-Key", "crash-retry-2", "Prefer", "wait=3")
	if r.status != 200 && r.status != 202 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if got := r.json(t)["query_id"]; got != admitted {
		t.Fatalf("retry answered query %v, want %s, the one the first admission committed", got, admitted)
	}
	if hist, _ := historyIDs(t, b.do("GET", "/queries", k.Secret, nil)); len(hist) != 1 {
		t.Fatalf("history %v: want the one query", hist)
	}
}
