package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/ingest/synth"
	"siteenv/jobs"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	dataDir := dataDirFlag(fs)
	demo := fs.Bool("demo", false, "on first start, load the small synthetic demo dataset and create a demo account and key (kept in <data-dir>/demo-key)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
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
	mem, err := engineMemory()
	if err != nil {
		return err
	}
	engOpt := engine.Options{MemoryBudget: mem, Logger: log}
	if err := engOpt.Validate(); err != nil {
		return err
	}
	eng := engine.New(store, engOpt)
	jobsCfg, err := queryTimings()
	if err != nil {
		return err
	}
	jobsCfg.Logger = log
	if err := jobsCfg.Validate(); err != nil {
		return err
	}
	runner := jobs.New(jobsCfg, e.led, eng, store)
	srv, err := api.New(api.Config{Secret: secret, Logger: log, Store: store, Runner: runner, Engine: eng}, e.led)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
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
	return errors.Join(serveErr, shutdown(hs, runner, log))
}

// Shutdown budgets: requests in flight (a POST /queries waits at most 3 s)
// and then query attempts in flight get this long to finish; attempts still
// running after that are requeued for another replica or the next start.
const (
	httpDrain = 10 * time.Second
	jobsDrain = 15 * time.Second
)

// shutdown stops in order: stop accepting and finish in-flight HTTP
// requests, then drain the runner (stop claiming, finish or requeue
// attempts). The caller closes the ledger and the embedded database after
// it, so no worker ever sees the pool close under it.
func shutdown(hs *fasthttp.Server, runner *jobs.Runner, log *slog.Logger) error {
	hctx, cancel := context.WithTimeout(context.Background(), httpDrain)
	defer cancel()
	herr := hs.ShutdownWithContext(hctx)
	if herr != nil {
		log.Warn("HTTP requests still open at shutdown", "err", herr)
	}
	jctx, cancel := context.WithTimeout(context.Background(), jobsDrain)
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

// ensureDemo loads the small demo dataset and key on first start only.
func ensureDemo(ctx context.Context, e *env, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(e.dataDir, "demo-key")); err == nil {
		return nil
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
func engineMemory() (int64, error) {
	v := strings.TrimSpace(os.Getenv("SITEENV_ENGINE_MEMORY"))
	if v == "" {
		return 0, nil
	}
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(v, suffix) {
			v, mult = strings.TrimSuffix(v, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("SITEENV_ENGINE_MEMORY must be bytes or a number with KiB, MiB or GiB, e.g. 2GiB")
	}
	return n * mult, nil
}

// queryTimings reads SITEENV_QUERY_ATTEMPT (how long one execution of a query
// may hold its claim before another replica requeues it; default 120s) and
// SITEENV_QUERY_SWEEP (how often each replica looks for expired attempts;
// default 30s), as Go durations such as 90s or 2m. Operators lower them to
// recover a crashed replica's queries sooner; the cluster tests use seconds.
func queryTimings() (jobs.Config, error) {
	var cfg jobs.Config
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{"SITEENV_QUERY_ATTEMPT", &cfg.Attempt}, {"SITEENV_QUERY_SWEEP", &cfg.Sweep}} {
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
