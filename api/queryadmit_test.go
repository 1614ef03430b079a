package api_test

import (
	"context"
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

// A request refused with 400 (or 403, 404) is refused before its admission
// is counted: the account's 30 admissions a minute stay whole for queries
// that run.
func TestRefusedQueriesUseNoAdmission(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, false)
	qh.points("nsw.bores", "water", 0, 1000, nil, map[string]orb.Point{"b": east(10)})
	qh.points("nsw.contam", "contamination", 30, 1000, nil, map[string]orb.Point{"c": east(10)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	site := map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}
	for i := 0; i < 40; i++ {
		// Over the layer's 1,000 m: refused once the layer is read.
		qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.bores"}, "radius_m": 1500}).problem(t, "invalid_request", 400)
		qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.none"}, "radius_m": 100}).problem(t, "not_found", 404)
		qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.contam"}, "radius_m": 100}).problem(t, "access_required", 403)
	}
	body := map[string]any{"site": site, "layer_ids": []string{"nsw.bores"}, "radius_m": 10}
	for i := 0; i < 30; i++ {
		if r := qh.query(k.Secret, body); r.status != 202 {
			t.Fatalf("admission %d after the refusals: %d %s", i+1, r.status, r.body)
		}
	}
	qh.query(k.Secret, body).problem(t, "rate_limited", 429)
}

// A POST /queries with a point site whose answer fits its page costs one
// ledger round trip, counted on the ledger's pool (ledger.RoundTrips): its
// answer is computed first (the key was seen moments ago), and the
// admission stores it (the key's authentication, the claim done with the
// response, the site, sections, count, the query finished and the audit
// record in one statement: queries.Service.answerFirst). Nothing is left to
// store behind the answer: the query reads finished at once. That holds
// for a combination of layers never asked before, once each layer has
// been (the catalogue cache and the frozen layers stored are a layer's,
// not a combination's). The runner's workers and janitor are kept idle
// (an hour's poll) so that only the request is counted.
func TestSmallQueryCostsOneRoundTrip(t *testing.T) {
	t.Parallel()
	h := setup(t, func(s *api.Server) {})
	qh := idleRunnerQueries(t, h)
	api.SetAnswerFirstWait(h.srv, time.Minute) // every answer is stored first, whatever the load
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10), "b50": east(50), "b900": east(900)})
	qh.points("nsw.tanks", "water", 0, 5000, nil, map[string]orb.Point{"t20": east(20)})
	qh.points("nsw.wells", "water", 0, 5000, nil, map[string]orb.Point{"w30": east(30)})
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	ask := func(lon float64, layers ...string) response {
		return qh.query(k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": lon, "latitude": origin[1]},
			"layer_ids": layers, "radius_m": 100}, "Prefer", "wait=3")
	}
	// The first of each layer warms the catalogue cache, stores its frozen
	// entry and lets the workers' first claim pass.
	for _, l := range []string{"nsw.bores", "nsw.tanks", "nsw.wells"} {
		if r := ask(origin[0], l); r.status != 200 {
			t.Fatalf("warm-up: %d %s", r.status, r.body)
		}
	}
	// The fewest of three: the runner's first claim and the janitor's first
	// sweep, made as it starts, may still be under way beside the first.
	least, statements := int64(1<<62), int64(0)
	for i, c := range []struct {
		layers   []string
		features int
	}{{[]string{"nsw.bores", "nsw.tanks"}, 3}, {[]string{"nsw.tanks", "nsw.wells"}, 2}, {[]string{"nsw.wells", "nsw.bores"}, 3}} {
		before := h.led.RoundTrips()
		r := ask(origin[0]+float64(i+1)*0.0001, c.layers...) // a new site, registered by the admission
		after := h.led.RoundTrips()
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if ids := featureIDs(r.json(t)); len(ids) != c.features {
			t.Fatalf("%v: features %v, want %d", c.layers, ids, c.features)
		}
		id, _ := uuid.Parse(r.json(t)["query_id"].(string))
		if q, err := h.led.Query(h.ctx, acct, id); err != nil || q.Status != ledger.QuerySucceeded || q.Attempts != 1 {
			t.Fatalf("stored %+v, %v; want it succeeded as answered", q, err)
		}
		if n := after.Trips - before.Trips; n < least {
			least, statements = n, after.Statements-before.Statements
		}
	}
	if least != 1 {
		t.Fatalf("POST /queries took at least %d round trips (%d statements), want 1", least, statements)
	}
}

