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

	"siteenv/api"
	"siteenv/ledger"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	dataDir := dataDirFlag(fs)
	demo := fs.Bool("demo", false, "on first start, create a demo account and key (written to <data-dir>/demo-key)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	log := newLogger(stderr)
	e, err := openEnv(ctx, *dataDir, log)
	if err != nil {
		return err
	}
	defer e.close()
	secret, err := e.secret()
	if err != nil {
		return err
	}
	if *demo {
		if err := ensureDemo(ctx, e, stdout); err != nil {
			return err
		}
	}
	srv, err := api.New(api.Config{Secret: secret, Logger: log}, e.led)
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

// ensureDemo creates, on first start only, a demo account with credits and an
// all-scopes key, shown once on stdout and kept in <data-dir>/demo-key (0600).
func ensureDemo(ctx context.Context, e *env, stdout io.Writer) error {
	path := filepath.Join(e.dataDir, "demo-key")
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	acct, err := e.led.CreateAccount(ctx, "Demo account", 1000)
	if err != nil {
		return err
	}
	k, err := e.led.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(k.Secret+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "demo account %s with 1000 credits; its all-scopes key is in %s\n", acct.ID, path)
	return nil
}
