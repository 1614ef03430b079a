package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
	"github.com/valyala/fasthttp"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/ingest"
	"siteenv/ingest/synth"
	"siteenv/internal/phase"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/ledger/pgembed"
	"siteenv/store"
)

// API bench defaults.
const (
	// DefaultAPIQueries is a prefix of the engine bench's mix (the mix is
	// drawn from one seeded stream, so the first n queries are the same).
	DefaultAPIQueries = 2000
	// DefaultSmallQueries is the small-query mix's size for the command
	// (APIOptions.SmallQueries: 0 runs none).
	DefaultSmallQueries = 300
	// DefaultReads are the authenticated reads of the read pass, half GET
	// /context and half GET /layers.
	DefaultReads = 20_000
	// readClients run the read pass.
	readClients = 8
	// sequentialReads (at most the read pass's count) follow the read pass
	// with one client: the in-server time of a read when it waits for
	// nothing but itself, where the 8-client figure includes queueing for
	// the two cores.
	sequentialReads = 2000
	// apiPageLimit is the page size a client asks for (the contract's max).
	apiPageLimit = 500
	// admissionsPerAccount and readsPerAccount keep every account well
	// under the contract's per-minute limits (30 admissions, 120 reads) for
	// the whole run, so no request of the measurement is throttled.
	readsPerAccount = 100
	// serverReadsPerMinute is the bench server's read limit per account
	// (api.Config.ReadsPerMinute), raised from the contract's 120: an
	// answer of up to 100,000 features is 200 pages of 500, which one
	// account may read only over two minutes. The wait is the contract's
	// policy, not speed, and was left out of the latencies; at 500k
	// features it made a run last hours.
	serverReadsPerMinute = 1_000_000
)

// DefaultClients are the client counts of the API and PostGIS passes.
var DefaultClients = []int{1, 2, 8}

