package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"siteenv/api"
	"siteenv/api/openapi"
	"siteenv/clock"
	"siteenv/engine"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/ledger/pgembed"
	"siteenv/store"
	"siteenv/store/storetest"
)

// root is the server's origin, where the probes live (outside /api/v1).
func (h *harness) root() string { return strings.TrimSuffix(h.base, api.BasePath) }

// plain sends a request outside the OpenAPI document (the probes) or one
// whose body the caller decodes first (Accept-Encoding set by hand), and
// reads the body.
func (h *harness) plain(method, url string, headers ...string) response {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.ctx, method, url, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

type readyz struct {
	Status string `json:"status"`
	Checks struct {
		Database string `json:"database"`
		Store    string `json:"store"`
	} `json:"checks"`
}

func (h *harness) readyz() (int, readyz, http.Header) {
	h.t.Helper()
	r := h.plain("GET", h.root()+api.ReadyzPath)
	var body readyz
	if err := json.Unmarshal(r.body, &body); err != nil {
		h.t.Fatalf("readyz body: %v: %s", err, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		h.t.Fatalf("readyz Content-Type %q", ct)
	}
	return r.status, body, r.header
}

// TestHealthzAndReadyz: both probes answer without a key outside /api/v1;
// readyz turns 503 naming the store when the store directory vanishes (an
// unmounted volume) and ready again when it is back, while healthz stays 200.
func TestHealthzAndReadyz(t *testing.T) {
	t.Parallel()
	h := setup(t)
	dir := t.TempDir() + "/store"
	st, err := store.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	api.SetQueryBackend(h.srv, st, nil)

	r := h.plain("GET", h.root()+api.HealthzPath)
	if r.status != 200 || string(r.body) != "ok\n" || r.header.Get("Cache-Control") != "no-store" || len(r.header.Get("X-Request-Id")) != 36 {
		t.Fatalf("healthz: %d %q %v", r.status, r.body, r.header)
	}
	if r := h.plain("HEAD", h.root()+api.HealthzPath); r.status != 200 {
		t.Fatalf("HEAD healthz: %d", r.status)
	}
	if r := h.plain("POST", h.root()+api.ReadyzPath); r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST readyz: %d %v", r.status, r.header)
	}
	if st, body, _ := h.readyz(); st != 200 || body.Status != "ready" || body.Checks.Database != "ok" || body.Checks.Store != "ok" {
		t.Fatalf("readyz: %d %+v", st, body)
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	code, body, hdr := h.readyz()
	if code != 503 || body.Status != "not_ready" || body.Checks.Store != "unreadable" || body.Checks.Database != "ok" || hdr.Get("Retry-After") != "1" {
		t.Fatalf("readyz without the store: %d %+v %v", code, body, hdr)
	}
	if r := h.plain("GET", h.root()+api.HealthzPath); r.status != 200 {
		t.Fatalf("healthz while not ready: %d", r.status)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if st, body, _ := h.readyz(); st != 200 || body.Status != "ready" {
		t.Fatalf("readyz with the store back: %d %+v", st, body)
	}
	// Probes are not API paths: anything else outside /api/v1 is still 404.
	if r := h.plain("GET", h.root()+"/readyz/x"); r.status != 404 {
		t.Fatalf("/readyz/x: %d", r.status)
	}
}

// TestReadyzWhenTheDatabaseStops: with the database really stopped, readyz
// answers 503 naming the database, and healthz (the process) stays 200.
func TestReadyzWhenTheDatabaseStops(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "siteenv-readyz-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the postgres user must reach it
		t.Fatal(err)
	}
	ctx := context.Background()
	cluster, err := pgembed.Start(ctx, dir+"/pg", pgembed.Options{Database: "siteenv", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop(ctx) })
	h := replica(t, cluster.DSN("siteenv"), clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC)))
	if st, body, _ := h.readyz(); st != 200 || body.Checks.Database != "ok" || body.Checks.Store != "not_configured" {
		t.Fatalf("readyz before the stop: %d %+v", st, body)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	st, body, hdr := h.readyz()
	if st != 503 || body.Status != "not_ready" || body.Checks.Database != "unreachable" || hdr.Get("Retry-After") == "" {
		t.Fatalf("readyz with the database stopped: %d %+v", st, body)
	}
	if r := h.plain("GET", h.root()+api.HealthzPath); r.status != 200 {
		t.Fatalf("healthz with the database stopped: %d", r.status)
	}
}

// metricsHarness is a harness whose engine, store and job runner report to
// the server's metrics, as serve wires them.
func setupMetrics(t *testing.T, start bool) (*queryHarness, *api.Metrics) {
	t.Helper()
	h := setup(t)
	m := h.srv.Metrics()
	raw, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := m.WrapStore(raw)
	eng := newEngine(t, st, engine.Options{MemoryBudget: 64 << 20})
	runner := newRunner(t, jobs.Config{Workers: 1, Poll: 20 * time.Millisecond, TempDir: t.TempDir(), ObserveAttempt: m.ObserveAttempt}, h.led, eng, st)
	if start {
		ctx, cancel := context.WithCancel(context.Background())
		runner.Start(ctx)
		t.Cleanup(func() {
			cancel()
			_ = runner.Stop(context.Background())
		})
	}
	api.SetQueryBackend(h.srv, st, runner)
	api.SetMapEngine(h.srv, eng)
	return &queryHarness{harness: h, store: raw, runner: runner}, m
}

// scrape reads m over HTTP and parses the Prometheus text format.
func scrape(t *testing.T, m *api.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	ts := httptest.NewServer(m.Handler(slog.Default()))
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("metrics Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v", err)
	}
	return fams
}

