package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"siteenv/api"
	"siteenv/clock"
	"siteenv/internal/phase"
	"siteenv/ledger/ledgertest"
)

// TestRequestPhasesRecorded serves requests with the phase timer on and
// proves the phases are recorded around the work: every ledger round trip a
// request sends on its own time is one call of the "ledger round trips"
// phase (the pool's pgx tracer reading the request's recorder from its
// context), as many as the ledger's pool counted (ledger.RoundTrips) less
// what is stored behind the response (on no request's time);
// authentication is timed once per request by the server, JSON encoding
// once per response by its writers. POST /queries records one ledger round
// trip (its admission, with its answer), no longer the handler's ledger
// phase twice; GET /layers its key check, read window and page in one.
// The runner's workers and janitor are kept idle (an hour's poll), and the
// fewest of three is taken, as in TestSmallQueryCostsOneRoundTrip.
func TestRequestPhasesRecorded(t *testing.T) {
	t.Parallel()
	tm := &phase.Timer{}
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	h := setupOn(t, clk, ledgertest.New(t, clk), func(c *api.Config) { c.Phases = tm })
	qh := idleRunnerQueries(t, h)
	api.SetAnswerFirstWait(h.srv, time.Minute) // every answer is stored first, whatever the load
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10), "b50": east(50), "b900": east(900)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write", "layers:read")
	ask := func(lon float64) response {
		return qh.query(k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": lon, "latitude": origin[1]},
			"layer_ids": []string{"nsw.bores"}, "radius_m": 100}, "Prefer", "wait=3")
	}
	if r := ask(origin[0]); r.status != 200 { // warms the catalogue cache
		t.Fatalf("warm-up: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/layers", k.Secret, nil); r.status != 200 {
		t.Fatalf("warm-up: %d %s", r.status, r.body)
	}

	// measure serves one request and returns the phases it recorded and
	// the round trips the pool counted meanwhile.
	measure := func(serve func() response) ([]phase.Sum, int64) {
		t.Helper()
		// The audit records of earlier reads are written first, and this
		// request's after it (behind its response, in the read audit's
		// batch insert), so that the pool's count holds this request's
		// round trips and nothing else's.
		if err := h.led.FlushActivity(context.Background()); err != nil {
			t.Fatal(err)
		}
		before, trips := tm.Snapshot(), h.led.RoundTrips()
		if r := serve(); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if err := h.led.FlushActivity(context.Background()); err != nil {
			t.Fatal(err)
		}
		return phase.Since(tm.Snapshot(), before), h.led.RoundTrips().Trips - trips.Trips
	}
	// check proves one request's phases: counted round trips less behind
	// are its ledger calls, and it was authenticated, encoded and served
	// once.
	check := func(what string, serve func() response, behind, wantTrips int64) {
		t.Helper()
		var got []phase.Sum
		least := int64(1 << 62)
		for range 3 {
			if s, n := measure(serve); n < least {
				got, least = s, n
			}
		}
		if least != wantTrips {
			t.Errorf("%s: %d round trips counted, want %d", what, least, wantTrips)
		}
		if l := got[phase.Ledger]; l.Count != least-behind || l.Total <= 0 {
			t.Errorf("%s: ledger round trips phase %+v, want %d calls (%d counted, %d behind the response)", what, l, least-behind, least, behind)
		}
		for _, p := range []phase.Phase{phase.Auth, phase.JSON, phase.Total} {
			if got[p].Count != 1 || got[p].Total <= 0 {
				t.Errorf("%s: phase %s %+v, want one call", what, p, got[p])
			}
		}
	}
	i := 0
	check("POST /queries", func() response { i++; return ask(origin[0] + float64(i)*0.0001) }, 0, 1)
	// GET /layers: its key check, read window and page in one round trip
	// on its time, and its audit record's insert behind the response.
	check("GET /layers", func() response { return h.do("GET", "/layers", k.Secret, nil) }, 1, 2)
}
