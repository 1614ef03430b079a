package faultsuite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/api/openapi/openapitest"
	"siteenv/internal/syncbuf"
	"siteenv/ledger"
	"siteenv/ledger/pgembed"
)

var (
	// binPath is the siteenv binary TestMain builds once.
	binPath string
	// sharedPGDir holds the throwaway cluster most tests create databases in.
	sharedPGDir string
	// root is the suite's scratch directory (reachable by the postgres user).
	root string

	seedFlag = flag.Uint64("faultsuite.seed", 20261123, "seed of the fuzz pass (printed; pass it back to replay a run)")
	dbSeq    atomic.Int64
)

// testSecret is SITEENV_SECRET for every server of the suite.
const testSecret = "faultsuite-secret-0123456789abcdefghijklmnop"

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	root, err = os.MkdirTemp("", "siteenv-faultsuite-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	// The embedded clusters run as the postgres user when we are root: it
	// must be able to traverse the scratch directory.
	if err := os.Chmod(root, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binPath = filepath.Join(root, "siteenv")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.Command(goTool, "build", "-o", binPath, "siteenv/cmd/siteenv")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "faultsuite: go build: %v\n%s", err, out)
		return 1
	}
	sharedPGDir = filepath.Join(root, "pg")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := pgembed.Start(ctx, sharedPGDir, pgembed.Options{Database: "postgres", Ephemeral: true, Logger: quietLogger()})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultsuite:", err)
		return 1
	}
	defer func() { _ = c.Stop(context.Background()) }()
	return m.Run()
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newDatabase creates a fresh database in the shared cluster and returns its
// DSN; the server migrates it on start.
func newDatabase(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("fs_%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgembed.Start(ctx, sharedPGDir, pgembed.Options{Database: name, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if c.Owned() {
		t.Fatal("the shared cluster was not running")
	}
	return c.DSN(name)
}

