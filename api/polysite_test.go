package api_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/api"
)

// A query about a new polygon site is answered from the site as the
// request decoded it (the precomputation takes it, jobs.DecodedSite), and
// that answer is the one computed from the site's stored GeoJSON: the
// results page, which computes an answer stored first again from the
// stored site, lists the same features at the same distances. Whether the
// client wrote the coordinates at full precision or with 8 decimals (the
// engine then skips the check the API made, engine.Request.SiteChecked).
func TestPolygonSiteAnswerIsTheStoredSites(t *testing.T) {
	t.Parallel()
	h := setup(t, func(s *api.Server) {})
	qh := idleRunnerQueries(t, h)
	api.SetAnswerFirstWait(h.srv, time.Minute) // every answer is stored first, whatever the load
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10), "b50": east(50), "b900": east(900)})
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	// A 30 m circle of 2,000 positions, westM metres west of the features.
	circle := func(westM float64, grid bool) [][2]float64 {
		c := east(-westM)
		ring := make([][2]float64, 2000)
		for i := range len(ring) - 1 {
			a := 2 * math.Pi * float64(i) / float64(len(ring)-1)
			ring[i] = [2]float64{c[0] + 30*math.Cos(a)/(111_320*0.8309), c[1] + 30*math.Sin(a)/111_320}
			if grid {
				ring[i] = [2]float64{math.Round(ring[i][0]*1e8) / 1e8, math.Round(ring[i][1]*1e8) / 1e8}
			}
		}
		ring[len(ring)-1] = ring[0]
		return ring
	}
	ask := func(ring [][2]float64) response {
		return qh.do("POST", "/queries", k.Secret, map[string]any{
			"site":      map[string]any{"kind": "geometry", "geometry": map[string]any{"type": "Polygon", "coordinates": [][][2]float64{ring}}},
			"layer_ids": []string{"nsw.bores"}, "radius_m": 400}, "Idempotency-Key", uuid.NewString(), "Prefer", "wait=3")
	}
	// Two warm the catalogue cache and vouch for the key.
	for i := range 2 {
		if r := ask(circle(1000+100*float64(i), false)); r.status != 200 {
			t.Fatalf("warm-up %d: %d %s", i, r.status, r.body)
		}
	}
	features := func(m map[string]any) string {
		t.Helper()
		b, err := json.Marshal(m["features"])
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for i, grid := range []bool{false, true} {
		_, usedBefore := qh.runner.PrecomputeCounts()
		firstBefore := qh.runner.AnsweredFirst()
		r := ask(circle(300+float64(i), grid))
		if r.status != 200 {
			t.Fatalf("grid %v: %d %s", grid, r.status, r.body)
		}
		if _, used := qh.runner.PrecomputeCounts(); used != usedBefore+1 || qh.runner.AnsweredFirst() != firstBefore+1 {
			t.Fatalf("grid %v: %d answers precomputed and used, %d stored first; want 1 and 1", grid, used-usedBefore, qh.runner.AnsweredFirst()-firstBefore)
		}
		m := r.json(t)
		if ids := featureIDs(m); !slices.Equal(ids, []string{"b10", "b50"}) {
			t.Fatalf("grid %v: features %v", grid, ids)
		}
		page := qh.do("GET", fmt.Sprintf("/queries/%s/results?include_geometry=true", m["query_id"]), k.Secret, nil)
		if page.status != 200 {
			t.Fatalf("grid %v: results %d %s", grid, page.status, page.body)
		}
		if got, want := features(page.json(t)), features(m); got != want {
			t.Fatalf("grid %v: the stored site's answer\n%s\nthe request's\n%s", grid, got, want)
		}
	}
}
