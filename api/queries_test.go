package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/ingest"
	"siteenv/jobs"
	"siteenv/store"
	"siteenv/tiles"
)

// queryHarness is a harness with a file store, the engine and a job runner
// (workers only when run is true; otherwise tests drive the runner by hand).
type queryHarness struct {
	*harness
	store  store.Store
	runner *jobs.Runner
}

func setupQueries(t testing.TB, run bool) *queryHarness {
	t.Helper()
	return setupQueriesWith(t, run, nil)
}

// setupQueriesWith is setupQueries with the engine reading the store
// through engineStore (nil: directly).
func setupQueriesWith(t testing.TB, run bool, engineStore func(store.Store) store.Store) *queryHarness {
	t.Helper()
	qh := &queryHarness{}
	h := setup(t, func(s *api.Server) {})
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var es store.Store = st
	if engineStore != nil {
		es = engineStore(st)
	}
	eng := newEngine(t, es, engine.Options{MemoryBudget: 64 << 20})
	qh.runner = newRunner(t, jobs.Config{Workers: 2, Poll: 20 * time.Millisecond, TempDir: t.TempDir()}, h.led, eng, st)
	if run {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		qh.runner.Start(ctx)
	}
	api.SetQueryBackend(h.srv, st, qh.runner)
	qh.harness, qh.store = h, st
	stopBehind(t, h, qh.runner)
	return qh
}

// stopBehind registers, to run before the store's directory goes
// (cleanups run last first), the runner's stop, which waits for the
// results its attempts write behind their answers.
func stopBehind(t testing.TB, h *harness, r *jobs.Runner) {
	t.Cleanup(func() {
		if err := r.Stop(context.Background()); err != nil {
			t.Errorf("runner stop: %v", err)
		}
	})
}

