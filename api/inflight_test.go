package api_test

import (
	"testing"

	"siteenv/api"
)

// The server's count of requests being served (what the answer-first wait
// stretches with) comes back to zero after every kind of answer: success,
// refusal, unknown route, bad body, unauthenticated.
func TestRequestsInFlightReturnToZero(t *testing.T) {
	h := setup(t)
	k := h.key(h.account(0), nil, "sites:read", "queries:run", "sites:write")
	h.do("GET", "/context", k.Secret, nil).json(t)
	h.do("GET", "/context", "", nil).problem(t, "unauthenticated", 401)
	h.do("GET", "/no-such-route", k.Secret, nil).problem(t, "not_found", 404)
	h.do("POST", "/queries", k.Secret, "{", "Idempotency-Key", "k1").problem(t, "invalid_json", 400)
	if n := api.InFlightForTest(h.srv); n != 0 {
		t.Fatalf("%d requests still counted in flight after every answer", n)
	}
}