// sample finds the series of name with exactly labels (name=value pairs)
// and returns its value (a histogram's sample count); found false if absent.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetrics: after real traffic (a query run by the worker, reads up to
// the rate limit, refusals) the scrape counts each request under its
// operation and status class, the refusal under its limit, the attempt,
// the shard load and the store bytes behind it, and the pool; /metrics is
// not served on the API's address.
func TestMetrics(t *testing.T) {
	t.Parallel()
	qh, m := setupMetrics(t, true)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b100": east(100), "b900": east(900)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write", "usage:read")
	pointSite := map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}
	if r := qh.query(k.Secret, map[string]any{"site": pointSite, "layer_ids": []string{"nsw.bores"}, "radius_m": 1000}, "Prefer", "wait=3"); r.status != 200 {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	reads := 0
	for {
		r := qh.do("GET", "/usage", k.Secret, nil)
		if r.status == 429 {
			break
		}
		if r.status != 200 || reads > 130 {
			t.Fatalf("read %d: %d %s", reads, r.status, r.body)
		}
		reads++
	}
	qh.do("GET", "/layers", "", nil).problem(t, "unauthenticated", 401)
	qh.do("GET", "/layers", "", nil).problem(t, "unauthenticated", 401)
	if r := qh.plain("GET", qh.root()+"/metrics"); r.status != 404 {
		t.Fatalf("/metrics on the API address: %d %s", r.status, r.body)
	}

	// The worker reports its attempt after recording the result, which the
	// response may already have read: poll for it.
	fams := scrape(t, m)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if n, _ := sample(fams, "siteenv_query_attempt_duration_seconds", "outcome", jobs.AttemptFinished); n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
		fams = scrape(t, m)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"siteenv_http_requests_total", []string{"operation", "create_query", "status_class", "2xx"}, 1},
		{"siteenv_http_requests_total", []string{"operation", "get_usage", "status_class", "2xx"}, float64(reads)},
		{"siteenv_http_requests_total", []string{"operation", "get_usage", "status_class", "4xx"}, 1},
		{"siteenv_http_requests_total", []string{"operation", "list_layers", "status_class", "4xx"}, 2},
		{"siteenv_http_requests_total", []string{"operation", "unmatched", "status_class", "4xx"}, 1},
		{"siteenv_http_request_duration_seconds", []string{"operation", "get_usage", "status_class", "2xx"}, float64(reads)},
		{"siteenv_http_requests_in_flight", nil, 0},
		{"siteenv_rate_limited_total", []string{"bucket", "reads"}, 1},
		{"siteenv_query_attempt_duration_seconds", []string{"outcome", jobs.AttemptFinished}, 1},
		{"siteenv_queries", []string{"status", "queued"}, 0},
		{"siteenv_queries", []string{"status", "running"}, 0},
		{"siteenv_ledger_up", nil, 1},
	} {
		got, ok := sample(fams, c.name, c.labels...)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, name := range []string{"siteenv_engine_shard_loads_total", "siteenv_engine_shard_cache_bytes", "siteenv_store_read_bytes_total", "siteenv_store_opens_total",
		"siteenv_db_pool_max_connections", "siteenv_db_pool_acquires_total"} {
		if got, ok := sample(fams, name); !ok || got <= 0 {
			t.Errorf("%s = %v (present %v), want > 0", name, got, ok)
		}
	}
	if got, ok := sample(fams, "siteenv_db_pool_connections", "state", "total"); !ok || got <= 0 {
		t.Errorf("siteenv_db_pool_connections{state=total} = %v (present %v)", got, ok)
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
		t.Error("the Go and process collectors are missing")
	}
}