// points publishes a point layer: one feature per (id, lon, lat).
func (qh *queryHarness) points(layerID, section string, price int64, radiusMax float64, coverage *orb.Polygon, pts map[string]orb.Point) string {
	qh.t.Helper()
	if err := qh.led.SetSection(qh.ctx, section, "Section "+section, price); err != nil {
		qh.t.Fatal(err)
	}
	def := &ingest.LayerDef{
		LayerID: layerID, SectionKey: section, Name: "Layer " + layerID, SchemaVersion: "1",
		FieldSchema: map[string]json.RawMessage{"depth_m": json.RawMessage(`{"type":["number","null"]}`)},
		Units:       map[string]*string{"depth_m": ptrTo("m")}, RadiusMaxM: radiusMax,
		Sources:       []tiles.Source{{SourceVariantID: "v1", Provider: "Test Survey", Licence: "CC-BY-4.0", Attribution: "© Test"}},
		Jurisdictions: []string{"NSW"}, GeometryTypes: []string{"Point"},
	}
	raw, _ := json.Marshal(def)
	def, err := ingest.ParseLayerDef(raw)
	if err != nil {
		qh.t.Fatal(err)
	}
	if coverage != nil {
		def.Coverage = geojsonGeometry(*coverage)
	}
	sum, err := ingest.RunRows(qh.ctx, ingest.Options{Layer: def, Store: qh.store, Publisher: ingest.LedgerPublisher{Ledger: qh.led}, TempDir: qh.t.TempDir()},
		func(yield func(ingest.Row) error) error {
			n := int64(0)
			for id, p := range pts {
				n++
				if err := yield(ingest.Row{File: "test", Row: n, Feature: tiles.Feature{ID: id, Geometry: p, Properties: map[string]any{"depth_m": 12.5}}}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		qh.t.Fatal(err)
	}
	return sum.ReleaseID
}

func ptrTo[T any](v T) *T { return &v }

func geojsonGeometry(p orb.Polygon) *geojson.Geometry { return geojson.NewGeometry(p) }

func (qh *queryHarness) query(key string, body map[string]any, headers ...string) response {
	qh.t.Helper()
	return qh.do("POST", "/queries", key, body, append([]string{"Idempotency-Key", uuid.NewString()}, headers...)...)
}

// Near Parramatta: a site point and features at known offsets to the east.
var origin = orb.Point{151.0, -33.81}

func east(m float64) orb.Point { return orb.Point{origin[0] + m/(111_320*0.8309), origin[1]} } // cos(33.81°) ≈ 0.8309

func featureIDs(m map[string]any) []string {
	var ids []string
	fs, ok := m["features"].([]any)
	if !ok {
		return []string{fmt.Sprint("no features in ", m)}
	}
	for _, f := range fs {
		ids = append(ids, f.(map[string]any)["feature_id"].(string))
	}
	return ids
}

func TestQueryLifecycle(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, true)
	rel := qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b100": east(100), "b900": east(900), "b3000": east(3000)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	pointSite := map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}

	r := qh.query(k.Secret, map[string]any{"site": pointSite, "layer_ids": []string{"nsw.bores"}, "radius_m": 1000, "page_size": 1}, "Prefer", "wait=3")
	if r.status != 200 {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	m := r.json(t)
	layer := m["layers"].([]any)[0].(map[string]any)
	if m["status"] != "succeeded" || layer["data_status"] != "data_present" || layer["matched_feature_count"] != float64(2) {
		t.Fatalf("result %s", r.body)
	}
	if prov := layer["provenance"].([]any)[0].(map[string]any); prov["release_id"] != rel || prov["provider"] != "Test Survey" {
		t.Fatalf("provenance %v", prov)
	}
	if got := fmt.Sprint(featureIDs(m)); got != "[b100]" {
		t.Fatalf("first page %s", got)
	}
	qid := m["query_id"].(string)
	next := m["page"].(map[string]any)["next_cursor"].(string)
	p2 := qh.do("GET", "/queries/"+qid+"/results?limit=1&cursor="+url.QueryEscape(next), k.Secret, nil).json(t)
	if got := fmt.Sprint(featureIDs(p2)); got != "[b900]" || p2["page"].(map[string]any)["has_more"] != false {
		t.Fatalf("second page %v", p2)
	}
	f := p2["features"].([]any)[0].(map[string]any)
	if d := f["distance_m"].(float64); d < 899 || d > 901 || f["geometry"] == nil {
		t.Fatalf("feature %v", f)
	}
	if p, _ := f["properties"].(map[string]any); p["depth_m"] != 12.5 {
		t.Fatalf("feature properties %v", f["properties"])
	}
	noGeom := qh.do("GET", "/queries/"+qid+"?include_geometry=false", k.Secret, nil).json(t)
	if noGeom["features"].([]any)[0].(map[string]any)["geometry"] != nil {
		t.Fatal("include_geometry=false returned geometry")
	}
	// A cursor of one projection does not continue another.
	qh.do("GET", "/queries/"+qid+"?include_geometry=false&limit=1&cursor="+url.QueryEscape(next), k.Secret, nil).problem(t, "invalid_cursor", 400)

	sch := qh.do("GET", "/queries/"+qid+"/layers/nsw.bores/schema", k.Secret, nil).json(t)
	if sch["properties"].(map[string]any)["depth_m"] == nil {
		t.Fatalf("frozen schema %v", sch)
	}
	hist := qh.do("GET", "/queries", k.Secret, nil).json(t)["queries"].([]any)
	if len(hist) != 1 || hist[0].(map[string]any)["results_status"] != "available" {
		t.Fatalf("history %v", hist)
	}
	u := qh.do("GET", "/context", k.Secret, nil).json(t)["usage"].(map[string]any)
	if u["retained_result_bytes"].(float64) <= 0 || u["next_result_expiry"] == nil {
		t.Fatalf("usage %v", u)
	}

	// Radius 0 at a point: only features exactly there (none).
	m = qh.query(k.Secret, map[string]any{"site": pointSite, "layer_ids": []string{"nsw.bores"}, "radius_m": 0}, "Prefer", "wait=3").json(t)
	if l := m["layers"].([]any)[0].(map[string]any); l["data_status"] != "no_data" || l["reason"] != "no_matches" || l["matched_feature_count"] != float64(0) {
		t.Fatalf("radius 0: %v", l)
	}
	// Its result (stored as nothing: TestEmptyResultStoresNothing) reads
	// as an empty last page, and is released like any other.
	empty := m["query_id"].(string)
	if p := qh.do("GET", "/queries/"+empty+"/results", k.Secret, nil).json(t); len(p["features"].([]any)) != 0 || p["page"].(map[string]any)["has_more"] != false {
		t.Fatalf("empty result's page %v", p)
	}
	if r := qh.do("DELETE", "/queries/"+empty, k.Secret, nil); r.status != 204 {
		t.Fatalf("delete of an empty result %d %s", r.status, r.body)
	}
	qh.do("GET", "/queries/"+empty+"/results", k.Secret, nil).problem(t, "result_released", 410)

	// Release: 204, then 410 result_released, never restored.
	if r := qh.do("DELETE", "/queries/"+qid, k.Secret, nil); r.status != 204 {
		t.Fatalf("delete %d %s", r.status, r.body)
	}
	qh.do("GET", "/queries/"+qid, k.Secret, nil).problem(t, "result_released", 410)
	qh.do("GET", "/queries/"+qid+"/results", k.Secret, nil).problem(t, "result_released", 410)
	if r := qh.do("DELETE", "/queries/"+qid, k.Secret, nil); r.status != 204 {
		t.Fatalf("repeat delete %d", r.status)
	}
	// Another account's query is not found.
	other := qh.key(qh.account(0), nil, "queries:run", "sites:read")
	sameApartFromRequestID(t, qh.do("GET", "/queries/"+qid, other.Secret, nil), qh.do("GET", "/queries/"+uuid.NewString(), other.Secret, nil))
}

func TestQueryAccessAndValidation(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, true)
	qh.points("nsw.contam", "contamination", 30, 2000, nil, map[string]orb.Point{"c1": east(50)})
	qh.points("nsw.bores", "water", 0, 1000, nil, map[string]orb.Point{"b1": east(50)})
	acct := qh.account(100)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write", "access:acquire")
	site := map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}

	qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.contam"}, "radius_m": 500}).problem(t, "access_required", 403)
	qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.bores"}, "radius_m": 1500}).problem(t, "invalid_request", 400)
	qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.none"}, "radius_m": 100}).problem(t, "not_found", 404)
	qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.bores", "nsw.bores"}, "radius_m": 100}).problem(t, "invalid_request", 400)
	qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.bores"}, "radius_m": 10001}).problem(t, "invalid_request", 400)
	qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.bores"}, "radius_m": 10}, "Prefer", "wait=9").problem(t, "invalid_request", 400)
	narrow := qh.key(acct, []string{"nsw.contam"}, "queries:run", "sites:read", "sites:write")
	qh.query(narrow.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.bores"}, "radius_m": 100}).problem(t, "not_found", 404)
	// A new site needs sites:write.
	ro := qh.key(acct, nil, "queries:run", "sites:read")
	qh.query(ro.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": 151.5, "latitude": -33.5}, "layer_ids": []string{"nsw.bores"}, "radius_m": 100}).problem(t, "scope_insufficient", 403)

	// After buying the section the query runs.
	m := qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.bores"}, "radius_m": 100}, "Prefer", "wait=3").json(t)
	siteID, _ := uuid.Parse(m["site_id"].(string))
	qh.buy(k.Secret, "q-buy", siteID, "contamination")
	if r := qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.contam", "nsw.bores"}, "radius_m": 100}, "Prefer", "wait=3"); r.status != 200 {
		t.Fatalf("after purchase %d %s", r.status, r.body)
	}
}

func TestQueryResultsAreFrozenAcrossReleases(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, true)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"old": east(200)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.bores"}, "radius_m": 1000}
	first := qh.query(k.Secret, body, "Prefer", "wait=3").json(t)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"new": east(300)})
	again := qh.do("GET", "/queries/"+first["query_id"].(string), k.Secret, nil).json(t)
	if fmt.Sprint(featureIDs(again)) != "[old]" {
		t.Fatalf("old query changed: %v", featureIDs(again))
	}
	second := qh.query(k.Secret, body, "Prefer", "wait=3").json(t)
	if fmt.Sprint(featureIDs(second)) != "[new]" {
		t.Fatalf("new query: %v", featureIDs(second))
	}
}

