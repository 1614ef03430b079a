package api_test

import (
	"strconv"
	"testing"
	"time"

	"siteenv/ledger"
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
