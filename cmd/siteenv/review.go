package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/paulmach/orb"

	"siteenv/report"
	"siteenv/review"
)

// reviewCmd serves the review pages of staged releases on a loopback
// address until interrupted.
func reviewCmd(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("review", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	addr := fs.String("addr", "127.0.0.1:8090", "address to serve the review pages on (loopback only: promote and discard act on the catalogue)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageError{"--addr: " + err.Error()}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError{"--addr must be a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT)"}
	}
	log := set.logger(stderr)
	e, err := openEnv(ctx, set, *dataDir, log)
	if err != nil {
		return err
	}
	defer e.close()
	st, err := e.openStore(ctx)
	if err != nil {
		return err
	}
	// The basemap serve draws under its maps (SITEENV_BASEMAP, else the
	// store's), drawn under the review map; without one the page says so.
	bm, bmClose, err := openBasemap(ctx, set, st, e.log)
	if err != nil {
		return err
	}
	defer bmClose.Close()
	opt := review.Options{Ledger: e.led, Store: st, Actor: actor("siteenv review"), Log: log}
	if bm != nil {
		opt.Basemap = func(_ context.Context, b orb.Bound, w, h int) ([]byte, error) { return report.BasemapPNG(bm, b, w, h) }
		opt.BasemapAttribution = bm.Attribution()
	}
	srv, err := review.New(opt)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "reviewing staged releases at http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
