package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/valyala/fasthttp"

	"siteenv/api"
	"siteenv/clock"
	"siteenv/engine"
	"siteenv/internal/phase"
	"siteenv/jobs"
	"siteenv/ledger/ledgertest"
	"siteenv/store"
)

// newSiteEnv is the server as `siteenv serve` wires it (api.Config with a
// store keeping recent objects, the runner, the engine), with phase timers,
// (wrapped by results, as serve wraps it for its metrics) over three point layers of 3,000 features each within 3 km of origin
// (about 106 a km² per layer), and 60 keys of their own accounts that take
// turns, as many clients' keys do; its client is a fasthttp client over
// TCP.
type newSiteEnv struct {
	qh     *queryHarness
	timer  *phase.Timer
	keys   []string
	layers []string
	client *fasthttp.HostClient
	rng    *rand.Rand
	n      int
}

const newSiteKeys = 60

func setupNewSite(tb testing.TB, recentBytes int64, results func(store.Store) store.Store) *newSiteEnv {
	tb.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	led := ledgertest.New(tb, clk)
	st, err := store.NewFileStore(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	st.KeepRecent(recentBytes)
	served := results(st)
	timer := &phase.Timer{}
	eng := newEngine(tb, st, engine.Options{MemoryBudget: 256 << 20})
	runner := newRunner(tb, jobs.Config{Workers: 2, Poll: 20 * time.Millisecond, TempDir: tb.TempDir(), Phases: timer}, led, eng, served)
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	runner.Start(ctx)
	h := setupOn(tb, clk, led, func(c *api.Config) {
		c.Store, c.Runner, c.Engine, c.Phases = served, runner, eng, timer
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) // formatted, then discarded, as in production
	})
	qh := &queryHarness{harness: h, store: st, runner: runner}
	stopBehind(tb, h, runner)
	e := &newSiteEnv{qh: qh, timer: timer, rng: rand.New(rand.NewPCG(41, 1))}
	for l := range 3 {
		pts := map[string]orb.Point{}
		for i := range 3000 {
			pts[fmt.Sprintf("f%d-%d", l, i)] = e.near(3000)
		}
		id := "nsw.layer" + strconv.Itoa(l)
		qh.points(id, "water", 0, 10000, nil, pts)
		e.layers = append(e.layers, id)
	}
	for range newSiteKeys {
		e.keys = append(e.keys, qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write").Secret)
	}
	u, err := url.Parse(h.base)
	if err != nil {
		tb.Fatal(err)
	}
	// Its own dial: fasthttp's default dialer starts a goroutine that
	// outlives the tests (leakcheck).
	e.client = &fasthttp.HostClient{Addr: u.Host, MaxConns: 16, MaxIdleConnDuration: 100 * time.Millisecond,
		Dial: func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) }}
	tb.Cleanup(e.client.CloseIdleConnections)
	// Each key made a request before (a client's key has): the server
	// computes the answer of a key it saw during the admission.
	for _, k := range e.keys {
		if s, body := e.do("GET", api.BasePath+"/context", k, nil, ""); s != 200 {
			tb.Fatalf("GET /context: %d %s", s, body)
		}
	}
	return e
}

// near is a point within r metres of origin, uniform over the disc.
func (e *newSiteEnv) near(r float64) orb.Point {
	d, az := r*math.Sqrt(e.rng.Float64()), e.rng.Float64()*2*math.Pi
	return orb.Point{origin[0] + d*math.Cos(az)/(111_320*0.8309), origin[1] + d*math.Sin(az)/111_320}
}

func (e *newSiteEnv) do(method, path, key string, body []byte, idem string) (int, []byte) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://" + e.client.Addr + path)
	req.Header.Set("Authorization", "Bearer "+key)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
		req.Header.Set("Prefer", "wait=3")
	}
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(body)
	}
	if err := e.client.Do(req, resp); err != nil {
		e.qh.t.Fatal(err)
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...)
}

// query asks about a new point site within 2 km of origin, radius radiusM,
// with its key's turn, and follows every page; it returns the features.
// Every 60 queries the clock moves 3 s, so no key passes the contract's
// 30 admissions a minute and each stays vouched for.
func (e *newSiteEnv) query(radiusM float64, pageSize int) int {
	return e.queryShape(radiusM, pageSize, 0, false)
}

