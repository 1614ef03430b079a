package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/valyala/fasthttp"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/ingest/synth"
	"siteenv/jobs"
	storepkg "siteenv/store"
)

func serve(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	dataDir := dataDirFlag(fs, set)
	demo := fs.Bool("demo", false, "on first start, load the small synthetic demo dataset and create a demo account and key (kept in <data-dir>/demo-key)")
	metricsAddr := fs.String("metrics-addr", set.MetricsAddr, "serve Prometheus metrics at http://ADDR/metrics on this separate listener (default $SITEENV_METRICS_ADDR; empty: off); loopback only unless --metrics-public")
	metricsPublic := fs.Bool("metrics-public", set.MetricsPublic, "allow --metrics-addr on a non-loopback address (default $SITEENV_METRICS_PUBLIC=1)")
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
	log := set.logger(stderr)
	e, err := openEnv(ctx, set, *dataDir, log)
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
	if fst, ok := store.(*storepkg.FileStore); ok {
		fst.KeepRecent(set.StoreRecent)
	}
	metrics := api.NewMetrics()
	store = metrics.WrapStore(store)
	eng, err := engine.New(store, engine.Options{MemoryBudget: set.EngineMemory, Logger: log})
	if err != nil {
		return err
	}
	// Warm the engine in the background (within its budget) while the
	// server starts; stopped before the ledger closes.
	wctx, stopWarm := context.WithCancel(ctx)
	warmed := make(chan struct{})
	go func() { defer close(warmed); warmEngine(wctx, eng, e.led, log) }()
	defer func() { stopWarm(); <-warmed }()
	bm, bmClose, err := openBasemap(ctx, set, store, log)
	if err != nil {
		return err
	}
	defer bmClose.Close()
	jobsCfg := set.Jobs
	jobsCfg.Basemap = bm
	jobsCfg.Logger = log
	jobsCfg.ObserveAttempt = metrics.ObserveAttempt
	runner, err := jobs.New(jobsCfg, e.led, eng, store)
	if err != nil {
		return err
	}
	srv, err := api.New(api.Config{Secret: secret, Logger: log, Store: store, Runner: runner, Engine: eng, Metrics: metrics, Basemap: bm}, e.led)
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