// TestMetricsQueueDepth: the queue gauges read the ledger at scrape time:
// a query no worker claimed is counted queued, and the oldest wait follows
// the clock.
func TestMetricsQueueDepth(t *testing.T) {
	t.Parallel()
	qh, m := setupMetrics(t, false)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b100": east(100)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	pointSite := map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}
	if r := qh.query(k.Secret, map[string]any{"site": pointSite, "layer_ids": []string{"nsw.bores"}, "radius_m": 1000}); r.status != 202 {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	qh.clock.Advance(30 * time.Second)
	fams := scrape(t, m)
	if got, _ := sample(fams, "siteenv_queries", "status", "queued"); got != 1 {
		t.Errorf("queued %v, want 1", got)
	}
	if got, _ := sample(fams, "siteenv_query_queue_oldest_seconds"); got != 30 {
		t.Errorf("oldest queued %v s, want 30", got)
	}
}

// TestCountingStoreIsAStore: the metrics wrapper passes the store conformance
// suite, so wrapping the engine's store changes nothing but the counters.
func TestCountingStoreIsAStore(t *testing.T) {
	t.Parallel()
	m := api.NewMetrics()
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return m.WrapStore(s)
	})
	// A store that writes in place still does once wrapped (serve's runner
	// then writes results without staging them), and one that does not
	// is not made to look as if it did.
	fs, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.WrapStore(fs).(store.Creator); !ok {
		t.Fatal("the wrapped file store is no longer a store.Creator")
	}
	if _, ok := m.WrapStore(plainStore{fs}).(store.Creator); ok {
		t.Fatal("a wrapped store without Create claims to have it")
	}
	// Nor does it lose PutVolatile (the runner's write of a result behind
	// its answer, without an fsync): serve's results went through Create.
	if _, ok := m.WrapStore(fs).(store.VolatilePutter); !ok {
		t.Fatal("the wrapped file store is no longer a store.VolatilePutter")
	}
	if _, ok := m.WrapStore(plainStore{fs}).(store.VolatilePutter); ok {
		t.Fatal("a wrapped store without PutVolatile claims to have it")
	}
}

// plainStore hides its store's Create.
type plainStore struct{ store.Store }