func TestQueryCoverageAndExpiry(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, false)
	cover := orb.Polygon{{{150.9, -33.9}, {150.95, -33.9}, {150.95, -33.7}, {150.9, -33.7}, {150.9, -33.9}}}
	qh.points("nsw.flood", "flood", 0, 10000, &cover, map[string]orb.Point{"f1": east(100)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.flood"}, "radius_m": 500}
	r := qh.query(k.Secret, body)
	if r.status != 202 || r.header.Get("Location") == "" {
		t.Fatalf("without workers the query is queued: %d %s", r.status, r.body)
	}
	qid := r.json(t)["query_id"].(string)
	qh.do("GET", "/queries/"+qid+"/results", k.Secret, nil).problem(t, "result_not_ready", 409)
	if ran, err := qh.runner.RunOnce(qh.ctx); err != nil || !ran {
		t.Fatalf("run: %v %v", ran, err)
	}
	m := qh.do("GET", "/queries/"+qid, k.Secret, nil).json(t)
	l := m["layers"].([]any)[0].(map[string]any)
	if l["coverage"] != "none" || l["data_status"] != "no_data" || l["reason"] != "outside_coverage" {
		t.Fatalf("outside coverage: %v", l)
	}
	// Results expire 24 h after completion and are never restored.
	qh.clock.Advance(24*time.Hour + time.Second)
	if err := qh.runner.Sweep(qh.ctx); err != nil {
		t.Fatal(err)
	}
	qh.do("GET", "/queries/"+qid, k.Secret, nil).problem(t, "result_expired", 410)
	hist := qh.do("GET", "/queries", k.Secret, nil).json(t)["queries"].([]any)
	if hist[0].(map[string]any)["results_status"] != "expired" {
		t.Fatalf("history %v", hist[0])
	}
	// A query queued for more than 10 minutes fails with queue_timeout.
	q2 := qh.query(k.Secret, body).json(t)["query_id"].(string)
	qh.clock.Advance(11 * time.Minute)
	if err := qh.runner.Sweep(qh.ctx); err != nil {
		t.Fatal(err)
	}
	m = qh.do("GET", "/queries/"+q2, k.Secret, nil).json(t)
	if m["status"] != "failed" || m["layers"].([]any)[0].(map[string]any)["reason"] != "queue_timeout" {
		t.Fatalf("queue timeout: %v", m)
	}
}

func TestQueryAdmissionLimits(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, false)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b": east(10)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write", "usage:read")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.bores"}, "radius_m": 10}
	queued := 0
	for batch := 0; batch < 4 && queued < 100; batch++ {
		for i := 0; i < 30 && queued < 100; i++ {
			if r := qh.query(k.Secret, body); r.status != 202 {
				t.Fatalf("query %d: %d %s", queued, r.status, r.body)
			}
			queued++
		}
		if queued%30 == 0 {
			r := qh.query(k.Secret, body)
			r.problem(t, "rate_limited", 429)
			assertProblemShape(t, r)
		}
		qh.clock.Advance(time.Minute)
	}
	r := qh.query(k.Secret, body)
	r.problem(t, "capacity_exceeded", 429)
	assertProblemShape(t, r)
	u := qh.do("GET", "/usage", k.Secret, nil).json(t)["queries"].(map[string]any)
	if u["queued"] != float64(100) {
		t.Fatalf("usage %v", u)
	}
}

