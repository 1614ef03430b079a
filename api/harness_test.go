package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/api"
	"siteenv/api/openapi/openapitest"
	"siteenv/clock"
	"siteenv/internal/leakcheck"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(leakcheck.Wrap(m)) }

// harness is a real server on a loopback port over a fresh database, with a
// fake clock, whose every response is validated against the OpenAPI document.
type harness struct {
	t      testing.TB
	ctx    context.Context
	led    *ledger.Ledger
	clock  *clock.Fake
	srv    *api.Server
	base   string
	client *http.Client
	v      *openapitest.Validator
}

func setup(t testing.TB, configure ...func(*api.Server)) *harness {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	return setupOn(t, clk, ledgertest.New(t, clk), nil, configure...)
}

// setupOn serves a harness over led, with the Config adjusted by edit (nil:
// the defaults) and the Server by configure.
func setupOn(t testing.TB, clk *clock.Fake, led *ledger.Ledger, edit func(*api.Config), configure ...func(*api.Server)) *harness {
	t.Helper()
	// Errors only: an access-log line per request would bury a failure's
	// output (tests of the log install their own logger).
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg := api.Config{Secret: bytes.Repeat([]byte("s"), 32), Clock: clk, IdempotencyWait: 20 * time.Second, Logger: quiet}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := api.New(cfg, led)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range configure {
		c(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go hs.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = hs.Shutdown() })
	return &harness{
		t: t, ctx: context.Background(), led: led, clock: clk, srv: srv,
		base:   "http://" + ln.Addr().String() + api.BasePath,
		client: &http.Client{Timeout: 30 * time.Second},
		v:      openapitest.New(t),
	}
}

// fieldsNamed lists the field of every field error of a Problem.
func fieldsNamed(m map[string]any) []string {
	var out []string
	for _, fe := range m["field_errors"].([]any) {
		out = append(out, fe.(map[string]any)["field"].(string))
	}
	return out
}

// account creates an account with credits.
func (h *harness) account(credits int64) uuid.UUID {
	h.t.Helper()
	a, err := h.led.CreateAccount(h.ctx, "Test account", credits)
	if err != nil {
		h.t.Fatal(err)
	}
	return a.ID
}

// key creates a key on account with scopes (nil datasets: all).
func (h *harness) key(account uuid.UUID, datasets []string, scopes ...string) ledger.NewKey {
	h.t.Helper()
	k, err := h.led.CreateKey(h.ctx, ledger.KeyParams{Account: account, Scopes: scopes, Datasets: datasets})
	if err != nil {
		h.t.Fatal(err)
	}
	return k
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic map.
func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// problem asserts a Problem with the code and returns it.
func (r response) problem(t testing.TB, code string, status int) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	m := r.json(t)
	if m["code"] != code {
		t.Fatalf("code %v, want %s: %s", m["code"], code, r.body)
	}
	return m
}

// do sends a request and validates the response against the OpenAPI document.
func (h *harness) do(method, path, key string, body any, headers ...string) response {
	h.t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case []byte:
		rd, ctype = bytes.NewReader(b), "application/json"
	case string:
		rd, ctype = strings.NewReader(b), "application/json"
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd, ctype = bytes.NewReader(enc), "application/json"
	}
	req, err := http.NewRequestWithContext(h.ctx, method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	b := h.v.CheckResponse(h.t, resp)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}