// logBuffer collects log output from concurrent requests.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAccessLog: one INFO line per API request with method, route template,
// status, duration, bytes, request and account ids; never the key, the
// cursor, the query string or the Idempotency-Key. Probes log at debug only.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	h := setup(t)
	var buf logBuffer
	api.SetLogger(h.srv, slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	h.publish("nsw.flood", "flood", 25, []string{"NSW"}, "")
	h.publish("nsw.heritage", "heritage", 0, []string{"NSW"}, "")
	acct := h.account(0)
	k := h.key(acct, nil, "layers:read", "sites:read", "sites:write")

	// Identity bodies, so the logged bytes are the bodies read here.
	id := []string{"Accept-Encoding", "identity"}
	first := h.do("GET", "/layers?limit=1", k.Secret, nil, id...)
	cursor := first.json(t)["page"].(map[string]any)["next_cursor"].(string)
	second := h.do("GET", "/layers?limit=1&cursor="+url.QueryEscape(cursor), k.Secret, nil, id...)
	if second.status != 200 {
		t.Fatalf("second page: %d %s", second.status, second.body)
	}
	layer := h.do("GET", "/layers/nsw.flood", k.Secret, nil, id...)
	const idem = "idem-secret-7f3a9c"
	site := h.do("POST", "/sites", k.Secret, map[string]any{"site": geometrySelector(squareHa(1, 151.0, -33.81))}, "Idempotency-Key", idem, id[0], id[1])
	if site.status != 200 && site.status != 201 {
		t.Fatalf("create site: %d %s", site.status, site.body)
	}
	const badKey = "sk_not-a-real-key-0123456789abcdef"
	h.do("GET", "/usage", badKey, nil).problem(t, "unauthenticated", 401)
	h.plain("GET", h.root()+api.HealthzPath)

	text := buf.String()
	for _, secret := range []string{k.Secret, cursor, url.QueryEscape(cursor), idem, badKey, "limit=1", "?"} {
		if strings.Contains(text, secret) {
			t.Errorf("the log holds %q:\n%s", secret, text)
		}
	}
	type line struct {
		Level, Msg, Method, Route, Operation, RequestID, AccountID, ResourceID, Code string
		Status, Bytes                                                                int
		DurationMS                                                                   *float64
	}
	var lines []line
	for _, raw := range strings.Split(strings.TrimSpace(text), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("not a JSON log line: %q", raw)
		}
		if m["msg"] != "request" {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		num := func(k string) int { f, _ := m[k].(float64); return int(f) }
		l := line{Level: str("level"), Msg: str("msg"), Method: str("method"), Route: str("route"), Operation: str("operation"),
			RequestID: str("request_id"), AccountID: str("account_id"), ResourceID: str("resource_id"), Code: str("code"),
			Status: num("status"), Bytes: num("bytes")}
		if d, ok := m["duration_ms"].(float64); ok {
			l.DurationMS = &d
		}
		lines = append(lines, l)
	}
	want := []struct {
		method, route, op string
		status            int
		resp              response
		account           bool
	}{
		{"GET", "/api/v1/layers", "list_layers", 200, first, true},
		{"GET", "/api/v1/layers", "list_layers", 200, second, true},
		{"GET", "/api/v1/layers/{layer_id}", "get_layer", 200, layer, true},
		{"POST", "/api/v1/sites", "create_site", site.status, site, true},
		{"GET", "/api/v1/usage", "get_usage", 401, response{}, false},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d request lines, want %d (probes only at debug):\n%s", len(lines), len(want), text)
	}
	for i, w := range want {
		l := lines[i]
		if l.Level != "INFO" || l.Method != w.method || l.Route != w.route || l.Operation != w.op || l.Status != w.status || l.DurationMS == nil || len(l.RequestID) != 36 {
			t.Errorf("line %d: %+v, want %s %s %s %d", i, l, w.method, w.route, w.op, w.status)
		}
		if w.resp.header != nil && (l.RequestID != w.resp.header.Get("X-Request-Id") || l.Bytes != len(w.resp.body)) {
			t.Errorf("line %d: request_id %s bytes %d, response %s with %d bytes", i, l.RequestID, l.Bytes, w.resp.header.Get("X-Request-Id"), len(w.resp.body))
		}
		if got := l.AccountID == acct.String(); got != w.account {
			t.Errorf("line %d: account_id %q", i, l.AccountID)
		}
	}
	if lines[2].ResourceID != "nsw.flood" || lines[4].Code != "unauthenticated" {
		t.Errorf("resource or code missing: %+v", lines)
	}
}