// POST /queries leaves the key's authentication to its admission
// (ledger.Admit with Auth) once the catalogue cache is warm. A
// key that is unknown, revoked (after it was used), lacking a scope or a
// dataset, or a site the key may not create, is answered exactly as when
// the key is looked up first, and counts nothing: the account's 30
// admissions a minute stay whole afterwards. A catalogue change between
// requests is seen by the next one.
func TestAdmissionAuthenticatesTheKey(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, false)
	qh.points("nsw.bores", "water", 0, 1000, nil, map[string]orb.Point{"b": east(10)})
	qh.points("nsw.tanks", "water", 0, 1000, nil, map[string]orb.Point{"t": east(20)})
	site := map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}
	body := map[string]any{"site": site, "layer_ids": []string{"nsw.bores"}, "radius_m": 10}
	// Warm the catalogue cache on another account.
	warm := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	if r := qh.query(warm.Secret, body); r.status != 202 {
		t.Fatalf("warm-up: %d %s", r.status, r.body)
	}
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	revoked := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	if r := qh.query(revoked.Secret, body); r.status != 202 {
		t.Fatalf("before revocation: %d %s", r.status, r.body)
	}
	if err := qh.led.RevokeKey(qh.ctx, revoked.KeyID); err != nil {
		t.Fatal(err)
	}
	noRun := qh.key(acct, nil, "sites:read", "sites:write")
	narrow := qh.key(acct, []string{"nsw.tanks"}, "queries:run", "sites:read", "sites:write")
	ro := qh.key(acct, nil, "queries:run", "sites:read")
	newSite := map[string]any{"site": map[string]any{"kind": "point", "longitude": 151.5, "latitude": -33.5}, "layer_ids": []string{"nsw.bores"}, "radius_m": 10}
	for range 10 {
		qh.query(revoked.Secret, body).problem(t, "credential_revoked", 401)
		qh.query("sek_unknown", body).problem(t, "unauthenticated", 401)
		qh.query(noRun.Secret, body).problem(t, "scope_insufficient", 403)
		qh.query(narrow.Secret, body).problem(t, "not_found", 404)
		qh.query(ro.Secret, newSite).problem(t, "scope_insufficient", 403)
	}
	// The read-only key may query a site that exists.
	if r := qh.query(ro.Secret, body); r.status != 202 {
		t.Fatalf("existing site without sites:write: %d %s", r.status, r.body)
	}
	// A layer published after the cache was warmed is found.
	qh.points("nsw.wells", "water", 0, 1000, nil, map[string]orb.Point{"w": east(30)})
	if r := qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.wells"}, "radius_m": 10}); r.status != 202 {
		t.Fatalf("new layer: %d %s", r.status, r.body)
	}
	// Three admissions of the account so far (revoked's before its
	// revocation, ro's, the new layer's): 27 more, then 429.
	for i := 0; i < 27; i++ {
		if r := qh.query(k.Secret, body); r.status != 202 {
			t.Fatalf("admission %d after the refusals: %d %s", i+4, r.status, r.body)
		}
	}
	qh.query(k.Secret, body).problem(t, "rate_limited", 429)
}

// idleRunnerQueries gives h a query backend (file store, engine, runner)
// whose workers and janitor stay idle (an hour's poll), so that only the
// requests' own round trips are counted.
func idleRunnerQueries(t *testing.T, h *harness) *queryHarness {
	t.Helper()
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, st, engine.Options{MemoryBudget: 64 << 20})
	runner := newRunner(t, jobs.Config{Workers: 1, Poll: time.Hour, Sweep: time.Hour, TempDir: t.TempDir()}, h.led, eng, st)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	runner.Start(ctx)
	api.SetQueryBackend(h.srv, st, runner)
	qh := &queryHarness{harness: h, store: st, runner: runner}
	stopBehind(t, h, runner)
	return qh
}

// A POST /queries with an unknown key costs two round trips before its
// 401: the admission that authenticates it (refused, its implicit
// transaction rolled back with it, no ROLLBACK of its own) and the key's
// lookup that answers exactly.
func TestUnknownKeyCostsTwoRoundTrips(t *testing.T) {
	t.Parallel()
	h := setup(t, func(s *api.Server) {})
	qh := idleRunnerQueries(t, h)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]},
		"layer_ids": []string{"nsw.bores"}, "radius_m": 100}
	if r := qh.query(k.Secret, body); r.status != 200 && r.status != 202 {
		t.Fatalf("warm-up: %d %s", r.status, r.body)
	}
	least := int64(1 << 62)
	for range 3 {
		before := h.led.RoundTrips()
		qh.query("sek_unknown", body).problem(t, "unauthenticated", 401)
		least = min(least, h.led.RoundTrips().Trips-before.Trips)
	}
	if least != 2 {
		t.Fatalf("an unknown key's POST took at least %d round trips, want 2", least)
	}
}