// APIOptions configure RunAPI.
type APIOptions struct {
	// WorkDir receives a private temporary directory (file store, two
	// PostgreSQL clusters) removed when RunAPI returns. Required.
	WorkDir string
	// OutDir receives the report (api-report.txt) and the latency CDF plot
	// (api-cdf.svg). Default WorkDir.
	OutDir string
	// Scale of the synthetic data. Default synth.Medium; ScaleHeavy: the
	// heavy-polygon layers (heavy.go).
	Scale synth.Scale
	// Seed of the data and of the query mix. Default DefaultSeed.
	Seed int64
	// Queries of the mix. Default DefaultAPIQueries.
	Queries int
	// Clients: the client counts of the passes. Default DefaultClients.
	Clients []int
	// Reads of the authenticated read pass; 0: none (the command's
	// default is DefaultReads).
	Reads int
	// SmallQueries of the small-query mix (smallmix.go), run with every
	// client count after the mix; 0: none.
	SmallQueries int
	// FreshQueries of the fresh mix (freshmix.go: every query about a new
	// site), run with every client count after the small mix; 0: none.
	FreshQueries int
	// Markdown, when set, receives the run's tables as markdown
	// (APIReport.Markdown), for docs/benchmarks.md; Command is the command
	// line it names.
	Markdown io.Writer
	Command  string
	// MaxFeaturesPerLayer keeps only the first features of each layer
	// (tests use a few hundred). Default 0: all.
	MaxFeaturesPerLayer int64
	// EngineMemory is the engine's memory budget (engine.Options). Default
	// DefaultEngineMemory; the CLI passes SITEENV_ENGINE_MEMORY.
	EngineMemory int64
	// KeepDir and MemoryLimitSet are EngineOptions'.
	KeepDir        string
	MemoryLimitSet bool
	// CPUProfile, when set, receives a CPU profile (runtime/pprof) of the
	// first API pass: client and server, which share this process.
	// ReadCPUProfile likewise of the read pass, FreshCPUProfile of the
	// fresh mix's last pass (its most clients).
	CPUProfile, ReadCPUProfile, FreshCPUProfile io.Writer
	// LedgerStatements runs the ledger's PostgreSQL with
	// log_statement_stats and reports, for each pass of the small and fresh
	// mixes, the ledger's CPU by statement (ledgerstats.go). The logging
	// costs CPU of its own: such a run's figures are for the breakdown only.
	LedgerStatements bool
	// Trace, when set, receives an execution trace (runtime/trace) of the
	// first API pass: where each goroutine of a request waited (network,
	// scheduler, channels), which a CPU profile cannot show.
	Trace io.Writer
	// Logger receives progress. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns o with every zero field set to its default.
func (o APIOptions) WithDefaults() APIOptions {
	if o.Scale == "" {
		o.Scale = synth.Medium
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Queries == 0 {
		o.Queries = DefaultAPIQueries
	}
	if len(o.Clients) == 0 {
		o.Clients = DefaultClients
	}
	if o.EngineMemory == 0 {
		o.EngineMemory = DefaultEngineMemory
	}
	if o.OutDir == "" {
		o.OutDir = o.WorkDir
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate reports the first field of filled options out of range.
func (o APIOptions) validate() error {
	switch {
	case o.WorkDir == "":
		return errors.New("bench: WorkDir is required")
	case o.Queries < 1:
		return fmt.Errorf("bench: queries must be at least 1, not %d", o.Queries)
	case o.Reads < 0:
		return fmt.Errorf("bench: reads must not be negative")
	case o.SmallQueries < 0:
		return fmt.Errorf("bench: small queries must not be negative")
	case o.FreshQueries < 0:
		return fmt.Errorf("bench: fresh queries must not be negative")
	case o.EngineMemory < 0:
		return fmt.Errorf("bench: negative EngineMemory")
	}
	for _, c := range o.Clients {
		if c < 1 || c > 64 {
			return fmt.Errorf("bench: clients must be 1 to 64, not %d", c)
		}
	}
	_, err := ParseScale(string(o.Scale))
	return err
}

// apiSide is the service under test: the same pieces `siteenv serve` wires
// (api.Server's fasthttp server on a real TCP listener, jobs.Runner,
// engine, ledger on a durable PostgreSQL, file store), in this process.
type apiSide struct {
	// cpu reads the CPU the bench process and its clusters used.
	cpu     cpuMeter
	cluster *pgembed.Cluster
	led     *ledger.Ledger
	eng     *engine.Engine
	runner  *jobs.Runner
	hs      *fasthttp.Server
	client  *fasthttp.HostClient
	timer   *phase.Timer
	// keys are all-scopes keys of distinct accounts: the warm-up and each
	// pass run query i on an account of their own (one admission per
	// account, and a large result's pages never meet another query's in a
	// rate window); the read pass uses readKeys.
	keys     []string
	readKeys []string
	settings [][2]string // the ledger database's durability settings and its server's malloc tunables
	workers  int
	// statements: the ledger logs each statement's CPU (APIOptions.LedgerStatements).
	statements bool
}

func startAPI(ctx context.Context, dir string, g layerSource, ds *dataset, e *engine.Engine, nQueries, nRead int, statements bool, log *slog.Logger) (_ *apiSide, err error) {
	a := &apiSide{eng: e, timer: &phase.Timer{}, statements: statements}
	defer func() {
		if err != nil {
			a.Close(ctx)
		}
	}()
	// Durable: Ephemeral false leaves PostgreSQL's defaults (fsync on,
	// synchronous_commit on, full_page_writes on), as production runs.
	var set map[string]string
	if statements {
		set = map[string]string{"log_statement_stats": "on"}
	}
	a.cluster, err = pgembed.Start(ctx, filepath.Join(dir, "ledger"), pgembed.Options{Database: "siteenv", Logger: log, Settings: set})
	if err != nil {
		return nil, fmt.Errorf("bench: ledger cluster: %w", err)
	}
	dsn := a.cluster.DSN("siteenv")
	if a.settings, err = showSettings(ctx, dsn, "fsync", "synchronous_commit", "full_page_writes"); err != nil {
		return nil, err
	}
	a.settings = append(a.settings, [2]string{"GLIBC_TUNABLES", pgembed.ServerTunables()})
	if a.led, err = ledger.Open(ctx, dsn, ledger.Options{Logger: log}); err != nil {
		return nil, fmt.Errorf("bench: ledger: %w", err)
	}
	// Free sections: the bench measures queries, not purchases.
	sections, layerDefs, err := benchCatalogue(g)
	if err != nil {
		return nil, err
	}
	for _, s := range sections {
		if err := a.led.SetSection(ctx, s.Key, s.Name, 0); err != nil {
			return nil, fmt.Errorf("bench: section: %w", err)
		}
	}
	defs := map[string]*ingest.LayerDef{}
	for _, d := range layerDefs {
		defs[d.LayerID] = d
	}
	for _, l := range ds.layers {
		d := *defs[l.id]
		// The mix's radii reach 10 km on every layer, as in bench engine.
		d.RadiusMaxM = maxRadiusM
		if err := (ingest.LedgerPublisher{Ledger: a.led}).Publish(ctx, &d, l.manifest); err != nil {
			return nil, fmt.Errorf("bench: publish %s: %w", l.id, err)
		}
	}
	keys, err := createAccounts(ctx, a.led, nQueries+nRead)
	if err != nil {
		return nil, err
	}
	a.keys, a.readKeys = keys[:nQueries], keys[nQueries:]

	jcfg := jobs.Config{Logger: log, TempDir: dir, Phases: a.timer}
	// The server's own store over the same releases (its results stay in
	// the run's directory), keeping recent objects as `siteenv serve` does
	// (SITEENV_STORE_RECENT's default).
	served, err := servedStore(dir, ds)
	if err != nil {
		return nil, err
	}
	served.KeepRecent(store.DefaultRecentBytes)
	if a.runner, err = jobs.New(jcfg, a.led, e, served); err != nil {
		return nil, err
	}
	a.workers = a.runner.Config().Workers
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	srv, err := api.New(api.Config{Secret: secret, Logger: log, Store: served, Runner: a.runner, Engine: e, Phases: a.timer, ReadsPerMinute: serverReadsPerMinute}, a.led)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: listen: %w", err)
	}
	a.runner.Start(context.WithoutCancel(ctx))
	a.hs = srv.HTTPServer()
	go a.hs.Serve(ln) //nolint:errcheck // ends with Shutdown
	a.client = &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 128, MaxResponseBodySize: 2 << 20,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	return a, nil
}

// settle checkpoints the clusters at dsns and flushes every dirty page
// to disk before the passes. Loading PostGIS leaves gigabytes of dirty
// data; written back during a pass, it stalled the API's fsyncs (of a
// result file, of a durable commit) by tens of milliseconds, as an ext4
// journal commit waits for other files' new blocks, while PostGIS's
// read-only queries never wait for it: a cost of the baseline's load
// charged to the API.
func settle(ctx context.Context, log *slog.Logger, dsns ...string) error {
	start := time.Now()
	for _, dsn := range dsns {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return fmt.Errorf("bench: settle: %w", err)
		}
		_, err = conn.Exec(ctx, "CHECKPOINT")
		conn.Close(ctx)
		if err != nil {
			return fmt.Errorf("bench: settle: checkpoint: %w", err)
		}
	}
	syscall.Sync()
	log.Info("bench: clusters checkpointed and dirty pages flushed", "seconds", time.Since(start).Seconds())
	return nil
}

// showSettings reads server settings (to report the ledger's durability).
func showSettings(ctx context.Context, dsn string, names ...string) ([][2]string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: connect: %w", err)
	}
	defer conn.Close(ctx)
	var out [][2]string
	for _, n := range names {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", n).Scan(&v); err != nil {
			return nil, fmt.Errorf("bench: setting %s: %w", n, err)
		}
		out = append(out, [2]string{n, v})
	}
	return out, nil
}

