package api_test

import (
	"bytes"
	"context"
	"fmt"
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

// A client told in POST /queries' answer that its query succeeded must find
// it finished on every replica the moment the answer arrives, never
// result_not_ready: the finish is committed before the answer is sent,
// whether the answer was computed before its admission (stored with it) or
// after it (a key's first query: its finish stored with the response), and
// the other replica serves the result from the finished row while the
// result's file may still be being written behind the answer. Two Servers,
// each with its own ledger and runner (two processes), over one database
// and one store; no waits between the answer and the other replica's reads.
func TestAnsweredQueryIsFinishedOnEveryReplica(t *testing.T) {
	t.Parallel()
	_, ledA, ledB, a, b := twoReplicas(t)
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	backend := func(h *harness, led *ledger.Ledger) *queryHarness {
		runner := newRunner(t, jobs.Config{Workers: 1, Poll: 20 * time.Millisecond, TempDir: t.TempDir()}, led,
			newEngine(t, st, engine.Options{MemoryBudget: 64 << 20}), st)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		runner.Start(ctx)
		api.SetQueryBackend(h.srv, st, runner)
		stopBehind(t, h, runner)
		return &queryHarness{harness: h, store: st, runner: runner}
	}
	qa, _ := backend(a, ledA), backend(b, ledB)
	qa.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10), "b50": east(50), "b900": east(900)})
	acct := a.account(0)

	// onB checks, at once, that replica B holds the query A answered
	// finished (m) finished, with its features.
	onB := func(what string, m map[string]any, k string) {
		t.Helper()
		id, err := uuid.Parse(fmt.Sprint(m["query_id"]))
		if err != nil {
			t.Fatalf("%s: %v", what, m)
		}
		if q, err := ledB.Query(b.ctx, acct, id); err != nil || q.Status != ledger.QuerySucceeded {
			t.Fatalf("%s: the ledger holds %s %v when its answer arrived, want succeeded", what, q.Status, err)
		}
		r := b.do("GET", "/queries/"+id.String()+"/results?limit=10", k, nil)
		if r.status != 200 {
			t.Fatalf("%s: replica B's results: %d %s, want 200", what, r.status, r.body)
		}
		if got, want := fmt.Sprint(featureIDs(r.json(t))), fmt.Sprint(featureIDs(m)); got != want {
			t.Fatalf("%s: replica B's results %s, want %s", what, got, want)
		}
		if g := b.do("GET", "/queries/"+id.String(), k, nil).json(t); g["status"] != "succeeded" {
			t.Fatalf("%s: replica B's GET: %v", what, g)
		}
	}
	for i := range 8 {
		// A new key: its first query is not answered first (its answer is
		// computed after the admission, in the request); its second may be.
		k := a.key(acct, nil, "queries:run", "sites:read", "sites:write").Secret
		for j := range 2 {
			what := fmt.Sprintf("key %d, query %d", i, j)
			idem := uuid.NewString()
			body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0] + float64(2*i+j)*0.00001, "latitude": origin[1]},
				"layer_ids": []string{"nsw.bores"}, "radius_m": 100}
			r := a.do("POST", "/queries", k, body, "Idempotency-Key", idem, "Prefer", "wait=3")
			m := r.json(t)
			if r.status != 200 || m["status"] != "succeeded" || m["page"].(map[string]any)["has_more"] != false || len(featureIDs(m)) == 0 {
				t.Fatalf("%s: answer %d %s", what, r.status, r.body)
			}
			onB(what, m, k)
			again := b.do("POST", "/queries", k, body, "Idempotency-Key", idem, "Prefer", "wait=3")
			if again.status != 200 || !bytes.Equal(again.body, r.body) || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s: replay on replica B: %d %s", what, again.status, again.body)
			}
		}
	}
	// An answer spanning pages: its first page says so, and B serves them all.
	k := a.key(acct, nil, "queries:run", "sites:read", "sites:write").Secret
	r := a.do("POST", "/queries", k, map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]},
		"layer_ids": []string{"nsw.bores"}, "radius_m": 1000, "page_size": 1}, "Idempotency-Key", uuid.NewString(), "Prefer", "wait=3")
	m := r.json(t)
	if r.status != 200 || m["status"] != "succeeded" || m["page"].(map[string]any)["has_more"] != true {
		t.Fatalf("paged answer %d %s", r.status, r.body)
	}
	id := fmt.Sprint(m["query_id"])
	if got := fmt.Sprint(featureIDs(b.do("GET", "/queries/"+id+"/results?limit=10", k, nil).json(t))); got != "[b10 b50 b900]" {
		t.Fatalf("replica B's results of a paged answer: %s", got)
	}
}
