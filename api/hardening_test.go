package api_test

import (
	"bytes"
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"siteenv/api"
	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
	"siteenv/ledger/pgembed"
)

// replica serves the API from its own Ledger (its own pool and lease
// renewal: one process of several) over the database of dsn.
func replica(t *testing.T, dsn string, clk *clock.Fake, configure ...func(*api.Server)) *harness {
	t.Helper()
	led, err := ledger.Open(context.Background(), dsn, ledger.Options{Clock: clk, MaxConns: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(led.Close)
	return setupOn(t, clk, led, nil, configure...)
}

// TestNULReachingTheDatabaseIsBadInput: text the database refuses (a NUL,
// SQLSTATE 22021) is the client's error naming the field, never a retryable
// service_unavailable (which makes a client retry forever), and nothing is
// stored. The API may refuse the NUL itself before the database; either way
// the answer is a 400 naming the field.
func TestNULReachingTheDatabaseIsBadInput(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k := h.key(acct, nil, "sites:read", "sites:write")
	cases := []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"site": geometrySelector(squareHa(1, 151.0, -33.81)), "name": "Lot\x007"}, "name"},
		{map[string]any{"site": geometrySelector(squareHa(1, 151.0, -33.81)), "external_reference": map[string]any{"namespace": "crm", "reference": "a\x00b"}},
			"external_reference.reference"},
	}
	for _, c := range cases {
		r := h.createSite(k.Secret, c.body)
		assertProblemShape(t, r)
		m := r.json(t)
		if r.status != 400 || (m["code"] != "invalid_request" && m["code"] != "invalid_json") || m["retryable"] != false {
			t.Fatalf("NUL in %s: %d %s", c.field, r.status, r.body)
		}
		if f := fieldsNamed(m); len(f) != 1 || f[0] != c.field {
			t.Fatalf("NUL in %s: field errors %v", c.field, f)
		}
	}
	if n := len(h.do("GET", "/sites", k.Secret, nil).json(t)["sites"].([]any)); n != 0 {
		t.Fatalf("%d sites stored from refused requests", n)
	}
}

// TestStoppedDatabaseIsRetryableUnavailable: with the database really
// stopped, requests are 503 service_unavailable, retryable, with Retry-After.
func TestStoppedDatabaseIsRetryableUnavailable(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "siteenv-stopped-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// The postgres user must reach the cluster directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cluster, err := pgembed.Start(ctx, dir+"/pg", pgembed.Options{Database: "siteenv", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop(ctx) })
	h := replica(t, cluster.DSN("siteenv"), clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC)))
	k := h.key(h.account(10), nil, "usage:read", "sites:read", "sites:write")
	if r := h.do("GET", "/usage", k.Secret, nil); r.status != 200 {
		t.Fatalf("before the stop: %d", r.status)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range []response{
		h.do("GET", "/usage", k.Secret, nil),
		h.createSite(k.Secret, map[string]any{"site": geometrySelector(squareHa(1, 151.0, -33.81))}),
	} {
		r.problem(t, "service_unavailable", 503)
		assertProblemShape(t, r)
		if r.json(t)["retryable"] != true || r.header.Get("Retry-After") == "" {
			t.Fatalf("not retryable: %v %s", r.header, r.body)
		}
	}
}

// TestIdempotencyInFlightDuplicateIsRetryable: a duplicate of a request still
// running waits, then gets a retryable idempotency_conflict with Retry-After
// (not the final "changed request" answer); once the first finishes the
// duplicate replays its response byte for byte.
func TestIdempotencyInFlightDuplicateIsRetryable(t *testing.T) {
	t.Parallel()
	var count atomic.Int64
	gate := make(chan struct{})
	h := setup(t, func(s *api.Server) {
		api.InstallEcho(s, &count, gate)
		api.SetIdempotencyWait(s, 100*time.Millisecond)
	})
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release) // before the server's shutdown, which waits for the request
	k := h.key(h.account(0), nil, "sites:read", "sites:write")
	body := map[string]any{"name": "slow", "n": 1}
	first := make(chan response)
	go func() { first <- h.do("POST", "/sites", k.Secret, body, "Idempotency-Key", "in-flight") }()
	for count.Load() == 0 {
		runtimeGosched()
	}
	dup := h.do("POST", "/sites", k.Secret, body, "Idempotency-Key", "in-flight")
	m := dup.problem(t, "idempotency_conflict", 409)
	assertProblemShape(t, dup)
	if m["retryable"] != true || dup.header.Get("Retry-After") != "1" {
		t.Fatalf("in-flight duplicate: retryable=%v Retry-After=%q", m["retryable"], dup.header.Get("Retry-After"))
	}
	release()
	r1 := <-first
	if r1.status != 200 {
		t.Fatalf("first: %d %s", r1.status, r1.body)
	}
	again := h.do("POST", "/sites", k.Secret, body, "Idempotency-Key", "in-flight")
	if again.status != 200 || !bytes.Equal(again.body, r1.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("not replayed: %d %s vs %s", again.status, again.body, r1.body)
	}
	if count.Load() != 1 {
		t.Fatalf("executed %d times", count.Load())
	}
}