// TestRateLimitHeaders: every authenticated response carries RateLimit-Policy
// and RateLimit from the counters that enforce the limit: reads count down
// with each GET, writes report the reads window without counting, POST
// /queries reports the admissions window, the refusal says 0 remaining, and
// a new window starts over. Unauthenticated answers carry none.
func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k := h.key(acct, nil, "usage:read", "sites:read", "sites:write", "queries:run")
	narrow := h.key(acct, nil, "sites:read") // same account, lacks usage:read
	check := func(r response, policy, state string) {
		t.Helper()
		if got := r.header.Get("RateLimit-Policy"); got != policy {
			t.Errorf("RateLimit-Policy %q, want %q (%d %s)", got, policy, r.status, r.body)
		}
		if got := r.header.Get("RateLimit"); got != state {
			t.Errorf("RateLimit %q, want %q (%d %s)", got, state, r.status, r.body)
		}
	}
	// The fake clock is 10 s into its minute.
	check(h.do("GET", "/usage", k.Secret, nil), "120;w=60", "limit=120, remaining=119, reset=50")
	check(h.do("GET", "/usage", k.Secret, nil), "120;w=60", "limit=120, remaining=118, reset=50")
	check(h.createSite(k.Secret, map[string]any{"site": geometrySelector(squareHa(1, 151.0, -33.81))}), "120;w=60", "limit=120, remaining=118, reset=50")
	check(h.do("POST", "/queries", k.Secret, map[string]any{}, "Idempotency-Key", "q-1"), "30;w=60", "limit=30, remaining=30, reset=50")
	h.clock.Advance(5 * time.Second)
	forbidden := h.do("GET", "/usage", narrow.Secret, nil)
	forbidden.problem(t, "scope_insufficient", 403)
	check(forbidden, "120;w=60", "limit=120, remaining=118, reset=45")
	check(h.do("GET", "/usage", "", nil), "", "")
	check(h.do("GET", "/openapi.json", "", nil), "", "")
	for i := 0; i < 118; i++ {
		if r := h.do("GET", "/sites", k.Secret, nil); r.status != 200 {
			t.Fatalf("read %d: %d", i, r.status)
		}
	}
	refused := h.do("GET", "/usage", k.Secret, nil)
	refused.problem(t, "rate_limited", 429)
	check(refused, "120;w=60", "limit=120, remaining=0, reset=45")
	h.clock.Advance(45 * time.Second)
	check(h.do("GET", "/usage", k.Secret, nil), "120;w=60", "limit=120, remaining=119, reset=60")
}

