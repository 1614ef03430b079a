package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/ingest"
	"siteenv/ingest/synth"
	"siteenv/jobs"
	storepkg "siteenv/store"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	dataDir := dataDirFlag(fs)
	demo := fs.Bool("demo", false, "on first start, load the small synthetic demo dataset and create a demo account and key (kept in <data-dir>/demo-key)")
	metricsAddr := fs.String("metrics-addr", os.Getenv("SITEENV_METRICS_ADDR"), "serve Prometheus metrics at http://ADDR/metrics on this separate listener (default $SITEENV_METRICS_ADDR; empty: off); loopback only unless --metrics-public")
	metricsPublic := fs.Bool("metrics-public", os.Getenv("SITEENV_METRICS_PUBLIC") == "1", "allow --metrics-addr on a non-loopback address (default $SITEENV_METRICS_PUBLIC=1)")
	drain := fs.Duration("shutdown-timeout", defaultDrain, "on SIGTERM, how long in-flight requests and query attempts get to finish; attempts still running then are requeued")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *drain <= 0 {
		return usageError{"--shutdown-timeout must be positive"}
	}
	if *metricsAddr != "" && !*metricsPublic {
		if err := loopbackOnly(*metricsAddr); err != nil {
			return usageError{err.Error()}
		}
	}
	log := newLogger(stderr)
	e, err := openEnv(ctx, *dataDir, log)
	if err != nil {
		return err
	}
	defer e.close()
	if e.cluster != nil {
		// The embedded database is ours to keep running: restart it if it
		// dies under the server (env.close ends the supervisor first).
		e.cluster.Supervise(ctx)
	}
	secret, err := e.secret()
	if err != nil {
		return err
	}
	if *demo {
		if err := ensureDemo(ctx, e, stdout); err != nil {
			return err
		}
	}
	store, err := e.openStore(ctx)
	if err != nil {
		return err
	}
	recent, err := storeRecent()
	if err != nil {
		return err
	}
	if fst, ok := store.(*storepkg.FileStore); ok {
		fst.KeepRecent(recent)
	}
	metrics := api.NewMetrics()
	store = metrics.WrapStore(store)
	mem, err := engineMemory()
	if err != nil {
		return err
	}
	engOpt := engine.Options{MemoryBudget: mem, Logger: log}
	if err := engOpt.Validate(); err != nil {
		return err
	}
	eng := engine.New(store, engOpt)
	wctx, stopWarm := context.WithCancel(ctx)
	warmed := make(chan struct{})
	go func() { defer close(warmed); warmEngine(wctx, eng, e.led, log) }()
	defer func() { stopWarm(); <-warmed }() // before the ledger closes
	jobsCfg, err := queryTimings()
	if err != nil {
		return err
	}
	jobsCfg.Logger = log
	jobsCfg.ObserveAttempt = metrics.ObserveAttempt
	if err := jobsCfg.Validate(); err != nil {
		return err
	}
	runner := jobs.New(jobsCfg, e.led, eng, store)
	srv, err := api.New(api.Config{Secret: secret, Logger: log, Store: store, Runner: runner, Engine: eng, Metrics: metrics}, e.led)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	var ms *http.Server
	if *metricsAddr != "" {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics.Handler(log))
		ms = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
		log.Info("serving metrics", "addr", "http://"+mln.Addr().String()+"/metrics")
		go func() {
			if err := ms.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics listener", "err", err)
			}
		}()
	}
	// Claiming goes on while in-flight requests drain (a POST /queries
	// waiting for its result needs a worker); shutdown's Stop ends it.
	runner.Start(context.WithoutCancel(ctx))
	hs := srv.HTTPServer()
	log.Info("serving", "addr", "http://"+ln.Addr().String()+api.BasePath, "data_dir", e.dataDir)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
		log.Info("shutting down")
	}
	err = errors.Join(serveErr, shutdown(hs, runner, *drain, log))
	if ms != nil {
		_ = ms.Close() // scrapes are short; nothing to drain
	}
	return err
}

// defaultDrain is --shutdown-timeout's default: room for requests in flight
// (a POST /queries waits at most 3 s) and the query attempts in flight.
const defaultDrain = 25 * time.Second

// minJobsDrain is what the runner gets even when the HTTP drain used the
// whole deadline: time to hand interrupted attempts back to the queue.
const minJobsDrain = time.Second

