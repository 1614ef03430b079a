package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	eng := engine.New(store, engine.Options{MemoryBudget: mem})
	runner := jobs.New(jobs.Config{Logger: log}, e.led, eng, store)
	runner.Start(ctx)
	srv, err := api.New(api.Config{Secret: secret, Logger: log, Store: store, Runner: runner}, e.led)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := srv.HTTPServer()
	log.Info("serving", "addr", "http://"+ln.Addr().String()+api.BasePath, "data_dir", e.dataDir)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	return hs.Shutdown()
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