// scratchDir is a fresh directory the postgres user can traverse.
func scratchDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(root, "t-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openLedger opens the database in-process for setup and for checks
// (accounts and keys are created the way `siteenv admin` creates them).
func openLedger(t *testing.T, dsn string) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), dsn, ledger.Options{MaxConns: 4, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// tenant is an account with an all-scopes key.
type tenant struct {
	account uuid.UUID
	key     string
}

func newTenant(t *testing.T, l *ledger.Ledger, name string, credits int64) tenant {
	t.Helper()
	ctx := context.Background()
	a, err := l.CreateAccount(ctx, name, credits)
	if err != nil {
		t.Fatal(err)
	}
	k, err := l.CreateKey(ctx, ledger.KeyParams{Account: a.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	return tenant{account: a.ID, key: k.Secret}
}

// env is what a siteenv process of a test sees.
type env struct {
	dataDir string
	dsn     string   // "" means the embedded cluster under dataDir
	extra   []string // more KEY=value settings (an S3 store, query timings)
}

func (e env) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SITEENV_") || strings.HasPrefix(k, "PG") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "SITEENV_SECRET="+testSecret, "SITEENV_DATA_DIR="+e.dataDir, "SITEENV_LOG_LEVEL=info")
	if e.dsn != "" {
		out = append(out, "SITEENV_DATABASE_URL="+e.dsn)
	}
	return append(out, e.extra...)
}

// cli runs a siteenv command to completion and decodes its JSON output.
func cli(t *testing.T, e env, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = e.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("siteenv %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
		t.Fatalf("siteenv %s printed %q: %v", strings.Join(args, " "), stdout.String(), err)
	}
	return m
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer = syncbuf.Buffer

// server is one `siteenv serve` process.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string // host:port
	stderr *syncBuffer
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

var servingRE = regexp.MustCompile(`msg=serving addr=http://([0-9.:]+)/api/v1`)

// startServer runs `siteenv serve` (with args added) on a free loopback port
// and waits until it listens. The process is killed at cleanup if still running; its log is
// shown when the test failed.
func startServer(t *testing.T, e env, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", e.dataDir}, args...)...)
	cmd.Env = e.environ()
	s := &server{t: t, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout = s.stderr
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if s.running() {
			_ = cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("server pid %d log (last 6 KiB):\n%s", cmd.Process.Pid, tail(s.stderr.String(), 6<<10))
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m := servingRE.FindStringSubmatch(s.stderr.String()); m != nil {
			s.addr = m[1]
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("siteenv serve exited before listening: %v\n%s", s.err, s.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("siteenv serve did not listen within 2 minutes\n%s", s.stderr.String())
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// kill9 kills the server with SIGKILL and reaps it.
func (s *server) kill9() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	<-s.exited
}

// terminate sends SIGTERM and waits (bounded) for a clean exit.
func (s *server) terminate() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(90 * time.Second):
		s.t.Fatal("siteenv serve did not exit within 90s of SIGTERM")
	}
	if s.err != nil {
		s.t.Fatalf("siteenv serve exited with %v after SIGTERM", s.err)
	}
}

// rawRequest is sent byte for byte, so tests can send what net/http refuses
// to (NUL or invalid UTF-8 in headers, duplicate headers).
type rawRequest struct {
	method string
	target string // request target under the server, e.g. /api/v1/sites?limit=1 (percent-encoded)
	header [][2]string
	body   []byte
	// noBody sends no Content-Length at all.
	noBody bool
}

type result struct {
	status int
	header http.Header
	body   []byte
}

// problem decodes a Problem body (zero value if it is not one).
func (r result) problem() problemBody {
	var p problemBody
	_ = json.Unmarshal(r.body, &p)
	return p
}

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object (%d): %v: %s", r.status, err, r.body)
	}
	return m
}

type problemBody struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Status      int    `json:"status"`
	Code        string `json:"code"`
	Detail      string `json:"detail"`
	Retryable   bool   `json:"retryable"`
	RequestID   string `json:"request_id"`
	FieldErrors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"field_errors"`
}

// send writes req on a fresh connection and reads the response.
func (s *server) send(req rawRequest) (result, error) {
	return sendTo(s.addr, req)
}

func sendTo(addr string, req rawRequest) (result, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(40 * time.Second))
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", req.method, req.target, addr)
	for _, h := range req.header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if !req.noBody && (req.body != nil || req.method == "POST" || req.method == "PATCH" || req.method == "PUT") {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(req.body))
	}
	b.WriteString("\r\n")
	b.Write(req.body)
	_, werr := conn.Write(b.Bytes())
	// A server may answer (413) and close before reading all of a large
	// body: read the answer even when the write failed.
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: req.method})
	if err != nil {
		if werr != nil {
			return result{}, werr
		}
		return result{}, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return result{}, err
	}
	return result{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// validate checks a response against the OpenAPI document and the project's
// status table; it returns nil when the response conforms.
func validate(v *openapitest.Validator, addr string, req rawRequest, res result) error {
	u, err := url.ParseRequestURI(req.target)
	if err != nil {
		// Not parseable as a URL: validate against the path alone.
		path, _, _ := strings.Cut(req.target, "?")
		u = &url.URL{Path: path}
	}
	hr := &http.Request{Method: req.method, URL: &url.URL{Scheme: "http", Host: addr, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery},
		Header: http.Header{}, Host: addr}
	hr = hr.WithContext(context.Background())
	var errs []string
	if err := v.Validate(hr, res.status, res.header, res.body); err != nil {
		errs = append(errs, err.Error())
	}
	if res.status >= 400 {
		if err := checkStatusTable(res); err != nil {
			errs = append(errs, fmt.Sprintf("%s %s -> %d: %v", req.method, req.target, res.status, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "\n"))
}

// statusTable is /work/shared/contract/status-codes.md (the project's table
// of HTTP status and retryable flag per Problem code). idempotency_conflict
// is retryable only for a duplicate still in flight, so either value is
// accepted for it (maybeRetryable).
var statusTable = map[string]struct {
	status         int
	retryable      bool
	maybeRetryable bool
}{
	"invalid_request":              {400, false, false},
	"invalid_json":                 {400, false, false},
	"invalid_cursor":               {400, false, false},
	"unauthenticated":              {401, false, false},
	"credential_revoked":           {401, false, false},
	"reauthorization_required":     {401, false, false},
	"insufficient_credits":         {402, false, false},
	"scope_insufficient":           {403, false, false},
	"access_required":              {403, false, false},
	"source_rights_restricted":     {403, false, false},
	"feature_disabled":             {403, false, false},
	"not_found":                    {404, false, false},
	"method_not_allowed":           {405, false, false},
	"credit_ceiling_exceeded":      {409, false, false},
	"report_unavailable":           {409, false, false},
	"idempotency_conflict":         {409, false, true},
	"site_reference_conflict":      {409, false, false},
	"paid_site_immutable":          {409, false, false},
	"result_not_ready":             {409, true, false},
	"content_unavailable":          {409, false, false},
	"result_expired":               {410, false, false},
	"result_released":              {410, false, false},
	"delivery_expired":             {410, false, false},
	"payload_too_large":            {413, false, false},
	"unsupported_media_type":       {415, false, false},
	"range_not_satisfiable":        {416, false, false},
	"invalid_geometry":             {422, false, false},
	"site_ineligible":              {422, false, false},
	"cadastre_incomplete":          {422, false, false},
	"report_jurisdiction_required": {422, false, false},
	"report_jurisdiction_conflict": {422, false, false},
	"unsupported_crs":              {422, false, false},
	"feature_too_large":            {422, false, false},
	"result_limit_exceeded":        {422, false, false},
	"output_too_large":             {422, false, false},
	"rate_limited":                 {429, true, false},
	"capacity_exceeded":            {429, true, false},
	"internal_error":               {500, true, false},
	"source_unavailable":           {503, true, false},
	"service_unavailable":          {503, true, false},
}

// checkStatusTable checks that a Problem's code, status, retryable flag and
// type agree with the status table.
func checkStatusTable(res result) error {
	p := res.problem()
	row, ok := statusTable[p.Code]
	switch {
	case !ok:
		return fmt.Errorf("Problem code %q is not in the status table", p.Code)
	case p.Status != row.status || res.status != row.status:
		return fmt.Errorf("code %s must have status %d, got body %d / HTTP %d", p.Code, row.status, p.Status, res.status)
	case !row.maybeRetryable && p.Retryable != row.retryable:
		return fmt.Errorf("code %s must have retryable %v", p.Code, row.retryable)
	case p.Type == "" || !strings.HasSuffix(p.Type, p.Code):
		return fmt.Errorf("Problem type %q does not name its code %s", p.Type, p.Code)
	case p.Retryable && res.header.Get("Retry-After") == "":
		return fmt.Errorf("retryable %s without Retry-After", p.Code)
	}
	if ra := res.header.Get("Retry-After"); ra != "" {
		if n, err := strconv.Atoi(ra); err != nil || n < 0 {
			return fmt.Errorf("Retry-After %q is not integer seconds", ra)
		}
	}
	return nil
}

// client sends JSON requests to a server and validates every response.
type client struct {
	t    *testing.T
	v    *openapitest.Validator
	addr func() string // the current server address (it changes on restart)
}

func newClient(t *testing.T, addr func() string) *client {
	return &client{t: t, v: openapitest.New(t), addr: addr}
}

// do sends method path (under /api/v1) with an optional JSON body and
// header pairs; transport errors fail the test.
func (c *client) do(method, path, key string, body any, headers ...string) result {
	c.t.Helper()
	res, err := c.try(method, path, key, body, headers...)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return res
}

// try is do that returns transport errors instead of failing.
func (c *client) try(method, path, key string, body any, headers ...string) (result, error) {
	c.t.Helper()
	req := rawRequest{method: method, target: "/api/v1" + path}
	if key != "" {
		req.header = append(req.header, [2]string{"Authorization", "Bearer " + key})
	}
	if body != nil {
		var b []byte
		switch x := body.(type) {
		case []byte:
			b = x
		case string:
			b = []byte(x)
		default:
			var err error
			if b, err = json.Marshal(x); err != nil {
				c.t.Fatal(err)
			}
		}
		req.body = b
		req.header = append(req.header, [2]string{"Content-Type", "application/json"})
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.header = append(req.header, [2]string{headers[i], headers[i+1]})
	}
	addr := c.addr()
	res, err := sendTo(addr, req)
	if err != nil {
		return res, err
	}
	if err := validate(c.v, addr, req, res); err != nil {
		c.t.Errorf("%v", err)
	}
	return res, nil
}

// pollUntil calls f every interval until it returns true or timeout passes;
// it reports whether f succeeded. (A bounded poll for a condition, not a
// timing assertion.)
func pollUntil(timeout, interval time.Duration, f func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if f() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}