// queryShape is query about a polygon site of vertices positions (a
// 300 m circle, 28 ha, drawn with that many) when vertices > 0, its
// coordinates written with 8 decimals (on the canonical grid, as GIS
// software writes them) when grid, at full precision otherwise.
func (e *newSiteEnv) queryShape(radiusM float64, pageSize, vertices int, grid bool) int {
	if e.n > 0 && e.n%newSiteKeys == 0 {
		e.qh.clock.Advance(3 * time.Second)
	}
	key := e.keys[e.n%newSiteKeys]
	e.n++
	p := e.near(2000)
	site := map[string]any{"kind": "point", "longitude": p[0], "latitude": p[1]}
	if vertices > 0 {
		ring := make([][2]float64, vertices)
		for i := range vertices - 1 {
			a := 2 * math.Pi * float64(i) / float64(vertices-1)
			ring[i] = [2]float64{p[0] + 300*math.Cos(a)/(111_320*0.8309), p[1] + 300*math.Sin(a)/111_320}
			if grid {
				ring[i] = [2]float64{math.Round(ring[i][0]*1e8) / 1e8, math.Round(ring[i][1]*1e8) / 1e8}
			}
		}
		ring[vertices-1] = ring[0]
		site = map[string]any{"kind": "geometry", "geometry": map[string]any{"type": "Polygon", "coordinates": [][][2]float64{ring}}}
	}
	body, _ := json.Marshal(map[string]any{"site": site,
		"layer_ids": e.layers, "radius_m": radiusM, "page_size": pageSize, "include_geometry": false})
	status, b := e.do("POST", api.BasePath+"/queries", key, body, "ns-"+strconv.Itoa(e.n))
	features := 0
	for {
		if status != 200 {
			e.qh.t.Fatalf("query %d: %d %s", e.n, status, b)
		}
		var r struct {
			QueryID  string            `json:"query_id"`
			Features []json.RawMessage `json:"features"`
			Page     struct {
				HasMore    bool   `json:"has_more"`
				NextCursor string `json:"next_cursor"`
			} `json:"page"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			e.qh.t.Fatal(err)
		}
		features += len(r.Features)
		if !r.Page.HasMore {
			return features
		}
		status, b = e.do("GET", api.BasePath+"/queries/"+r.QueryID+"/results?include_geometry=false&limit="+strconv.Itoa(pageSize)+
			"&cursor="+r.Page.NextCursor, key, nil, "")
	}
}

// BenchmarkNewSiteQuery is a client's whole query about a new point site
// in process, through the real server over TCP and the real ledger (the
// test cluster: fsync off), without the bench harness: small, radius 100
// m (about 10 features over three layers, one page: the admission with
// its answer); small-not-first, the same computed after its admission
// (its finish stored with its response, a second round trip); paged,
// radius 1.5 km (about 2,000 features, pages of 500 followed);
// polygon-2k and polygon-10k, small about a new polygon site drawn with
// 2,000 and 10,000 (the contract's most) positions at full precision,
// polygon-10k-8dp the latter written with 8 decimals. It reports the
// server's POST /queries p50 and, per query, the server's phases
// (ms-per-query metrics):
//
//	go test -run '^$' -bench NewSiteQuery -benchtime 400x ./api/
func BenchmarkNewSiteQuery(b *testing.B) {
	for _, c := range []struct {
		name     string
		radius   float64
		pageSize int
		notFirst bool
		vertices int
		grid     bool
	}{{"small", 100, 500, false, 0, false}, {"small-not-first", 100, 500, true, 0, false}, {"paged", 1500, 500, false, 0, false},
		{"polygon-2k", 100, 500, false, 2000, false}, {"polygon-10k", 100, 500, false, 10000, false},
		{"polygon-10k-8dp", 100, 500, false, 10000, true}} {
		b.Run(c.name, func(b *testing.B) {
			e := setupNewSite(b, store.DefaultRecentBytes, api.NewMetrics().WrapStore)
			if c.notFirst {
				// No answer is ready before its admission: each is computed
				// after it, in the request, and its finish stored with the
				// response (the path of an answer too large to answer first).
				api.SetAnswerFirstWait(e.qh.srv, time.Nanosecond)
			}
			for range 30 { // warm: plans, pools, the catalogue cache
				e.queryShape(c.radius, c.pageSize, c.vertices, c.grid)
			}
			e.timer.Reset()
			features := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				features += e.queryShape(c.radius, c.pageSize, c.vertices, c.grid)
			}
			b.StopTimer()
			create := e.timer.Requests("create_query")
			if len(create) > 0 {
				b.ReportMetric(float64(create[len(create)/2])/1e6, "post-p50-ms")
			}
			b.ReportMetric(float64(features)/float64(b.N), "features/op")
			for _, s := range e.timer.Snapshot() {
				if s.Count > 0 {
					b.ReportMetric(float64(s.Total)/1e6/float64(b.N), phaseUnit(s.Phase))
				}
			}
		})
	}
}

// phaseUnit names a phase's metric: its name without spaces, per query.
func phaseUnit(p phase.Phase) string {
	return string(bytes.ReplaceAll([]byte(p.String()), []byte(" "), []byte("-"))) + "-ms/op"
}

// heapInUse is the Go heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestQueriesKeepNoMemoryPerRequest: a server answering query after query
// about new sites holds the same heap after 4N of them as after N (issue
// 41: a soak of `serve` grew its heap by about 150 KB a request, the file
// store's cache of recent results keeping a 1 MiB block for each result of
// a few KB). Each query's answer (about 20 features) is larger than its
// page of 5, so its result is written to the store and its pages read
// back, as a paged answer is; the store keeps recent objects with a bound
// of 4 MiB and writes each result in place through them (store.Creator
// without PutVolatile), as serve's wrapped store wrote every result then
// and writes one of over 10,000 records now.
func TestQueriesKeepNoMemoryPerRequest(t *testing.T) {
	e := setupNewSite(t, 4<<20, func(fs store.Store) store.Store { return inPlaceStore{fs} })
	const N = 40
	run := func(n int) {
		for range n {
			if f := e.query(250, 5); f <= 5 {
				t.Fatalf("an answer of %d features: not paged", f)
			}
		}
	}
	run(N)
	afterN := heapInUse()
	run(3 * N)
	after4N := heapInUse()
	t.Logf("heap in use after %d queries %.1f MiB, after %d %.1f MiB", N, float64(afterN)/(1<<20), 4*N, float64(after4N)/(1<<20))
	if grown := after4N - afterN; grown > 16<<20 {
		t.Fatalf("the heap in use grew by %.1f MiB from %d to %d queries (%.0f KB a query)", float64(grown)/(1<<20), N, 4*N, float64(grown)/(3*N)/1e3)
	}
}

// inPlaceStore is a file store without PutVolatile: every object is
// written through Create.
type inPlaceStore struct{ store.Store }

func (s inPlaceStore) Create(ctx context.Context, key string) (store.Writer, error) {
	return s.Store.(store.Creator).Create(ctx, key)
}
