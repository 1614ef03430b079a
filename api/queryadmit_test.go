package api_test

import (
	"testing"

	"github.com/paulmach/orb"
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
