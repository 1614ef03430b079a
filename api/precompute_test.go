package api_test

import (
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/api"
)

// A key that admitted a query or read moments ago has its next queries'
// answers computed while their admission is in the ledger (queries.Vouches),
// with the same answer; a key not seen authenticated does not (engine work for a
// key not yet checked would be free for a bad key), and a key revoked
// meanwhile is refused as before, its precomputed answer discarded and
// the key forgotten.
func TestAdmissionOverlapsTheEngine(t *testing.T) {
	t.Parallel()
	h := setup(t, func(s *api.Server) {})
	qh := idleRunnerQueries(t, h)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10), "b50": east(50), "b900": east(900)})
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	ask := func(secret string, i int) response {
		return qh.query(secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0] + float64(i)*0.00001, "latitude": origin[1]},
			"layer_ids": []string{"nsw.bores"}, "radius_m": 100}, "Prefer", "wait=3")
	}
	counts := func() (int64, int64) {
		return qh.runner.PrecomputeCounts()
	}
	// The first warms the catalogue cache (its key is looked up first); the
	// second's admission authenticates the key and vouches for it.
	for i := range 2 {
		if r := ask(k.Secret, i); r.status != 200 {
			t.Fatalf("warm-up %d: %d %s", i, r.status, r.body)
		}
	}
	if begun, used := counts(); begun != 0 || used != 0 {
		t.Fatalf("before the key was vouched for: %d precomputes begun, %d used", begun, used)
	}
	for i := 2; i < 5; i++ {
		r := ask(k.Secret, i)
		if r.status != 200 {
			t.Fatalf("query %d: %d %s", i, r.status, r.body)
		}
		if ids := featureIDs(r.json(t)); !slices.Equal(ids, []string{"b10", "b50"}) {
			t.Fatalf("query %d: features %v", i, ids)
		}
	}
	if begun, used := counts(); begun != 3 || used != 3 {
		t.Fatalf("3 queries of a vouched key: %d precomputes begun, %d used", begun, used)
	}
	// Another key of the account is not vouched for by k's admissions.
	other := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	if r := ask(other.Secret, 9); r.status != 200 {
		t.Fatalf("other key: %d %s", r.status, r.body)
	}
	if begun, _ := counts(); begun != 3 {
		t.Fatalf("a key not seen admitted began a precompute (%d begun)", begun)
	}
	// A read authenticates a key too: its next query is precomputed.
	reader := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	if r := qh.do("GET", "/context", reader.Secret, nil); r.status != 200 {
		t.Fatalf("GET /context: %d %s", r.status, r.body)
	}
	if r := ask(reader.Secret, 10); r.status != 200 {
		t.Fatalf("reader's query: %d %s", r.status, r.body)
	}
	if begun, used := counts(); begun != 4 || used != 4 {
		t.Fatalf("after a read: %d precomputes begun, %d used; want 4, 4", begun, used)
	}
	// Revoked: refused as ever; one precompute begun and discarded, then
	// the key is forgotten.
	if err := qh.led.RevokeKey(qh.ctx, k.KeyID); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ask(k.Secret, 20+i).problem(t, "credential_revoked", 401)
	}
	if begun, used := counts(); begun != 5 || used != 4 {
		t.Fatalf("after revocation: %d precomputes begun, %d used; want 5, 4", begun, used)
	}
}

// A read vouches for a key only when the key holds the scopes of POST
// /queries, and a vouched key's query is precomputed only when its dataset
// restriction permits every layer: a key that its admission will refuse
// never has engine work done for it.
func TestPrecomputeOnlyForKeysTheAdmissionPasses(t *testing.T) {
	t.Parallel()
	h := setup(t, func(s *api.Server) {})
	qh := idleRunnerQueries(t, h)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10)})
	acct := qh.account(0)
	ask := func(secret string, i int) response {
		return qh.query(secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0] + float64(i)*0.00001, "latitude": origin[1]},
			"layer_ids": []string{"nsw.bores"}, "radius_m": 100}, "Prefer", "wait=3")
	}
	begun := func() int64 {
		n, _ := qh.runner.PrecomputeCounts()
		return n
	}
	// Warm the catalogue cache, so that the keys below are admitted by
	// their query's admission (the provisional path that precomputes).
	warm := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	if r := ask(warm.Secret, 0); r.status != 200 {
		t.Fatalf("warm-up: %d %s", r.status, r.body)
	}
	unscoped := qh.key(acct, nil, "sites:read", "sites:write", "layers:read")
	restricted := qh.key(acct, []string{"nsw.other"}, "queries:run", "sites:read", "sites:write")
	for i, tc := range []struct {
		name, key, code string
		status          int
	}{
		{"a key without queries:run", unscoped.Secret, "scope_insufficient", 403},
		{"a key restricted to other layers", restricted.Secret, "not_found", 404},
	} {
		if r := qh.do("GET", "/context", tc.key, nil); r.status != 200 {
			t.Fatalf("%s: GET /context: %d %s", tc.name, r.status, r.body)
		}
		ask(tc.key, 1+i).problem(t, tc.code, tc.status)
		if n := begun(); n != 0 {
			t.Fatalf("%s: %d precomputes begun, want 0", tc.name, n)
		}
	}
}