// historyIDs lists a history page's query ids, and its next cursor ("" at
// the end).
func historyIDs(t *testing.T, r response) ([]string, string) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("history: %d %s", r.status, r.body)
	}
	m := r.json(t)
	var ids []string
	for _, q := range m["queries"].([]any) {
		ids = append(ids, q.(map[string]any)["query_id"].(string))
	}
	next, _ := m["page"].(map[string]any)["next_cursor"].(string)
	return ids, next
}

func TestQueryHistoryFiltersAndTraversal(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, false)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b": east(10)})
	qh.points("nsw.flood", "flood", 0, 5000, nil, map[string]orb.Point{"f": east(20)})
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	siteA := map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}
	siteB := map[string]any{"kind": "point", "longitude": origin[0] + 0.1, "latitude": origin[1]}
	created := []time.Time{}
	create := func(site map[string]any, layers ...string) (id, siteID string) {
		t.Helper()
		created = append(created, qh.clock.Now())
		m := qh.query(k.Secret, map[string]any{"site": site, "layer_ids": layers, "radius_m": 100}).json(t)
		qh.clock.Advance(time.Minute)
		return m["query_id"].(string), m["site_id"].(string)
	}
	q1, sA := create(siteA, "nsw.bores")
	q2, _ := create(siteA, "nsw.flood")
	q3, sB := create(siteB, "nsw.bores")
	q4, _ := create(siteA, "nsw.bores", "nsw.flood")
	if ran, err := qh.runner.RunOnce(qh.ctx); err != nil || !ran { // the oldest: q1
		t.Fatalf("run: %v %v", ran, err)
	}
	list := func(key, params string) ([]string, string) {
		t.Helper()
		return historyIDs(t, qh.do("GET", "/queries"+params, key, nil))
	}
	want := func(got []string, want ...string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("history %v, want %v", got, want)
		}
	}
	all, _ := list(k.Secret, "")
	want(all, q4, q3, q2, q1) // newest first
	got, _ := list(k.Secret, "?status=succeeded")
	want(got, q1)
	got, _ = list(k.Secret, "?status=queued")
	want(got, q4, q3, q2)
	got, _ = list(k.Secret, "?site_id="+sB)
	want(got, q3)
	got, _ = list(k.Secret, "?site_id="+sA+"&status=queued")
	want(got, q4, q2)
	// created_from is inclusive, created_before exclusive.
	got, _ = list(k.Secret, "?created_from="+url.QueryEscape(created[1].Format(time.RFC3339Nano))+"&created_before="+url.QueryEscape(created[3].Format(time.RFC3339Nano)))
	want(got, q3, q2)
	// A dataset-restricted key sees only queries wholly within its datasets.
	narrow := qh.key(acct, []string{"nsw.bores"}, "queries:run")
	got, _ = list(narrow.Secret, "")
	want(got, q3, q1)
	none := qh.key(acct, []string{}, "queries:run")
	got, _ = list(none.Secret, "")
	want(got)
	// Another account sees none of them.
	got, _ = list(qh.key(qh.account(0), nil, "queries:run").Secret, "")
	want(got)

	// Pages continue a traversal; queries created after it began stay out.
	p1, next := list(k.Secret, "?limit=2")
	want(p1, q4, q3)
	if next == "" {
		t.Fatal("first page has no next cursor")
	}
	q5, _ := create(siteA, "nsw.bores")
	p2, end := list(k.Secret, "?limit=2&cursor="+url.QueryEscape(next))
	want(p2, q2, q1)
	if end != "" {
		t.Fatalf("last page has a next cursor")
	}
	fresh, _ := list(k.Secret, "?limit=1")
	want(fresh, q5)
	// A cursor continues only the traversal (filters, account) it came from.
	qh.do("GET", "/queries?limit=2&status=queued&cursor="+url.QueryEscape(next), k.Secret, nil).problem(t, "invalid_cursor", 400)
	qh.do("GET", "/queries?limit=2&cursor="+url.QueryEscape(next), qh.key(qh.account(0), nil, "queries:run").Secret, nil).problem(t, "invalid_cursor", 400)

	r := qh.do("GET", "/queries?limit=101&status=done&site_id=x&created_from=yesterday", k.Secret, nil)
	m := r.problem(t, "invalid_request", 400)
	named := map[string]bool{}
	for _, fe := range m["field_errors"].([]any) {
		named[fe.(map[string]any)["field"].(string)] = true
	}
	for _, f := range []string{"limit", "status", "site_id", "created_from"} {
		if !named[f] {
			t.Errorf("field_errors does not name %q: %s", f, r.body)
		}
	}
}

