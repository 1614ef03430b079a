package api_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"siteenv/api"
	"siteenv/clock"
	"siteenv/ledger/ledgertest"
)

// BenchmarkAuthenticatedRead drives GET /context and GET /layers through
// the real server (fasthttp over an in-memory listener) on a real ledger:
// key lookup, read limit, handler reads, JSON and the audit record, as
// `siteenv bench api`'s read pass does, without the TCP stack. The fake
// clock moves a minute every 100 reads so the read limit never refuses.
// Run with -cpuprofile to see where a read's time goes.
func BenchmarkAuthenticatedRead(b *testing.B) {
	for _, path := range []string{"/context", "/layers"} {
		b.Run(path[1:], func(b *testing.B) {
			clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
			led := ledgertest.New(b, clk)
			// The access log is formatted as in production, then discarded.
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			srv, err := api.New(api.Config{Secret: bytes.Repeat([]byte("s"), 32), Clock: clk, Logger: logger}, led)
			if err != nil {
				b.Fatal(err)
			}
			h := &harness{t: b, ctx: b.Context(), led: led, clock: clk}
			k := h.key(h.account(0), nil, "usage:read", "layers:read")
			ln := fasthttputil.NewInmemoryListener()
			hs := srv.HTTPServer()
			go hs.Serve(ln) //nolint:errcheck
			c := &fasthttp.HostClient{Addr: "bench", Dial: func(string) (net.Conn, error) { return ln.Dial() }, MaxConns: 64,
				MaxIdleConnDuration: 100 * time.Millisecond} // so its cleaner exits soon after the run
			defer func() {
				c.CloseIdleConnections()
				_ = hs.Shutdown()
			}()
			var n atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI("http://bench" + api.BasePath + path)
				req.Header.Set("Authorization", "Bearer "+k.Secret)
				for pb.Next() {
					if n.Add(1)%100 == 0 {
						clk.Advance(time.Minute)
					}
					if err := c.Do(req, resp); err != nil {
						b.Fatal(err)
					}
					if resp.StatusCode() != 200 {
						b.Fatalf("%d %s", resp.StatusCode(), resp.Body())
					}
				}
			})
		})
	}
}
