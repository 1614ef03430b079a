package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"siteenv/api/openapi"
	"siteenv/store"
)

// Metrics holds the service's Prometheus collectors, created once. The
// per-request path touches only atomics: each operation's counter and
// histogram children are resolved on first use and cached, and everything
// read from the engine, the ledger and its pool is collected at scrape time.
// Safe for concurrent use.
type Metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	inFlight    prometheus.GaugeFunc
	rateLimited *prometheus.CounterVec
	attempts    *prometheus.HistogramVec
	storeRead   prometheus.Counter
	storeOpens  prometheus.Counter
	// ops caches the children per operation; built once, read-only after.
	ops map[string]*opMetrics
	// server is the Server whose engine and ledger are collected at scrape.
	server atomic.Pointer[Server]
}

// opMetrics caches one operation's children per status class (index
// status/100; 0 for anything outside 1xx..5xx).
type opMetrics struct {
	name  string
	slots [6]atomic.Pointer[opSlot]
}

type opSlot struct {
	count prometheus.Counter
	dur   prometheus.Observer
}

var statusClasses = [6]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

// Operation labels of requests outside the OpenAPI operations.
const (
	opUnmatched = "unmatched"
	opHealthz   = "healthz"
	opReadyz    = "readyz"
)

// NewMetrics makes the collectors. One Metrics serves one Server (Config.Metrics);
// its store wrapper and job observer may be wired before the Server exists.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siteenv_http_requests_total",
			Help: "HTTP requests answered, by OpenAPI operation id and status class.",
		}, []string{"operation", "status_class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "siteenv_http_request_duration_seconds",
			Help:    "Time from the request reaching the handler to the response being ready, by operation and status class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation", "status_class"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siteenv_rate_limited_total",
			Help: "Requests refused with rate_limited, by limit (reads, query_admissions).",
		}, []string{"bucket"}),
		attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "siteenv_query_attempt_duration_seconds",
			Help:    "Duration of query attempts run by this process, by outcome (finished, error, timeout, cancelled, requeued).",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"outcome"}),
		storeRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siteenv_store_read_bytes_total",
			Help: "Bytes read from the object store (release tiles, manifests, retained results).",
		}),
		storeOpens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siteenv_store_opens_total",
			Help: "Objects opened in the object store.",
		}),
		ops: map[string]*opMetrics{},
	}
	// The server's own count (Server.inFlight, which the answer-first wait
	// reads), read at scrape time.
	m.inFlight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "siteenv_http_requests_in_flight",
		Help: "Requests being handled now.",
	}, func() float64 {
		if s := m.server.Load(); s != nil {
			return float64(s.inFlight.Load())
		}
		return 0
	})
	m.reg.MustRegister(m.requests, m.latency, m.inFlight, m.rateLimited, m.attempts, m.storeRead, m.storeOpens,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		scrapeCollector{m})
	names := []string{opUnmatched, opHealthz, opReadyz}
	if ops, err := openapi.Operations(); err == nil {
		for _, op := range ops {
			names = append(names, op.ID)
		}
	}
	for _, n := range names {
		m.ops[n] = &opMetrics{name: n}
	}
	return m
}

// attach binds m to the Server whose engine and ledger it collects.
func (m *Metrics) attach(s *Server) error {
	if !m.server.CompareAndSwap(nil, s) {
		return fmt.Errorf("api: Config.Metrics already serves another Server")
	}
	return nil
}

// observeRequest counts one answered request.
func (m *Metrics) observeRequest(op string, status int, d time.Duration) {
	om := m.ops[op]
	if om == nil {
		om = m.ops[opUnmatched]
	}
	c := status / 100
	if c < 1 || c > 5 {
		c = 0
	}
	sl := om.slots[c].Load()
	if sl == nil {
		// Racing first uses resolve the same children.
		sl = &opSlot{count: m.requests.WithLabelValues(om.name, statusClasses[c]), dur: m.latency.WithLabelValues(om.name, statusClasses[c])}
		om.slots[c].Store(sl)
	}
	sl.count.Inc()
	sl.dur.Observe(d.Seconds())
}