// TestQueryIdempotency: a retried POST /queries creates one query; page size
// is not part of its identity; a changed logical request is a conflict.
func TestQueryIdempotency(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, false)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b": east(10)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.bores"}, "radius_m": 100, "page_size": 10}
	post := func(b map[string]any) response {
		return qh.do("POST", "/queries", k.Secret, b, "Idempotency-Key", "q-retry-1")
	}
	first := post(body)
	if first.status != 202 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	id := first.json(t)["query_id"]
	body["page_size"] = 20
	if again := post(body); again.status != 202 || again.json(t)["query_id"] != id {
		t.Fatalf("retry with another page size: %d %s", again.status, again.body)
	}
	body["radius_m"] = 200
	post(body).problem(t, "idempotency_conflict", 409)
	hist, _ := historyIDs(t, qh.do("GET", "/queries", k.Secret, nil))
	if len(hist) != 1 || hist[0] != id {
		t.Fatalf("history %v: want only %v", hist, id)
	}
}

// TestQueryCancel: DELETE cancels a queued or running query; it never runs
// (or its late result is not kept), and it has no results to read.
func TestQueryCancel(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, false)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b": east(10)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.bores"}, "radius_m": 100}

	queued := qh.query(k.Secret, body).json(t)["query_id"].(string)
	if r := qh.do("DELETE", "/queries/"+queued, k.Secret, nil); r.status != 204 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	m := qh.do("GET", "/queries/"+queued, k.Secret, nil).json(t)
	if l := m["layers"].([]any)[0].(map[string]any); m["status"] != "cancelled" || l["data_status"] != "unavailable" || m["results_url"] != nil {
		t.Fatalf("cancelled query %v", m)
	}
	qh.do("GET", "/queries/"+queued+"/results", k.Secret, nil).problem(t, "result_released", 410)
	if ran, err := qh.runner.RunOnce(qh.ctx); err != nil || ran {
		t.Fatalf("a cancelled query was claimed: %v %v", ran, err)
	}

	// Cancelled while running: the worker's late finish is not recorded.
	qh.clock.Advance(time.Second)
	running := qh.query(k.Secret, body).json(t)["query_id"].(string)
	claimed, err := qh.led.ClaimQuery(qh.ctx, 4, 2*time.Minute)
	if err != nil || claimed.ID.String() != running {
		t.Fatalf("claim: %v %v", claimed.ID, err)
	}
	if r := qh.do("DELETE", "/queries/"+running, k.Secret, nil); r.status != 204 {
		t.Fatalf("cancel running: %d %s", r.status, r.body)
	}
	kept, err := qh.led.FinishQuery(qh.ctx, claimed.ID, "succeeded", nil, "results/late", 10, ptrTo(int64(1)), 24*time.Hour)
	if err != nil || kept {
		t.Fatalf("finish after cancel: kept=%v err=%v", kept, err)
	}
	if m := qh.do("GET", "/queries/"+running, k.Secret, nil).json(t); m["status"] != "cancelled" {
		t.Fatalf("status after a late finish: %v", m["status"])
	}
	ids, _ := historyIDs(t, qh.do("GET", "/queries?status=cancelled", k.Secret, nil))
	if fmt.Sprint(ids) != fmt.Sprint([]string{running, queued}) {
		t.Fatalf("cancelled history %v", ids)
	}
	// Nothing is retained for the account.
	if u := qh.do("GET", "/context", k.Secret, nil).json(t)["usage"].(map[string]any); u["retained_result_bytes"] != float64(0) {
		t.Fatalf("usage %v", u)
	}
}