// TestConditionalGet: the OpenAPI document, the catalogue and the schemas
// carry a strong ETag over the body; If-None-Match with it (or W/ it, or
// *) answers 304 with no body; a changed catalogue gets a new ETag and 200.
func TestConditionalGet(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.flood", "flood", 25, []string{"NSW"}, "")
	k := h.key(h.account(0), nil, "layers:read")
	identity := []string{"Accept-Encoding", "identity"}
	for _, c := range []struct{ path, key string }{
		{"/openapi.json", ""}, {"/layers", k.Secret}, {"/layers/nsw.flood", k.Secret}, {"/layers/nsw.flood/schema", k.Secret},
	} {
		r := h.do("GET", c.path, c.key, nil, identity...)
		tag := r.header.Get("ETag")
		if r.status != 200 || !strings.HasPrefix(tag, `"`) {
			t.Fatalf("%s: %d ETag %q", c.path, r.status, tag)
		}
		if again := h.do("GET", c.path, c.key, nil, identity...); again.header.Get("ETag") != tag || !bytes.Equal(again.body, r.body) {
			t.Fatalf("%s: ETag %q then %q", c.path, tag, again.header.Get("ETag"))
		}
		for _, inm := range []string{tag, "W/" + tag, `"stale", ` + tag, "*"} {
			nm := h.do("GET", c.path, c.key, nil, append(identity, "If-None-Match", inm)...)
			if nm.status != 304 || len(nm.body) != 0 || nm.header.Get("ETag") != tag {
				t.Fatalf("%s If-None-Match %s: %d %q ETag %q", c.path, inm, nm.status, nm.body, nm.header.Get("ETag"))
			}
		}
		if r := h.do("GET", c.path, c.key, nil, append(identity, "If-None-Match", `"stale"`)...); r.status != 200 || !bytes.Equal(r.body, r.body) {
			t.Fatalf("%s with a stale tag: %d", c.path, r.status)
		}
	}
	if got := h.do("GET", "/openapi.json", "", nil, identity...); !bytes.Equal(got.body, openapi.Document) {
		t.Fatal("the document changed")
	}
	before := h.do("GET", "/layers", k.Secret, nil, identity...).header.Get("ETag")
	h.publish("nsw.heritage", "heritage", 0, []string{"NSW"}, "")
	after := h.do("GET", "/layers", k.Secret, nil, append(identity, "If-None-Match", before)...)
	if after.status != 200 || after.header.Get("ETag") == before {
		t.Fatalf("changed catalogue: %d ETag %q (was %q)", after.status, after.header.Get("ETag"), before)
	}
	// Errors carry no validator.
	if r := h.do("GET", "/layers/nsw.nope", k.Secret, nil, identity...); r.status != 404 || r.header.Get("ETag") != "" {
		t.Fatalf("404 with ETag %q", r.header.Get("ETag"))
	}
}

// gunzip decodes a gzip body.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("bad gzip: %v", err)
	}
	return out
}