// ObserveAttempt records one query attempt (jobs.Config.ObserveAttempt).
func (m *Metrics) ObserveAttempt(outcome string, d time.Duration) {
	m.attempts.WithLabelValues(outcome).Observe(d.Seconds())
}

// Handler serves the registry in the Prometheus text format. It belongs on
// its own listener (siteenv serve --metrics-addr), never the API's.
func (m *Metrics) Handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      promLogger{log},
		Timeout:       10 * time.Second,
	})
}

type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) { l.log.Warn(fmt.Sprint(v...), "component", "metrics") }

// Metrics returns the server's collectors.
func (s *Server) Metrics() *Metrics { return s.metrics }

// WrapStore counts the bytes read through st (siteenv_store_read_bytes_total).
// The wrapper forwards store.Check, so readiness probes see the real store.
// A store that writes in place (store.Creator: the file store) stays one,
// and one that keeps recomputable objects without an fsync
// (store.VolatilePutter) too, so the runner writes results under serve as
// in bench api: wrapped without PutVolatile, serve wrote every result
// behind its answer with an fsync, through the recent-object cache.
func (m *Metrics) WrapStore(st store.Store) store.Store {
	c := countingStore{Store: st, m: m}
	cr, isCreator := st.(store.Creator)
	vp, isVolatile := st.(store.VolatilePutter)
	switch {
	case isCreator && isVolatile:
		return countingFileStore{countingCreator: countingCreator{countingStore: c, cr: cr}, vp: vp}
	case isCreator:
		return countingCreator{countingStore: c, cr: cr}
	case isVolatile:
		return countingVolatile{countingStore: c, vp: vp}
	}
	return c
}

// countingFileStore is a countingCreator over a store.VolatilePutter too.
type countingFileStore struct {
	countingCreator
	vp store.VolatilePutter
}

func (c countingFileStore) PutVolatile(ctx context.Context, key string, data []byte) error {
	return c.vp.PutVolatile(ctx, key, data)
}

// countingVolatile is a countingStore over a store.VolatilePutter.
type countingVolatile struct {
	countingStore
	vp store.VolatilePutter
}

func (c countingVolatile) PutVolatile(ctx context.Context, key string, data []byte) error {
	return c.vp.PutVolatile(ctx, key, data)
}

// countingCreator is a countingStore over a store.Creator.
type countingCreator struct {
	countingStore
	cr store.Creator
}

func (c countingCreator) Create(ctx context.Context, key string) (store.Writer, error) {
	return c.cr.Create(ctx, key)
}

type countingStore struct {
	store.Store
	m *Metrics
}

func (c countingStore) Open(ctx context.Context, key string) (store.Object, error) {
	o, err := c.Store.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	c.m.storeOpens.Inc()
	return countingObject{Object: o, n: c.m.storeRead}, nil
}

func (c countingStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	rc, err := c.Store.GetRange(ctx, key, off, length)
	if err != nil {
		return nil, err
	}
	c.m.storeOpens.Inc()
	return countingReader{ReadCloser: rc, n: c.m.storeRead}, nil
}

func (c countingStore) Check(ctx context.Context) error { return store.Check(ctx, c.Store) }

type countingReader struct {
	io.ReadCloser
	n prometheus.Counter
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.n.Add(float64(n))
	}
	return n, err
}

type countingObject struct {
	store.Object
	n prometheus.Counter
}

func (o countingObject) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.Object.ReadAt(p, off)
	if n > 0 {
		o.n.Add(float64(n))
	}
	return n, err
}

// scrapeTimeout bounds the ledger reads of one scrape.
const scrapeTimeout = 2 * time.Second

