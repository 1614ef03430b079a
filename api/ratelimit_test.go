package api_test

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"siteenv/api"
	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

func ledgerFilter(limit int) ledger.ActivityFilter { return ledger.ActivityFilter{Limit: limit} }

func TestReadRateLimitIsPerAccountAcrossKeys(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k1 := h.key(acct, nil, "usage:read")
	k2 := h.key(acct, nil, "usage:read") // a different integration, same account
	otherAcct := h.key(h.account(0), nil, "usage:read")
	for i := 0; i < 120; i++ {
		k := k1
		if i%2 == 1 {
			k = k2
		}
		if r := h.do("GET", "/usage", k.Secret, nil); r.status != 200 {
			t.Fatalf("read %d: %d %s", i, r.status, r.body)
		}
	}
	r := h.do("GET", "/context", k2.Secret, nil)
	r.problem(t, "rate_limited", 429)
	assertProblemShape(t, r)
	// The fake clock is 10 s into the minute.
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); ra != 50 {
		t.Fatalf("Retry-After %q, want 50", r.header.Get("Retry-After"))
	}
	// Another account is unaffected.
	if r := h.do("GET", "/usage", otherAcct.Secret, nil); r.status != 200 {
		t.Fatalf("other account limited: %d", r.status)
	}
	h.clock.Advance(50 * time.Second)
	if r := h.do("GET", "/usage", k1.Secret, nil); r.status != 200 {
		t.Fatalf("next window still limited: %d", r.status)
	}
	// The limit is reported by name.
	m := h.do("GET", "/context", k1.Secret, nil).json(t)
	limits := m["limits"].(map[string]any)
	if limits["reads_per_minute"] != float64(120) || limits["query_admissions_per_minute"] != float64(30) {
		t.Fatalf("limits %v", limits)
	}
}

// TestConfiguredReadLimit: a server configured with another read limit
// (bench api raises it) enforces that limit, reports it in GET /context and
// the RateLimit headers, and a zero Config keeps the contract's 120 (the
// test above).
func TestConfiguredReadLimit(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	h := setupOn(t, clk, ledgertest.New(t, clk), func(c *api.Config) { c.ReadsPerMinute = 3 })
	k := h.key(h.account(0), nil, "usage:read")
	for i := 0; i < 2; i++ {
		if r := h.do("GET", "/usage", k.Secret, nil); r.status != 200 {
			t.Fatalf("read %d: %d %s", i, r.status, r.body)
		}
	}
	r := h.do("GET", "/context", k.Secret, nil)
	if r.status != 200 {
		t.Fatalf("third read: %d %s", r.status, r.body)
	}
	if got := r.header.Get("RateLimit-Policy"); got != "3;w=60" {
		t.Errorf("RateLimit-Policy %q does not state 3 reads", got)
	}
	if lim := r.json(t)["limits"].(map[string]any)["reads_per_minute"]; lim != float64(3) {
		t.Errorf("reads_per_minute %v, want 3", lim)
	}
	h.do("GET", "/usage", k.Secret, nil).problem(t, "rate_limited", 429)
	if _, err := api.New(api.Config{Secret: bytes.Repeat([]byte("s"), 32), ReadsPerMinute: -1}, nil); err == nil {
		t.Error("a negative ReadsPerMinute was accepted")
	}
}