// TestGzip: bodies over 1 KiB are gzipped when the client accepts gzip (and
// only then), with Vary: Accept-Encoding and an ETag of their own; the
// decoded body is the identity body and conforms to the document; small
// bodies and refusals of gzip (q=0) are sent as they are.
func TestGzip(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.flood", "flood", 25, []string{"NSW"}, "")
	h.publish("nsw.heritage", "heritage", 0, []string{"NSW"}, "")
	k := h.key(h.account(0), nil, "layers:read", "usage:read")
	send := func(path, key string, headers ...string) (*http.Request, response) {
		t.Helper()
		req, err := http.NewRequestWithContext(h.ctx, "GET", h.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return req, response{status: resp.StatusCode, header: resp.Header, body: b}
	}
	for _, c := range []struct{ path, key string }{{"/openapi.json", ""}, {"/layers", k.Secret}} {
		_, plain := send(c.path, c.key, "Accept-Encoding", "identity")
		if plain.header.Get("Content-Encoding") != "" || len(plain.body) <= 1024 || !strings.Contains(plain.header.Get("Vary"), "Accept-Encoding") {
			t.Fatalf("%s identity: %v, %d bytes", c.path, plain.header, len(plain.body))
		}
		req, z := send(c.path, c.key, "Accept-Encoding", "br;q=1.0, gzip;q=0.8")
		if z.status != 200 || z.header.Get("Content-Encoding") != "gzip" || !strings.Contains(z.header.Get("Vary"), "Accept-Encoding") {
			t.Fatalf("%s gzip: %d %v", c.path, z.status, z.header)
		}
		decoded := gunzip(t, z.body)
		if !bytes.Equal(decoded, plain.body) || len(z.body) >= len(decoded) {
			t.Fatalf("%s: gzip body decodes to %d bytes (identity %d), compressed %d", c.path, len(decoded), len(plain.body), len(z.body))
		}
		if zt, pt := z.header.Get("ETag"), plain.header.Get("ETag"); zt == pt || !strings.HasSuffix(zt, `-gzip"`) {
			t.Fatalf("%s: gzip ETag %q, identity %q", c.path, zt, pt)
		}
		h.v.Check(t, req, z.status, z.header, decoded)
		if _, nm := send(c.path, c.key, "Accept-Encoding", "gzip", "If-None-Match", z.header.Get("ETag")); nm.status != 304 {
			t.Fatalf("%s: gzip ETag not honoured: %d", c.path, nm.status)
		}
		if _, off := send(c.path, c.key, "Accept-Encoding", "gzip;q=0"); off.header.Get("Content-Encoding") != "" {
			t.Fatalf("%s: gzip;q=0 still compressed", c.path)
		}
	}
	req, small := send("/usage", k.Secret, "Accept-Encoding", "gzip")
	if small.status != 200 || len(small.body) > 1024 || small.header.Get("Content-Encoding") != "" {
		t.Fatalf("small body: %d %v %d bytes", small.status, small.header, len(small.body))
	}
	h.v.Check(t, req, small.status, small.header, small.body)
}

// TestPreferenceApplied: POST /queries echoes the Prefer wait it honoured;
// no Prefer, no header; a server without a local runner cannot wait and
// says nothing.
func TestPreferenceApplied(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, true)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b100": east(100)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.bores"}, "radius_m": 1000}
	r := qh.query(k.Secret, body, "Prefer", "wait=3")
	if r.status != 200 || r.header.Get("Preference-Applied") != "wait=3" {
		t.Fatalf("wait=3: %d Preference-Applied %q", r.status, r.header.Get("Preference-Applied"))
	}
	if r := qh.query(k.Secret, body); r.header.Values("Preference-Applied") != nil {
		t.Fatalf("no Prefer, yet Preference-Applied %q", r.header.Get("Preference-Applied"))
	}
	if r := qh.query(k.Secret, body, "Prefer", "wait=0"); r.header.Get("Preference-Applied") != "wait=0" {
		t.Fatalf("wait=0: Preference-Applied %q", r.header.Get("Preference-Applied"))
	}
	// Queries run on another replica: none here. The runner stops first, or
	// it could claim and finish the new query before the POST reads it back.
	if err := qh.runner.Stop(qh.ctx); err != nil {
		t.Fatal(err)
	}
	api.SetQueryBackend(qh.srv, qh.store, nil)
	if r := qh.query(k.Secret, body, "Prefer", "wait=2"); r.status != 202 || r.header.Values("Preference-Applied") != nil {
		t.Fatalf("no local runner: %d Preference-Applied %q", r.status, r.header.Get("Preference-Applied"))
	}
}

// TestPricesBeforeBuying: each layer states its section's price, and GET
// /context the report price once an operator set it (null before).
func TestPricesBeforeBuying(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.flood", "flood", 25, []string{"NSW"}, "")
	h.publish("aus.bores", "water", 0, []string{"AUS"}, "")
	k := h.key(h.account(0), nil, "layers:read")
	prices := map[string]any{}
	for _, y := range h.do("GET", "/layers", k.Secret, nil).json(t)["layers"].([]any) {
		y := y.(map[string]any)
		prices[y["layer_id"].(string)] = y["price_credits"]
	}
	if prices["nsw.flood"] != float64(25) || prices["aus.bores"] != float64(0) {
		t.Fatalf("prices %v", prices)
	}
	if got := h.do("GET", "/layers/nsw.flood", k.Secret, nil).json(t)["layer"].(map[string]any)["price_credits"]; got != float64(25) {
		t.Fatalf("layer price %v", got)
	}
	c := h.do("GET", "/context", k.Secret, nil).json(t)
	if v, ok := c["report_price_credits"]; !ok || v != nil {
		t.Fatalf("report price before it is set: %v (present %v)", v, ok)
	}
	if err := h.led.SetSetting(h.ctx, ledger.SettingReportPrice, 40); err != nil {
		t.Fatal(err)
	}
	if v := h.do("GET", "/context", k.Secret, nil).json(t)["report_price_credits"]; v != float64(40) {
		t.Fatalf("report price %v, want 40", v)
	}
}