// shutdown stops in order, within drain: stop accepting and finish in-flight
// HTTP requests, then drain the runner with what remains (stop claiming,
// finish attempts, requeue those still running at the deadline). The caller
// closes the ledger and the embedded database after it, so no worker ever
// sees the pool close under it.
func shutdown(hs *fasthttp.Server, runner *jobs.Runner, drain time.Duration, log *slog.Logger) error {
	deadline := time.Now().Add(drain)
	hctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	herr := hs.ShutdownWithContext(hctx)
	if herr != nil {
		log.Warn("HTTP requests still open at shutdown", "err", herr)
	}
	jctx, cancel := context.WithTimeout(context.Background(), max(time.Until(deadline), minJobsDrain))
	defer cancel()
	jerr := runner.Stop(jctx)
	if jerr != nil {
		log.Error("stopping the query runner", "err", jerr)
	}
	if errors.Is(herr, context.DeadlineExceeded) {
		herr = nil // reported above; the connections are closed regardless
	}
	return errors.Join(herr, jerr)
}

// loopbackOnly refuses a metrics address that is not on a loopback
// interface: metrics name operations and volumes, and must not be public by
// accident.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr (or SITEENV_METRICS_ADDR) %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--metrics-addr (or SITEENV_METRICS_ADDR) %q is not a loopback address: metrics stay private unless --metrics-public (or SITEENV_METRICS_PUBLIC=1) says otherwise", addr)
}

// ensureDemo loads the small demo dataset and key on first start only (a
// demo loaded before reports were priced gets the demo's report price).
func ensureDemo(ctx context.Context, e *env, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(e.dataDir, "demo-key")); err == nil {
		return ensureReportPrice(ctx, e.led)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	res, err := loadDemo(ctx, e, synth.Small, demoSeed, stdout)
	if err != nil {
		return fmt.Errorf("demo data: %w", err)
	}
	fmt.Fprintf(stdout, "demo: %d layers, %d features, %d addresses in %.1fs; account %s; its all-scopes key is in %s\n",
		res.Layers, res.Features, res.Addresses, res.ElapsedS, res.AccountID, res.KeyFile)
	return nil
}

// engineMemory reads SITEENV_ENGINE_MEMORY: bytes, or a number with KiB,
// MiB or GiB; unset means the engine's default.
func engineMemory() (int64, error) { return byteSize("SITEENV_ENGINE_MEMORY", false, 0) }

// ingestMemory reads SITEENV_INGEST_MEMORY: the bytes of features `ingest`
// (and each of `demo`'s two concurrent ingests, half each) buffers before
// spilling them to disk; unset means ingest.DefaultMemoryBudget.
func ingestMemory() (int64, error) {
	return byteSize("SITEENV_INGEST_MEMORY", false, ingest.DefaultMemoryBudget)
}

// storeRecent reads SITEENV_STORE_RECENT: how many bytes of the objects a
// file store wrote last it keeps in memory for reads (store.KeepRecent;
// 0 turns that off, and with it the writes past the page cache).
func storeRecent() (int64, error) {
	return byteSize("SITEENV_STORE_RECENT", true, storepkg.DefaultRecentBytes)
}

// byteSize reads the environment variable name: bytes, or a number with
// KiB, MiB or GiB; unset means def.
func byteSize(name string, zeroOK bool, def int64) (int64, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return def, nil
	}
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(v, suffix) {
			v, mult = strings.TrimSuffix(v, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || (n == 0 && !zeroOK) || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%s must be bytes or a number with KiB, MiB or GiB, e.g. 2GiB", name)
	}
	return n * mult, nil
}

// queryTimings reads SITEENV_QUERY_ATTEMPT (how long one execution of a query
// may hold its claim before another replica requeues it; default 120s) and
// SITEENV_QUERY_SWEEP (how often each replica looks for expired attempts;
// default 30s), and SITEENV_REPORT_ATTEMPT (the same claim for a report
// build; default 10m), as Go durations such as 90s or 2m. Operators lower them to
// recover a crashed replica's queries sooner; the cluster tests use seconds.
// SITEENV_JOB_LEASE (default 5s) is how long a claim outlives its owner's
// last renewal: a killed replica's queries and report builds are requeued
// within about 1.5 leases, whatever the attempt limits.
func queryTimings() (jobs.Config, error) {
	var cfg jobs.Config
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{"SITEENV_QUERY_ATTEMPT", &cfg.Attempt}, {"SITEENV_REPORT_ATTEMPT", &cfg.ReportAttempt},
		{"SITEENV_QUERY_SWEEP", &cfg.Sweep}, {"SITEENV_JOB_LEASE", &cfg.Lease}} {
		s := strings.TrimSpace(os.Getenv(v.name))
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > 24*time.Hour {
			return jobs.Config{}, fmt.Errorf("%s must be a duration from 1s to 24h, e.g. 90s or 2m, got %q", v.name, s)
		}
		*v.dst = d
	}
	return cfg, cfg.Validate()
}