// stalledTiles is the file store with every tile open held until the
// caller gives up (its context ends): a shard load that never finishes.
type stalledTiles struct {
	store.Store
	opened chan struct{} // receives one value per stalled open
}

func (s stalledTiles) Open(ctx context.Context, key string) (store.Object, error) {
	if strings.HasSuffix(key, ".parquet") {
		s.opened <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.Open(ctx, key)
}

// TestQueryCancelStopsTheWorker: cancelling a running query stops its
// execution (the worker is freed at once, not after the 120 s attempt),
// and leaves no result.
func TestQueryCancelStopsTheWorker(t *testing.T) {
	t.Parallel()
	opened := make(chan struct{}, 16)
	qh := setupQueriesWith(t, false, func(s store.Store) store.Store { return stalledTiles{s, opened} })
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b": east(10)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.bores"}, "radius_m": 100}
	id := qh.query(k.Secret, body).json(t)["query_id"].(string)

	done := make(chan error, 1)
	go func() {
		ran, err := qh.runner.RunOnce(qh.ctx)
		if err == nil && !ran {
			err = errors.New("nothing was claimed")
		}
		done <- err
	}()
	<-opened // executing: stuck loading the tile
	if m := qh.do("GET", "/queries/"+id, k.Secret, nil).json(t); m["status"] != "running" {
		t.Fatalf("status while loading: %v", m["status"])
	}
	if r := qh.do("DELETE", "/queries/"+id, k.Secret, nil); r.status != 204 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker: %v", err)
		}
	case <-time.After(60 * time.Second): // the attempt itself would last 120 s
		t.Fatal("the worker kept executing a cancelled query")
	}
	if m := qh.do("GET", "/queries/"+id, k.Secret, nil).json(t); m["status"] != "cancelled" {
		t.Fatalf("status after cancel: %v", m["status"])
	}
	if infos, err := qh.store.List(qh.ctx, "results/"); err != nil || len(infos) != 0 {
		t.Fatalf("results stored: %v %v", infos, err)
	}
}