// createAccounts makes n accounts with an all-scopes key each.
func createAccounts(ctx context.Context, led *ledger.Ledger, n int) ([]string, error) {
	keys := make([]string, n)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				acct, err := led.CreateAccount(ctx, fmt.Sprintf("bench %d", i), 0)
				if err == nil {
					var k ledger.NewKey
					k, err = led.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
					keys[i] = k.Secret
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bench: accounts: %w", err)
	}
	return keys, nil
}

// Close stops the server, the runner, the ledger and its cluster.
func (a *apiSide) Close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if a.hs != nil {
		_ = a.hs.Shutdown()
	}
	if a.runner != nil {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = a.runner.Stop(sctx)
		cancel()
	}
	if a.led != nil {
		a.led.Close()
	}
	if a.cluster != nil {
		_ = a.cluster.Stop(ctx)
	}
}

// apiQuery is the request body of one query of the mix.
type apiQuery struct {
	body   []byte
	layers []string
}

func apiQueries(ds *dataset, qs []query) ([]apiQuery, error) {
	out := make([]apiQuery, len(qs))
	for i, q := range qs {
		for _, li := range q.layers {
			out[i].layers = append(out[i].layers, ds.layers[li].id)
		}
		site := map[string]any{"kind": "geometry", "geometry": geojson.NewGeometry(q.site)}
		if pt, ok := q.site.(orb.Point); ok {
			site = map[string]any{"kind": "point", "longitude": pt[0], "latitude": pt[1]}
		}
		b, err := json.Marshal(map[string]any{
			"site":             site,
			"layer_ids":        out[i].layers,
			"radius_m":         q.radius,
			"include_geometry": false,
			"page_size":        apiPageLimit,
		})
		if err != nil {
			return nil, err
		}
		out[i].body = b
	}
	return out, nil
}

// queryResponse holds what a client reads from a query or results page.
type queryResponse struct {
	QueryID string `json:"query_id"`
	Status  string `json:"status"`
	Layers  []struct {
		LayerID    string  `json:"layer_id"`
		DataStatus string  `json:"data_status"`
		Reason     *string `json:"reason"`
	} `json:"layers"`
	Features []struct {
		LayerID   string `json:"layer_id"`
		FeatureID string `json:"feature_id"`
	} `json:"features"`
	Page struct {
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	} `json:"page"`
}

// clientStats count what the clients saw besides answers.
type clientStats struct {
	requests, pages, polls, throttled atomic.Int64
	// limited counts the retried answers that were 429 (the rest of
	// throttled are 503 or a retryable 409).
	limited atomic.Int64
	// waited is the time clients slept on Retry-After (nanoseconds);
	// waitedQueries counts the queries that slept.
	waited, waitedQueries atomic.Int64
	// sample is the largest page body a client decoded (sampleLen its
	// length), for the report's decoder comparison.
	sampleLen atomic.Int64
	mu        struct {
		sync.Mutex
		sample []byte
	}
}

// keepSample keeps body if it is the largest page so far.
func (st *clientStats) keepSample(body []byte) {
	if int64(len(body)) <= st.sampleLen.Load() {
		return
	}
	st.mu.Lock()
	if len(body) > len(st.mu.sample) {
		st.mu.sample = body
		st.sampleLen.Store(int64(len(body)))
	}
	st.mu.Unlock()
}

// queryRun is what one end-to-end query cost the client: its latency
// without the time slept on Retry-After, that time, and its pages.
type queryRun struct {
	outcomes []outcome
	lat      time.Duration
	waited   time.Duration
	pages    int
	features int
	// first is the time to the first page (the POST's answer, with its
	// polls), the rest of lat is paging.
	first time.Duration
	// server is the query's own server time per phase, known when queries
	// run one at a time (a 1-client pass): the phase timer's change.
	server []phase.Sum
}

// do sends one request and returns the status, the Retry-After seconds and
// a copy of the body.
func (a *apiSide) do(method, path, key, idemKey string, body []byte, wait bool) (int, int, []byte, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://" + a.client.Addr + path)
	req.Header.Set("Authorization", "Bearer "+key)
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	if wait {
		req.Header.Set("Prefer", "wait=3")
	}
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(body)
	}
	if err := a.client.Do(req, resp); err != nil {
		return 0, 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	ra, _ := strconv.Atoi(string(resp.Header.Peek("Retry-After")))
	return resp.StatusCode(), ra, append([]byte(nil), resp.Body()...), nil
}

