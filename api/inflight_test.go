package api_test

import (
	"sync/atomic"
	"testing"
	"time"

	"siteenv/api"
	"siteenv/clock"
	"siteenv/ledger/ledgertest"
)

// The server's count of requests being served (what the answer-first wait
// stretches with, and the siteenv_http_requests_in_flight gauge) counts a
// request while it is served and comes back to zero after every kind of
// answer: success, refusal, unknown route, bad body, unauthenticated.
func TestRequestsInFlightReturnToZero(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	m := api.NewMetrics()
	gate := make(chan struct{})
	var count atomic.Int64
	h := setupOn(t, clk, ledgertest.New(t, clk), func(c *api.Config) { c.Metrics = m },
		func(s *api.Server) { api.InstallEcho(s, &count, gate) })
	k := h.key(h.account(0), nil, "sites:read", "queries:run", "sites:write")

	done := make(chan response)
	go func() {
		done <- h.do("POST", "/sites", k.Secret, map[string]any{"name": "a", "n": 1}, "Idempotency-Key", "held")
	}()
	for deadline := time.Now().Add(10 * time.Second); count.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held request never reached its handler")
		}
	}
	if n := api.InFlightForTest(h.srv); n != 1 {
		t.Errorf("%d requests counted in flight while one is held", n)
	}
	if got, ok := sample(scrape(t, m), "siteenv_http_requests_in_flight"); !ok || got != 1 {
		t.Errorf("in-flight gauge %v (found %v) while one request is held", got, ok)
	}
	close(gate)
	<-done

	h.do("GET", "/context", k.Secret, nil).json(t)
	h.do("GET", "/context", "", nil).problem(t, "unauthenticated", 401)
	h.do("GET", "/no-such-route", k.Secret, nil).problem(t, "not_found", 404)
	h.do("POST", "/queries", k.Secret, "{", "Idempotency-Key", "k1").problem(t, "invalid_json", 400)
	if n := api.InFlightForTest(h.srv); n != 0 {
		t.Fatalf("%d requests still counted in flight after every answer", n)
	}
	if got, _ := sample(scrape(t, m), "siteenv_http_requests_in_flight"); got != 0 {
		t.Errorf("in-flight gauge %v after every answer", got)
	}
}