// TestFinishedQueryCacheSeesOtherReplicas: a replica keeps finished
// queries' rows (querycache.go) but reads what can change on every request,
// so a result released through another replica, or expired, is answered so
// at once by the replica that cached it.
func TestFinishedQueryCacheSeesOtherReplicas(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, true)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b1": east(10), "b2": east(20)})
	b := setupOn(t, qh.clock, qh.led, nil)
	api.SetQueryBackend(b.srv, qh.store, qh.runner)
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.bores"},
		"radius_m": 100, "page_size": 1}
	run := func() (string, string) {
		t.Helper()
		m := qh.query(k.Secret, body, "Prefer", "wait=3").json(t)
		if m["status"] != "succeeded" {
			t.Fatalf("query %v", m)
		}
		return m["query_id"].(string), m["page"].(map[string]any)["next_cursor"].(string)
	}

	qid, next := run()
	// Read twice on A (the second from its cache), then release on B.
	for range 2 {
		p := qh.do("GET", "/queries/"+qid+"/results?limit=1&cursor="+url.QueryEscape(next), k.Secret, nil).json(t)
		if got := fmt.Sprint(featureIDs(p)); got != "[b2]" {
			t.Fatalf("second page %s", got)
		}
	}
	if r := b.do("DELETE", "/queries/"+qid, k.Secret, nil); r.status != 204 {
		t.Fatalf("delete on B: %d %s", r.status, r.body)
	}
	qh.do("GET", "/queries/"+qid+"/results?limit=1&cursor="+url.QueryEscape(next), k.Secret, nil).problem(t, "result_released", 410)
	qh.do("GET", "/queries/"+qid, k.Secret, nil).problem(t, "result_released", 410)

	// Expired: A cached the query; B's janitor sweeps it.
	qid2, _ := run()
	if r := qh.do("GET", "/queries/"+qid2, k.Secret, nil); r.status != 200 {
		t.Fatalf("read: %d %s", r.status, r.body)
	}
	qh.clock.Advance(24*time.Hour + time.Second)
	if err := qh.runner.Sweep(qh.ctx); err != nil {
		t.Fatal(err)
	}
	qh.do("GET", "/queries/"+qid2, k.Secret, nil).problem(t, "result_expired", 410)
	// Another account never reaches the cached row.
	other := qh.key(qh.account(0), nil, "queries:run", "sites:read")
	sameApartFromRequestID(t, qh.do("GET", "/queries/"+qid2, other.Secret, nil), qh.do("GET", "/queries/"+uuid.NewString(), other.Secret, nil))
}