// scrapeCollector reads the engine, the connection pool and the query queue
// when scraped: nothing on the request path.
type scrapeCollector struct{ m *Metrics }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descShards         = desc("siteenv_engine_shards", "Engine shards loaded in memory.")
	descShardBytes     = desc("siteenv_engine_shard_cache_bytes", "Bytes held by loaded engine shards (columns and indexes).")
	descShardHits      = desc("siteenv_engine_shard_cache_hits_total", "Shard acquisitions that found the shard loaded or loading.")
	descShardLoads     = desc("siteenv_engine_shard_loads_total", "Shard loads completed.")
	descShardLoadErrs  = desc("siteenv_engine_shard_load_errors_total", "Shard loads that failed.")
	descShardLoadSecs  = desc("siteenv_engine_shard_load_seconds_total", "Time spent loading shards.")
	descShardEvictions = desc("siteenv_engine_shard_evictions_total", "Shards evicted to stay within the memory budget.")

	descPoolConns    = desc("siteenv_db_pool_connections", "Database pool connections by state (idle, acquired, constructing) and the total.", "state")
	descPoolMax      = desc("siteenv_db_pool_max_connections", "Database pool size limit.")
	descPoolAcquires = desc("siteenv_db_pool_acquires_total", "Connections acquired from the pool.")
	descPoolEmpty    = desc("siteenv_db_pool_empty_acquires_total", "Acquires that waited because the pool had no idle connection.")
	descPoolCanceled = desc("siteenv_db_pool_canceled_acquires_total", "Acquires cancelled by their context.")
	descPoolNew      = desc("siteenv_db_pool_new_connections_total", "Connections opened.")
	descPoolAcqSecs  = desc("siteenv_db_pool_acquire_seconds_total", "Time spent acquiring connections.")
	descPoolWaitSecs = desc("siteenv_db_pool_empty_acquire_wait_seconds_total", "Time acquires spent waiting for a connection.")

	descQueries     = desc("siteenv_queries", "Queries queued or running across every replica.", "status")
	descQueueOldest = desc("siteenv_query_queue_oldest_seconds", "Age of the longest-waiting queued query (0 when none).")
	descLedgerUp    = desc("siteenv_ledger_up", "1 when the scrape could read the query queue from the database, else 0.")
)

func (c scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descShards, descShardBytes, descShardHits, descShardLoads, descShardLoadErrs,
		descShardLoadSecs, descShardEvictions, descPoolConns, descPoolMax, descPoolAcquires, descPoolEmpty, descPoolCanceled,
		descPoolNew, descPoolAcqSecs, descPoolWaitSecs, descQueries, descQueueOldest, descLedgerUp} {
		ch <- d
	}
}

func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.server.Load()
	if s == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	if eng := s.engine; eng != nil {
		st := eng.Stats()
		gauge(descShards, float64(st.Shards))
		gauge(descShardBytes, float64(st.ResidentBytes))
		counter(descShardHits, float64(st.Hits))
		counter(descShardLoads, float64(st.Loads))
		counter(descShardLoadErrs, float64(st.LoadErrors))
		counter(descShardLoadSecs, st.LoadSeconds)
		counter(descShardEvictions, float64(st.Evictions))
	}
	ps := s.led.PoolStats()
	gauge(descPoolConns, float64(ps.IdleConns), "idle")
	gauge(descPoolConns, float64(ps.AcquiredConns), "acquired")
	gauge(descPoolConns, float64(ps.ConstructingConns), "constructing")
	gauge(descPoolConns, float64(ps.TotalConns), "total")
	gauge(descPoolMax, float64(ps.MaxConns))
	counter(descPoolAcquires, float64(ps.AcquireCount))
	counter(descPoolEmpty, float64(ps.EmptyAcquireCount))
	counter(descPoolCanceled, float64(ps.CanceledAcquireCount))
	counter(descPoolNew, float64(ps.NewConnsCount))
	counter(descPoolAcqSecs, ps.AcquireDuration.Seconds())
	counter(descPoolWaitSecs, ps.EmptyAcquireWaitTime.Seconds())

	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	qs, err := s.led.QueueStats(ctx)
	if err != nil {
		s.log.Warn("metrics: reading the query queue", "err", err)
		gauge(descLedgerUp, 0)
		return
	}
	gauge(descLedgerUp, 1)
	gauge(descQueries, float64(qs.Queued), "queued")
	gauge(descQueries, float64(qs.Running), "running")
	gauge(descQueueOldest, qs.OldestQueued.Seconds())
}