// TestIdempotencyRetryAfterCrashTakesOver: a replica claims a key and dies
// mid-request (its database connections cut, its lease no longer renewed). A
// retry with the same key on another replica takes the claim over as soon as
// the lease lapses, instead of a non-retryable conflict for minutes, and a
// later retry replays that response.
func TestIdempotencyRetryAfterCrashTakesOver(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	dsn := ledgertest.DSN(t)
	proxy, viaProxy := ledgertest.NewProxy(t, dsn)
	var countA, countB atomic.Int64
	gate := make(chan struct{})
	a := replica(t, viaProxy, clk, func(s *api.Server) { api.InstallEcho(s, &countA, gate) })
	b := replica(t, dsn, clk, func(s *api.Server) { api.InstallEcho(s, &countB, nil) })
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release) // before the servers' shutdown, which waits for the request
	k := b.key(b.account(0), nil, "sites:read", "sites:write")
	body := map[string]any{"name": "crash", "n": 3}

	crashed := make(chan response)
	go func() { crashed <- a.do("POST", "/sites", k.Secret, body, "Idempotency-Key", "crash-key") }()
	for countA.Load() == 0 {
		runtimeGosched()
	}
	// kill -9: the replica's connections vanish and its lease stops renewing.
	proxy.Kill()
	clk.Advance(ledger.DefaultIdempotencyLease)

	retry := b.do("POST", "/sites", k.Secret, body, "Idempotency-Key", "crash-key")
	if retry.status != 200 || countB.Load() != 1 {
		t.Fatalf("retry after the crash: %d %s (executed %d)", retry.status, retry.body, countB.Load())
	}
	// Let the dead replica's goroutine finish: it can no longer reach the
	// database, so it neither stores nor releases anything.
	release()
	if r := <-crashed; r.status == 200 {
		t.Fatalf("the cut-off replica stored a response: %s", r.body)
	}
	again := b.do("POST", "/sites", k.Secret, body, "Idempotency-Key", "crash-key")
	if !bytes.Equal(again.body, retry.body) || again.header.Get("Idempotent-Replayed") != "true" || countB.Load() != 1 {
		t.Fatalf("not replayed: %s vs %s", again.body, retry.body)
	}
}

// TestAcquireIdenticalAcrossReplicasChargesOnce: 20 identical purchases sent
// at once to two replicas of one database make one debit and one answer.
func TestAcquireIdenticalAcrossReplicasChargesOnce(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	dsn := ledgertest.DSN(t)
	reps := []*harness{replica(t, dsn, clk), replica(t, dsn, clk)}
	h := reps[0]
	h.publish("nsw.flood", "flood", 25, []string{"NSW"}, "")
	acct := h.account(1000)
	k := h.key(acct, nil, "access:acquire", "usage:read")
	site := h.site(acct)
	const n = 20
	res := make([]response, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res[i] = reps[i%2].buy(k.Secret, "storm", site, "flood")
		}(i)
	}
	wg.Wait()
	for i := range res {
		if res[i].status != 200 || !bytes.Equal(res[i].body, res[0].body) {
			t.Fatalf("response %d: %d %s\nvs %s", i, res[i].status, res[i].body, res[0].body)
		}
	}
	u := h.do("GET", "/usage", k.Secret, nil).json(t)["credits"].(map[string]any)
	if u["account_balance"] != float64(975) || u["integration_used"] != float64(25) {
		t.Fatalf("usage %v", u)
	}
	if ps := h.do("GET", "/purchases", k.Secret, nil).json(t)["purchases"].([]any); len(ps) != 1 {
		t.Fatalf("%d purchases", len(ps))
	}
	h.checkLedger()
}
