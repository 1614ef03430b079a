package api_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
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

// A query answered before its admission (queries.Service.answerFirst: its key was seen
// moments ago and its answer was ready) is stored as answered, in the
// admission's one round trip: it reads succeeded at once with its page,
// its replay is the answer byte for byte, and its audit record is written
// once. On a site the account already had, the answer, the stored
// response and the row all name that site, not the one the request would
// have created.
func TestAnsweredFirstIsStoredAsAnswered(t *testing.T) {
	t.Parallel()
	h := setup(t, func(s *api.Server) {})
	qh := idleRunnerQueries(t, h)
	api.SetAnswerFirstWait(h.srv, time.Minute) // every answer is stored first, whatever the load
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10), "b50": east(50), "b900": east(900)})
	many := map[string]orb.Point{}
	for i := range 480 {
		many[fmt.Sprintf("m%03d", i)] = east(float64(i) / 10)
	}
	qh.points("nsw.many", "water", 0, 5000, nil, many)
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	ask := func(idemKey string, lon float64) response {
		return qh.do("POST", "/queries", k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": lon, "latitude": origin[1]},
			"layer_ids": []string{"nsw.bores"}, "radius_m": 100}, "Idempotency-Key", idemKey, "Prefer", "wait=3")
	}
	// Two warm the catalogue cache and vouch for the key (elsewhere).
	for i := range 2 {
		if r := ask(uuid.NewString(), origin[0]-0.01*float64(i+1)); r.status != 200 {
			t.Fatalf("warm-up %d: %d %s", i, r.status, r.body)
		}
	}
	_, usedBefore := qh.runner.PrecomputeCounts()
	firstBefore := qh.runner.AnsweredFirst()
	stored := func(r response) (map[string]any, ledger.Query) {
		t.Helper()
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		m := r.json(t)
		if ids := featureIDs(m); !slices.Equal(ids, []string{"b10", "b50"}) {
			t.Fatalf("features %v", ids)
		}
		id := uuid.MustParse(m["query_id"].(string))
		q, err := h.led.Query(h.ctx, acct, id)
		if err != nil || q.Status != ledger.QuerySucceeded || q.ResultCount == nil || *q.ResultCount != 2 || q.SiteID.String() != m["site_id"] {
			t.Fatalf("stored %+v, %v; want it succeeded as answered (%s)", q, err, r.body)
		}
		reqID := uuid.MustParse(r.header.Get("X-Request-Id"))
		acts, err := h.led.ListActivity(h.ctx, k.IntegrationID, ledger.ActivityFilter{RequestID: &reqID, Limit: 10})
		if err != nil || len(acts) != 1 || acts[0].HTTPStatus != 200 || acts[0].ResourceID == nil || *acts[0].ResourceID != id.String() {
			t.Fatalf("audit records of the request: %+v, %v; want one", acts, err)
		}
		return m, q
	}
	a, qa := stored(ask("a", origin[0]))
	rb := ask("b", origin[0]) // on the site a registered
	b, qb := stored(rb)
	if _, used := qh.runner.PrecomputeCounts(); used != usedBefore+2 || qh.runner.AnsweredFirst() != firstBefore+2 {
		t.Fatalf("%d answers used, %d stored with their admission; want 2 and 2", used-usedBefore, qh.runner.AnsweredFirst()-firstBefore)
	}
	if b["site_id"] != a["site_id"] || qb.SiteID != qa.SiteID {
		t.Fatalf("site %v then %v (rows %s, %s): want the site registered first", a["site_id"], b["site_id"], qa.SiteID, qb.SiteID)
	}
	replay := ask("b", origin[0])
	if replay.status != 200 || replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.body, rb.body) {
		t.Fatalf("replay %d %s, want the stored answer", replay.status, replay.body)
	}
	// Its result is not stored as a file: the client holds it whole; a
	// page (GET of the query or of its results) computes it again, and it
	// is stored then.
	if qb.ResultKey == nil {
		t.Fatal("the answered query retains no result")
	}
	if _, err := qh.store.Stat(h.ctx, *qb.ResultKey); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("result file of a query answered first: %v; want none", err)
	}
	if got := qh.do("GET", "/queries/"+qb.ID.String(), k.Secret, nil); got.status != 200 || got.json(t)["site_id"] != a["site_id"] ||
		got.json(t)["status"] != "succeeded" {
		t.Fatalf("GET the query: %d %s", got.status, got.body)
	}
	page := qh.do("GET", "/queries/"+qb.ID.String()+"/results?include_geometry=false", k.Secret, nil)
	if ids := featureIDs(page.json(t)); page.status != 200 || !slices.Equal(ids, []string{"b10", "b50"}) {
		t.Fatalf("results: %d %s", page.status, page.body)
	}
	qh.waitStored(t, *qb.ResultKey)

	// An answer of more than its first page (here also one of more than
	// 64 KiB of records) is answered first too: the first page and the
	// next one's cursor, made for the query's account though the request's
	// key was not yet authenticated. Its result is written behind: its
	// pages read the copy in memory, then the file.
	manyIDs := make([]string, 0, len(many))
	for id := range many {
		manyIDs = append(manyIDs, id)
	}
	slices.Sort(manyIDs)
	for _, c := range []struct {
		name  string
		layer string
		page  int
		ids   []string
	}{{"paged", "nsw.bores", 1, []string{"b10", "b50"}}, {"large", "nsw.many", 200, manyIDs}} {
		_, used0 := qh.runner.PrecomputeCounts()
		first0 := qh.runner.AnsweredFirst()
		r := qh.do("POST", "/queries", k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]},
			"layer_ids": []string{c.layer}, "radius_m": 100, "page_size": c.page}, "Idempotency-Key", c.name, "Prefer", "wait=3")
		m := r.json(t)
		_, used1 := qh.runner.PrecomputeCounts()
		if r.status != 200 || len(featureIDs(m)) != c.page || used1 != used0+1 || qh.runner.AnsweredFirst() != first0+1 {
			t.Fatalf("%s answer: %d, %d features; %d precomputes used, %d answered first; want %d features, 1 and 1", c.name, r.status,
				len(featureIDs(m)), used1-used0, qh.runner.AnsweredFirst()-first0, c.page)
		}
		id := uuid.MustParse(m["query_id"].(string))
		q, err := h.led.Query(h.ctx, acct, id)
		if err != nil || q.Status != ledger.QuerySucceeded || q.ResultKey == nil || q.ResultCount == nil || *q.ResultCount != int64(len(c.ids)) {
			t.Fatalf("%s stored %+v, %v; want it succeeded with %d records", c.name, q, err, len(c.ids))
		}
		pages := func() []string {
			t.Helper()
			ids := featureIDs(m)
			for page := m["page"].(map[string]any); page["has_more"] == true; {
				p := qh.do("GET", "/queries/"+id.String()+"/results?limit="+fmt.Sprint(c.page)+
					"&cursor="+url.QueryEscape(page["next_cursor"].(string)), k.Secret, nil)
				if p.status != 200 {
					t.Fatalf("%s next page: %d %s", c.name, p.status, p.body)
				}
				pm := p.json(t)
				ids, page = append(ids, featureIDs(pm)...), pm["page"].(map[string]any)
			}
			return slices.Sorted(slices.Values(ids))
		}
		if got := pages(); !slices.Equal(got, c.ids) {
			t.Fatalf("%s answer's pages hold %d features %v, want %d", c.name, len(got), got, len(c.ids))
		}
		qh.waitStored(t, *q.ResultKey)
		info, err := qh.store.Stat(h.ctx, *q.ResultKey)
		if err != nil || info.Size != q.ResultBytes {
			t.Fatalf("%s result file %+v, %v; want %d bytes", c.name, info, err, q.ResultBytes)
		}
		if got := pages(); !slices.Equal(got, c.ids) {
			t.Fatalf("%s answer's pages read from its file hold %v", c.name, got)
		}
		if c.name != "large" {
			continue
		}
		// Another replica, or this one after a crash, with neither the copy
		// in memory nor the file: the pages compute the result again from
		// the row, the bytes answered, so the cursors answered first go on.
		if err := qh.store.Delete(h.ctx, *q.ResultKey); err != nil {
			t.Fatal(err)
		}
		st := qh.store
		other := newRunner(t, jobs.Config{Workers: 1, Poll: time.Hour, Sweep: time.Hour, TempDir: t.TempDir()}, h.led,
			newEngine(t, st, engine.Options{MemoryBudget: 64 << 20}), st)
		stopBehind(t, h, other)
		api.SetQueryBackend(h.srv, st, other)
		if got := pages(); !slices.Equal(got, c.ids) {
			t.Fatalf("%s answer's pages computed again hold %v", c.name, got)
		}
		qh.waitStored(t, *q.ResultKey)
	}
}