// read sends an authenticated GET and returns its status, and its body
// only when the status is not 200: the read pass has no use for a read's
// body, and the clients share the server's cores (copying every body
// showed in `perf` as about 6% of the machine's CPU in the clients, most
// of it the kernel zeroing fresh pages for the copies).
func (a *apiSide) read(path, key string) (int, []byte, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + a.client.Addr + path)
	req.Header.Set("Authorization", "Bearer "+key)
	if err := a.client.Do(req, resp); err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode() != 200 {
		return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
	}
	return 200, nil, nil
}

// introduce makes one GET /context with each key before its pass, untimed:
// a client's key has made requests before the query measured, and the
// server begins the answer of a key it saw authenticated moments ago while
// the query's admission is in the ledger (api/precompute.go).
func (a *apiSide) introduce(keys []string) error {
	for _, k := range keys {
		status, body, err := a.read(api.BasePath+"/context", k)
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("bench: GET /context: %d %s", status, body)
		}
	}
	return nil
}

// runQuery runs query i end to end as a client does: POST with an
// Idempotency-Key and Prefer: wait=3, polling on 202 as Retry-After says,
// then every result page until has_more is false. It returns the layer
// outcomes in the query's layer order, its latency less the time slept on
// Retry-After (a rate limit's wait is the contract's policy, not the
// service's speed: it is reported on its own), and its page count.
func (a *apiSide) runQuery(ctx context.Context, key, idemKey string, q apiQuery, st *clientStats) (queryRun, error) {
	start := time.Now()
	var run queryRun
	var (
		status, ra int
		body       []byte
		err        error
		path       = api.BasePath + "/queries"
		method     = "POST"
		out        = make([]outcome, len(q.layers))
		index      = map[string]int{}
		layersSeen bool
	)
	for j, id := range q.layers {
		index[id] = j
	}
	for {
		if ctx.Err() != nil {
			return run, ctx.Err()
		}
		if method == "POST" {
			status, ra, body, err = a.do("POST", path, key, idemKey, q.body, true)
		} else {
			status, ra, body, err = a.do("GET", path, key, "", nil, false)
		}
		st.requests.Add(1)
		if err != nil {
			return run, err
		}
		switch {
		case status == 429 || (status == 409 && ra > 0) || status == 503:
			// Retryable: as the contract asks, after Retry-After.
			st.throttled.Add(1)
			if status == 429 {
				st.limited.Add(1)
			}
			ts := time.Now()
			if err := sleepCtx(ctx, time.Duration(max(ra, 1))*time.Second); err != nil {
				return run, err
			}
			if run.waited == 0 {
				st.waitedQueries.Add(1)
			}
			run.waited += time.Since(ts)
			st.waited.Add(int64(time.Since(ts)))
			continue
		case status != 200 && status != 202:
			return run, fmt.Errorf("%s %s: HTTP %d: %s", method, path, status, body)
		}
		// goccy/go-json decodes as encoding/json does (same struct tags,
		// same validation) about six times faster: a client's decoder is
		// its own choice, and the slowest one would make the bench measure
		// it rather than the service (the report gives both decoders' time
		// for the largest page).
		var r queryResponse
		if err := gojson.Unmarshal(body, &r); err != nil {
			return run, fmt.Errorf("%s %s: %w", method, path, err)
		}
		if status == 202 {
			// A poll's wait is the service's: it counts in the latency.
			st.polls.Add(1)
			path, method = api.BasePath+"/queries/"+r.QueryID+"?include_geometry=false&limit="+strconv.Itoa(apiPageLimit), "GET"
			if err := sleepCtx(ctx, time.Duration(max(ra, 1))*time.Second); err != nil {
				return run, err
			}
			continue
		}
		st.pages.Add(1)
		st.keepSample(body)
		if run.pages == 0 {
			run.first = time.Since(start) - run.waited
		}
		run.pages++
		run.features += len(r.Features)
		if !layersSeen {
			layersSeen = true
			for _, l := range r.Layers {
				j, ok := index[l.LayerID]
				if !ok {
					return run, fmt.Errorf("query %s: unexpected layer %s", r.QueryID, l.LayerID)
				}
				switch {
				case l.DataStatus == engine.StatusUnavailable:
					out[j].failed = "unavailable"
					if l.Reason != nil {
						out[j].failed = *l.Reason
					}
					if out[j].failed == engine.ReasonSourceUnavailable {
						return run, fmt.Errorf("query %s: layer %s: source unavailable", r.QueryID, l.LayerID)
					}
				case l.Reason != nil && *l.Reason == engine.ReasonOutsideCoverage:
					out[j].outside = true
				}
			}
		}
		for _, f := range r.Features {
			j, ok := index[f.LayerID]
			if !ok {
				return run, fmt.Errorf("query %s: feature of unexpected layer %s", r.QueryID, f.LayerID)
			}
			out[j].add([]byte(f.FeatureID))
		}
		if !r.Page.HasMore {
			run.outcomes = out
			run.lat = time.Since(start) - run.waited
			return run, nil
		}
		if r.Page.NextCursor == nil {
			return run, fmt.Errorf("query %s: has_more without next_cursor", r.QueryID)
		}
		path, method = api.BasePath+"/queries/"+r.QueryID+"/results?include_geometry=false&limit="+strconv.Itoa(apiPageLimit)+
			"&cursor="+*r.Page.NextCursor, "GET"
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// apiPass runs the mix through the API with `clients` clients; every
// query carries a fresh Idempotency-Key (run and pass in it).
// runs (when not nil) receives each query's run. Latencies leave out the
// Retry-After waits (see runQuery), and so does queries/s (pass.busy).
func (a *apiSide) apiPass(ctx context.Context, reqs []apiQuery, keys []string, clients int, tag string, st *clientStats, out [][]outcome, runs []queryRun) (pass, error) {
	var waited atomic.Int64
	p, err := runPass(ctx, len(reqs), clients, func(ctx context.Context, _, i int) (time.Duration, error) {
		var before []phase.Sum
		if clients == 1 {
			before = a.timer.Snapshot()
		}
		run, err := a.runQuery(ctx, keys[i], tag+"-"+strconv.Itoa(i), reqs[i], st)
		if err != nil {
			return 0, err
		}
		if clients == 1 {
			run.server = phase.Since(a.timer.Snapshot(), before)
		}
		waited.Add(int64(run.waited))
		if out != nil {
			out[i] = run.outcomes
		}
		if runs != nil {
			runs[i] = run
		}
		return run.lat, nil
	})
	p.busy = true
	return p, err
}

// readAccounts is how many accounts n reads need.
func readAccounts(n int) int { return (n + readsPerAccount - 1) / readsPerAccount }

// readPass sends n authenticated GETs (alternately /context and /layers)
// with clients clients, on the first readAccounts(n) keys, each sending at
// most readsPerAccount. Consecutive reads use different accounts, as
// concurrent reads mostly do in service: at the contract's 120 reads a
// minute per account, 8,000 reads a second come from thousands of
// accounts. (Reading each account's reads in a row instead had every
// client read as one account at once, each waiting on the others' count
// in its rate window.)
func (a *apiSide) readPass(ctx context.Context, n, clients int, keys []string, st *clientStats) (pass, error) {
	paths := []string{api.BasePath + "/context", api.BasePath + "/layers"}
	nk := readAccounts(n)
	return runPass(ctx, n, clients, func(ctx context.Context, _, i int) (time.Duration, error) {
		start := time.Now()
		status, body, err := a.read(paths[i%2], keys[i%nk])
		d := time.Since(start)
		st.requests.Add(1)
		if err != nil {
			return 0, err
		}
		if status != 200 {
			return 0, fmt.Errorf("GET %s: HTTP %d: %s", paths[i%2], status, body)
		}
		return d, nil
	})
}

func runID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RunAPI builds the scale's data, serves it through the API exactly as
// `siteenv serve` does and loads it into PostGIS, runs the same query mix
// end to end through HTTP and in PostGIS with each client count, checks the
// answers agree, measures authenticated reads, and writes the report and
// the latency CDF plot to OutDir.
func RunAPI(ctx context.Context, opt APIOptions) (*APIReport, error) {
	opt = opt.WithDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	log := opt.Logger
	watch, ctx := startMemWatch(ctx, log)
	defer watch.Stop()
	r, err := runAPI(ctx, opt, watch)
	if err != nil {
		return nil, lowMemory(ctx, err)
	}
	r.Memory = watch.Stop()
	if err := r.write(); err != nil {
		return nil, err
	}
	if opt.Markdown != nil {
		r.Markdown(opt.Markdown, opt.Command)
	}
	return r, nil
}

func runAPI(ctx context.Context, opt APIOptions, watch *memWatch) (*APIReport, error) {
	log := opt.Logger
	w, err := prepareWorkload(ctx, "api", opt.WorkDir, opt.KeepDir, opt.Scale, opt.Seed, opt.Queries, opt.MaxFeaturesPerLayer, log)
	if w.dir != "" {
		defer os.RemoveAll(w.dir)
	}
	if err != nil {
		return nil, err
	}
	dir, g, ds, mix := w.dir, w.gen, w.ds, w.mix
	// The contract's sites are points and (multi)polygons: a line site has
	// no selector, so line queries of the mix are left out on both sides.
	var qs []query
	for _, q := range mix {
		if q.kind != kindLine {
			qs = append(qs, q)
		}
	}
	reqs, err := apiQueries(ds, qs)
	if err != nil {
		return nil, err
	}
	nSmall := opt.SmallQueries
	if len(w.anchors) == 0 && nSmall > 0 {
		// The heavy scale's own mix is its small queries (points and
		// lots near the heavy polygons); it samples no feature anchors.
		log.Info("bench: no small-query mix at this scale", "scale", opt.Scale)
		nSmall = 0
	}
	small, err := makeSmallMix(nSmall, w.anchors, len(ds.layers), opt.Seed)
	if err != nil {
		return nil, err
	}
	smallReqs, err := apiQueries(ds, small)
	if err != nil {
		return nil, err
	}
	nFresh := opt.FreshQueries
	if len(w.anchors) == 0 {
		nFresh = 0
	}
	fresh, err := makeFreshMix(nFresh, w.anchors, len(ds.layers), opt.Seed)
	if err != nil {
		return nil, err
	}
	freshReqs, err := apiQueries(ds, fresh)
	if err != nil {
		return nil, err
	}
	nFreshKeys := 0
	if nFresh > 0 {
		nFreshKeys = freshKeysFor(nFresh) * len(opt.Clients)
	}
	_, restore := boundHeap(ds.features, opt.EngineMemory, opt.MemoryLimitSet, log)
	defer restore()
	var bs budgetStats
	if bs.ColdP50, bs.ColdMax, bs.ColdLoads, err = coldCost(ctx, ds.store, opt.EngineMemory, engineRequests(ds, qs)); err != nil {
		return nil, err
	}
	e, err := engine.New(ds.store, engine.Options{MemoryBudget: opt.EngineMemory})
	if err != nil {
		return nil, err
	}
	load, err := loadEngine(ctx, e, ds, opt.EngineMemory, log)
	if err != nil {
		return nil, err
	}
	if err := warmProperties(ctx, e, ds, &bs); err != nil {
		return nil, err
	}
	log.Info("bench: starting the API (durable ledger, accounts, server)")
	nw := min(warmupQueries, len(qs))
	nSeq := min(opt.Reads, sequentialReads)
	a, err := startAPI(ctx, dir, g, ds, e, nw+len(opt.Clients)*(len(qs)+len(small))+nFreshKeys, readAccounts(opt.Reads)+readAccounts(nSeq), opt.LedgerStatements, log)
	if err != nil {
		return nil, err
	}
	defer a.Close(ctx)
	watch.watchCluster("ledger PostgreSQL", filepath.Join(dir, "ledger", "data"))

	maxClients := 1
	for _, c := range opt.Clients {
		maxClients = max(maxClients, c)
	}
	pgSize := ds.features
	if opt.Scale == ScaleHeavy {
		pgSize = heavyPostGISFeatures
	}
	pg, err := startPostGIS(ctx, filepath.Join(dir, "pg"), pgSize, log)
	if err != nil {
		return nil, err
	}
	defer pg.Close(ctx)
	watch.watchCluster("PostGIS (PostgreSQL)", filepath.Join(dir, "pg", "data"))
	a.cpu = cpuMeter{ledger: filepath.Join(dir, "ledger", "data"), postgis: filepath.Join(dir, "pg", "data")}
	if err := pg.load(ctx, ds, 2); err != nil {
		return nil, err
	}
	if err := pg.openQueryConns(ctx, maxClients, append(append(slices.Clip(qs), small...), fresh...)); err != nil {
		return nil, err
	}
	if err := settle(ctx, log, a.cluster.DSN("siteenv"), pg.cluster.DSN("bench")); err != nil {
		return nil, err
	}

	r := &APIReport{Scale: opt.Scale, Seed: opt.Seed, CPUs: cpus(), Queries: len(qs), LineQueries: len(mix) - len(qs), Features: ds.features, Layers: len(ds.layers),
		Accounts: len(a.keys) + len(a.readKeys), QueryAccounts: len(a.keys), PassCount: len(opt.Clients), LedgerSettings: a.settings, PostGISVersion: pg.version,
		Workers: a.workers, Load: loadAvg()}
	run := runID()
	st := &clientStats{}
	log.Info("bench: warm-up", "queries", nw)
	if err := a.introduce(a.keys[:nw]); err != nil {
		return nil, err
	}
	if _, err := a.apiPass(ctx, reqs[:nw], a.keys, 1, run+"-warm", st, nil, nil); err != nil {
		return nil, fmt.Errorf("bench: API warm-up: %w", err)
	}
	if _, err := postgisPass(ctx, pg, ds, qs[:nw], 1, nil); err != nil {
		return nil, fmt.Errorf("bench: postgis warm-up: %w", err)
	}
	apiOut := make([][]outcome, len(qs))
	pgOut := make([][]outcome, len(qs))
	runs := make([]queryRun, len(qs))
	before := e.Stats()
	for k, c := range opt.Clients {
		log.Info("bench: API pass", "queries", len(qs), "clients", c)
		keys := a.keys[nw+k*len(qs) : nw+(k+1)*len(qs)]
		if err := a.introduce(keys); err != nil {
			return nil, err
		}
		a.timer.Reset() // after the keys' introductions: the phases are the pass's
		var ao, po [][]outcome
		var rs []queryRun
		if k == 0 {
			ao, po, rs = apiOut, pgOut, runs
			if opt.CPUProfile != nil {
				if err := pprof.StartCPUProfile(opt.CPUProfile); err != nil {
					return nil, fmt.Errorf("bench: cpu profile: %w", err)
				}
			}
			if opt.Trace != nil {
				if err := trace.Start(opt.Trace); err != nil {
					return nil, fmt.Errorf("bench: trace: %w", err)
				}
			}
		}
		before, err := a.ledgerCost(ctx)
		if err != nil {
			return nil, err
		}
		_, used0 := a.runner.PrecomputeCounts()
		first0 := a.runner.AnsweredFirst()
		heap0 := heapInUse()
		ap, err := a.apiPass(ctx, reqs, keys, c, run+"-"+strconv.Itoa(k), st, ao, rs)
		if k == 0 && opt.CPUProfile != nil {
			pprof.StopCPUProfile()
		}
		if k == 0 && opt.Trace != nil {
			trace.Stop()
		}
		if err != nil {
			return nil, fmt.Errorf("bench: API: %w", err)
		}
		phases := a.timer.Snapshot()
		create := summarize(a.timer.Requests("create_query"))
		_, used1 := a.runner.PrecomputeCounts()
		first1 := a.runner.AnsweredFirst()
		after, err := a.ledgerCost(ctx)
		if err != nil {
			return nil, err
		}
		heap1 := heapInUse()
		log.Info("bench: PostGIS pass", "queries", len(qs), "clients", c)
		pp, err := postgisPass(ctx, pg, ds, qs, c, po)
		if err != nil {
			return nil, fmt.Errorf("bench: postgis: %w", err)
		}
		pp.busy = true // queries/s as the API's

		r.Passes = append(r.Passes, apiPassReport{Clients: c, API: ap.summary(), PostGIS: pp.summary(), Phases: phases,
			Ledger: after.minus(before), CreateServer: create, Precomputed: used1 - used0, AnsweredFirst: first1 - first0,
			HeapBefore: heap0, HeapAfter: heap1})
		if k == 0 {
			r.apiLat, r.pgLat = ap.lat, pp.lat
		}
	}
	bs.Queries = len(qs) * len(opt.Clients)
	bs.addTraffic(before, e.Stats())
	r.Budget, r.EngineBudget, r.EngineNeed = bs, opt.EngineMemory, load.NeedBytes
	r.Requests, r.Pages, r.Polls, r.Throttled = st.requests.Load(), st.pages.Load(), st.polls.Load(), st.throttled.Load()
	r.RateLimited = st.limited.Load()
	r.Waited, r.WaitedQueries = time.Duration(st.waited.Load()), st.waitedQueries.Load()
	if r.Decode, err = measureDecode(st.mu.sample); err != nil {
		return nil, err
	}
	if r.Comparison, err = compare(ctx, e, pg, ds, qs, apiOut, pgOut); err != nil {
		return nil, err
	}
	if len(small) > 0 {
		r.SmallQueries = len(small)
		smallAPI, smallPG := make([][]outcome, len(small)), make([][]outcome, len(small))
		base := nw + len(opt.Clients)*len(qs)
		for k, c := range opt.Clients {
			log.Info("bench: API pass, small-query mix", "queries", len(small), "clients", c)
			keys := a.keys[base+k*len(small) : base+(k+1)*len(small)]
			if err := a.introduce(keys); err != nil {
				return nil, err
			}
			a.timer.Reset()
			var ao, po [][]outcome
			if k == 0 {
				ao, po = smallAPI, smallPG
			}
			before, err := a.ledgerCost(ctx)
			if err != nil {
				return nil, err
			}
			_, used0 := a.runner.PrecomputeCounts()
			first0 := a.runner.AnsweredFirst()
			heap0 := heapInUse()
			log0 := a.logSize()
			cpu0 := a.cpu.now()
			ap, err := a.apiPass(ctx, smallReqs, keys, c, run+"-small-"+strconv.Itoa(k), st, ao, nil)
			if err != nil {
				return nil, fmt.Errorf("bench: API, small-query mix: %w", err)
			}
			stmts, err := a.statementsSince(log0)
			if err != nil {
				return nil, err
			}
			phases := a.timer.Snapshot()
			create := summarize(a.timer.Requests("create_query"))
			_, used1 := a.runner.PrecomputeCounts()
			first1 := a.runner.AnsweredFirst()
			after, err := a.ledgerCost(ctx)
			if err != nil {
				return nil, err
			}
			heap1 := heapInUse()
			log.Info("bench: PostGIS pass, small-query mix", "queries", len(small), "clients", c)
			cpu1 := a.cpu.now()
			pp, err := postgisPass(ctx, pg, ds, small, c, po)
			if err != nil {
				return nil, fmt.Errorf("bench: postgis, small-query mix: %w", err)
			}
			cpu2 := a.cpu.now()
			pp.busy = true
			r.SmallPasses = append(r.SmallPasses, apiPassReport{Clients: c, API: ap.summary(), PostGIS: pp.summary(), Phases: phases,
				Ledger: after.minus(before), CreateServer: create, Precomputed: used1 - used0, AnsweredFirst: first1 - first0,
				HeapBefore: heap0, HeapAfter: heap1, APICPU: cpu1.minus(cpu0), PostGISCPU: cpu2.minus(cpu1), Statements: stmts})
		}
		if r.SmallComparison, err = compare(ctx, e, pg, ds, small, smallAPI, smallPG); err != nil {
			return nil, err
		}
	}
	if len(fresh) > 0 {
		log.Info("bench: API and PostGIS passes, fresh mix", "queries", len(fresh), "clients", opt.Clients)
		r.FreshQueries = len(fresh)
		base := nw + len(opt.Clients)*(len(qs)+len(small))
		if r.FreshPasses, r.FreshComparison, r.freshTSV, err = a.freshPasses(ctx, pg, ds, fresh, freshReqs, a.keys[base:base+nFreshKeys], opt.Clients, run, st, opt.FreshCPUProfile); err != nil {
			return nil, err
		}
	}
	if opt.Scale == ScaleHeavy {
		if r.Subdivided, err = runSubdivided(ctx, pg, ds, qs, 1, apiOut, log); err != nil {
			return nil, err
		}
	}
	if opt.Reads > 0 {
		log.Info("bench: read pass", "reads", opt.Reads, "clients", readClients)
		a.timer.Reset()
		rs := &clientStats{}
		if opt.ReadCPUProfile != nil {
			if err := pprof.StartCPUProfile(opt.ReadCPUProfile); err != nil {
				return nil, fmt.Errorf("bench: cpu profile: %w", err)
			}
		}
		p, err := a.readPass(ctx, opt.Reads, readClients, a.readKeys, rs)
		if opt.ReadCPUProfile != nil {
			pprof.StopCPUProfile()
		}
		if err != nil {
			return nil, fmt.Errorf("bench: reads: %w", err)
		}
		r.Reads = p.summary()
		r.ReadCount = opt.Reads
		r.ContextServer = summarize(a.timer.Requests("get_context"))
		r.LayersServer = summarize(a.timer.Requests("list_layers"))
		r.ReadPhases = a.timer.Snapshot()
		log.Info("bench: sequential reads", "reads", nSeq)
		a.timer.Reset()
		if _, err := a.readPass(ctx, nSeq, 1, a.readKeys[readAccounts(opt.Reads):], rs); err != nil {
			return nil, fmt.Errorf("bench: reads: %w", err)
		}
		r.SequentialReads = nSeq
		r.ContextServer1 = summarize(a.timer.Requests("get_context"))
		r.LayersServer1 = summarize(a.timer.Requests("list_layers"))
	}
	r.LoadAfter = loadAvg()
	r.ReportPath = filepath.Join(opt.OutDir, "api-report.txt")
	r.PlotPath = filepath.Join(opt.OutDir, "api-cdf.svg")
	r.QueriesPath = filepath.Join(opt.OutDir, "api-queries.tsv")
	if r.freshTSV != nil {
		r.FreshQueriesPath = filepath.Join(opt.OutDir, "api-fresh-queries.tsv")
	}
	r.queriesTSV = queriesTSV(qs, runs, r.pgLat)
	return r, nil
}

// write writes the report, the plot and the per-query table to their
// paths.
func (r *APIReport) write() error {
	if err := os.MkdirAll(filepath.Dir(r.ReportPath), 0o755); err != nil {
		return fmt.Errorf("bench: out dir: %w", err)
	}
	if r.FreshQueriesPath != "" {
		if err := os.WriteFile(r.FreshQueriesPath, r.freshTSV, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	if err := os.WriteFile(r.QueriesPath, r.queriesTSV, 0o644); err != nil {
		return fmt.Errorf("bench: per-query table: %w", err)
	}
	if err := os.WriteFile(r.PlotPath, cdfSVG(r, r.apiLat, r.pgLat), 0o644); err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	f, err := os.Create(r.ReportPath)
	if err != nil {
		return fmt.Errorf("bench: report: %w", err)
	}
	r.Print(f)
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: report: %w", err)
	}
	return nil
}

// queriesTSV is the first pass query by query (the slowest first), to see
// what the tail is made of: the query's shape, its features and pages, and
// both sides' latencies.
func queriesTSV(qs []query, runs []queryRun, pgLat []time.Duration) []byte {
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(runs[b].lat, runs[a].lat) })
	var b bytes.Buffer
	// The server columns are the query's own phases (1-client pass):
	// client_ms is what the server did not spend, the client's HTTP and
	// JSON decoding.
	b.WriteString("query\tkind\tlayers\tradius_m\tfeatures\tpages\tapi_ms\tfirst_page_ms\tpostgis_ms\tretry_after_wait_ms" +
		"\tserver_ms\tengine_ms\tresult_write_ms\tclient_ms\tledger_ms\tledger_round_trips\tauth_ms\twait_ms\tpage_read_ms\tjson_ms\n")
	for _, i := range order {
		pg := 0.0
		if i < len(pgLat) {
			pg = ms(pgLat[i])
		}
		var ph [phase.Total + 1]time.Duration
		var trips int64
		for _, s := range runs[i].server {
			if s.Phase <= phase.Total {
				ph[s.Phase] = s.Total
			}
			if s.Phase == phase.Ledger {
				trips = s.Count
			}
		}
		fmt.Fprintf(&b, "%d\t%s\t%d\t%g\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%.3f\t%.3f\t%.3f\t%.3f\n",
			i, qs[i].kind, len(qs[i].layers), qs[i].radius,
			runs[i].features, runs[i].pages, ms(runs[i].lat), ms(runs[i].first), pg, ms(runs[i].waited),
			ms(ph[phase.Total]), ms(ph[phase.Engine]), ms(ph[phase.ResultWrite]), ms(runs[i].lat-ph[phase.Total]),
			ms(ph[phase.Ledger]), trips, ms(ph[phase.Auth]), ms(ph[phase.Wait]), ms(ph[phase.PageRead]), ms(ph[phase.JSON]))
	}
	return b.Bytes()
}

// decodeFigures compare the clients' JSON decoder with encoding/json on
// the largest result page of the run.
type decodeFigures struct {
	Bytes, Features int
	Fast, Std       time.Duration // the fastest of decodeRounds each
}

const decodeRounds = 20

func measureDecode(body []byte) (decodeFigures, error) {
	var d decodeFigures
	if body == nil {
		return d, nil
	}
	d.Bytes = len(body)
	best := func(unmarshal func([]byte, any) error) (time.Duration, error) {
		m := time.Duration(math.MaxInt64)
		for range decodeRounds {
			var r queryResponse
			t := time.Now()
			if err := unmarshal(body, &r); err != nil {
				return 0, fmt.Errorf("bench: decode sample page: %w", err)
			}
			m = min(m, time.Since(t))
			d.Features = len(r.Features)
		}
		return m, nil
	}
	var err error
	if d.Fast, err = best(gojson.Unmarshal); err != nil {
		return d, err
	}
	d.Std, err = best(json.Unmarshal)
	return d, err
}

// summarize is the latency summary of sorted durations (no wall time).
func summarize(s []time.Duration) latency {
	p := pass{lat: s}
	return p.summary()
}

// loadAvg is /proc/loadavg's first three fields ("" elsewhere): the
// machine's load, reported with the figures it affects.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	var l1, l5, l15 string
	fmt.Sscan(string(b), &l1, &l5, &l15)
	return l1 + " " + l5 + " " + l15
}