// An answer computed first for a key this replica vouched for, whose
// account's admissions were used up meanwhile (by another replica), is
// refused as any admission over the rate: 429 rate_limited, nothing stored
// first, and the request's claim released, so its retry with the same
// Idempotency-Key is counted and refused again rather than replayed.
func TestAnsweredFirstOverTheRate(t *testing.T) {
	t.Parallel()
	h := setup(t, func(s *api.Server) {})
	qh := idleRunnerQueries(t, h)
	api.SetAnswerFirstWait(h.srv, time.Minute) // every answer is stored first, whatever the load
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10)})
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	ask := func(idemKey string) response {
		return qh.do("POST", "/queries", k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]},
			"layer_ids": []string{"nsw.bores"}, "radius_m": 100}, "Idempotency-Key", idemKey, "Prefer", "wait=3")
	}
	// Two admitted (the key vouched for), then the rest of the account's 30
	// a minute counted elsewhere.
	for i := range 2 {
		if r := ask(uuid.NewString()); r.status != 200 {
			t.Fatalf("admission %d: %d %s", i, r.status, r.body)
		}
	}
	for i := 2; i < 30; i++ {
		if _, err := h.led.Count(h.ctx, acct, ledger.BucketQueryAdmissions, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	_, usedBefore := qh.runner.PrecomputeCounts()
	firstBefore := qh.runner.AnsweredFirst()
	ask("over").problem(t, "rate_limited", 429)
	if _, used := qh.runner.PrecomputeCounts(); used != usedBefore || qh.runner.AnsweredFirst() != firstBefore {
		t.Fatalf("%d answers used, %d stored with their admission; want none", used-usedBefore, qh.runner.AnsweredFirst()-firstBefore)
	}
	ask("over").problem(t, "rate_limited", 429)
}
