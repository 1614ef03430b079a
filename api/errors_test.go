package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/api"
)

var problemFields = []string{"type", "title", "status", "code", "detail", "retryable", "request_id", "field_errors"}

func assertProblemShape(t *testing.T, r response) {
	t.Helper()
	m := r.json(t)
	if len(m) != len(problemFields) {
		t.Errorf("problem has %d fields, want exactly %v: %s", len(m), problemFields, r.body)
	}
	for _, f := range problemFields {
		if _, ok := m[f]; !ok {
			t.Errorf("problem lacks %q: %s", f, r.body)
		}
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("content type %q", ct)
	}
	if m["request_id"] != r.header.Get("X-Request-Id") {
		t.Errorf("request_id %v differs from X-Request-Id %s", m["request_id"], r.header.Get("X-Request-Id"))
	}
	retry, _ := m["retryable"].(bool)
	if retry != (r.header.Get("Retry-After") != "") {
		t.Errorf("retryable=%v but Retry-After=%q", retry, r.header.Get("Retry-After"))
	}
}

func TestAuthenticationErrors(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(10)
	k := h.key(acct, nil, "sites:read")

	cases := []struct {
		name   string
		header []string
		key    string
		code   string
		status int
	}{
		{"missing", nil, "", "unauthenticated", 401},
		{"unknown key", nil, "sek_not-a-real-key", "unauthenticated", 401},
		{"basic scheme", []string{"Authorization", "Basic " + k.Secret}, "", "unauthenticated", 401},
		{"key in query is not accepted", nil, "", "unauthenticated", 401},
		{"missing scope", nil, k.Secret, "scope_insufficient", 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/usage"
			if c.name == "key in query is not accepted" {
				path = "/usage?api_key=" + k.Secret
			}
			r := h.do("GET", path, c.key, nil, c.header...)
			r.problem(t, c.code, c.status)
			assertProblemShape(t, r)
			if bytes.Contains(r.body, []byte(k.Secret)) {
				t.Fatal("the key leaked into the error body")
			}
		})
	}
}

func TestRevocationAppliesOnTheNextRequest(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(10)
	k := h.key(acct, nil, "usage:read")
	if r := h.do("GET", "/context", k.Secret, nil); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	if err := h.led.RevokeKey(h.ctx, k.KeyID); err != nil {
		t.Fatal(err)
	}
	r := h.do("GET", "/context", k.Secret, nil)
	r.problem(t, "credential_revoked", 401)
	assertProblemShape(t, r)
	// The revoked attempt is audited as "revoked" for the integration.
	rows, err := h.led.ListActivity(h.ctx, k.IntegrationID, ledgerFilter(10))
	if err != nil || len(rows) != 2 || rows[0].Outcome != "revoked" {
		t.Fatalf("activity after revocation: %+v %v", rows, err)
	}
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "usage:read")

	r := h.do("GET", "/nope", k.Secret, nil)
	r.problem(t, "not_found", 404)
	assertProblemShape(t, r)

	r = h.do("DELETE", "/context", k.Secret, nil)
	r.problem(t, "method_not_allowed", 405)
	if r.header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	assertProblemShape(t, r)

	// An operation the server does not offer says so, after authentication
	// and scopes: ordering reports before a report price is configured.
	r = h.do("GET", "/reports", k.Secret, nil)
	r.problem(t, "scope_insufficient", 403)
	k2 := h.key(h.account(0), nil, "reports:create")
	h.do("POST", "/reports", k2.Secret, map[string]any{"site_id": uuid.NewString()}, "Idempotency-Key", "k").problem(t, "feature_disabled", 403)
}

func TestQueryParameterErrorsNameTheFields(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "usage:read")
	r := h.do("GET", "/activity?limit=0&outcome=maybe&created_from=2026-01-01T00:00:00&colour=red&request_id=x", k.Secret, nil)
	m := r.problem(t, "invalid_request", 400)
	assertProblemShape(t, r)
	got := map[string]bool{}
	for _, fe := range m["field_errors"].([]any) {
		got[fe.(map[string]any)["field"].(string)] = true
	}
	for _, f := range []string{"limit", "outcome", "created_from", "colour", "request_id"} {
		if !got[f] {
			t.Errorf("field_errors does not name %q: %s", f, r.body)
		}
	}
}

func TestUnknownQueryParametersAreRefused(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "usage:read")
	for _, path := range []string{"/usage?verbose=1", "/context?x=1", "/activity?limit=1&limit=2"} {
		r := h.do("GET", path, k.Secret, nil)
		r.problem(t, "invalid_request", 400)
		assertProblemShape(t, r)
	}
}

func TestFieldErrorsAreBounded(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "usage:read")
	var q []string
	for i := 0; i < 30; i++ {
		q = append(q, fmt.Sprintf("p%02d%s=1", i, strings.Repeat("x", 300)))
	}
	r := h.do("GET", "/activity?"+strings.Join(q, "&"), k.Secret, nil)
	m := r.problem(t, "invalid_request", 400)
	fes := m["field_errors"].([]any)
	if len(fes) != 20 {
		t.Fatalf("%d field errors, want the first 20", len(fes))
	}
	for _, fe := range fes {
		if f := fe.(map[string]any)["field"].(string); len(f) > 256 {
			t.Fatalf("field name of %d chars", len(f))
		}
	}
}

func TestBodyErrors(t *testing.T) {
	t.Parallel()
	var count atomic.Int64
	h := setup(t, func(s *api.Server) { api.InstallEcho(s, &count, nil) })
	k := h.key(h.account(0), nil, "sites:read", "sites:write")
	idem := []string{"Idempotency-Key", "body-errors-1"}

	r := h.do("POST", "/sites", k.Secret, `{"name": "x",`, idem...)
	r.problem(t, "invalid_json", 400)
	assertProblemShape(t, r)

	r = h.do("POST", "/sites", k.Secret, `[1, 2]`, idem...)
	r.problem(t, "invalid_request", 400)

	r = h.do("POST", "/sites", k.Secret, `{"name": 5}`, idem...)
	m := r.problem(t, "invalid_request", 400)
	if fe := m["field_errors"].([]any); len(fe) != 1 || fe[0].(map[string]any)["field"] != "name" {
		t.Fatalf("field_errors %v", fe)
	}

	r = h.do("POST", "/sites", k.Secret, `{"name": "x", "colour": "red"}`, idem...)
	m = r.problem(t, "invalid_request", 400)
	if fe := m["field_errors"].([]any); fe[0].(map[string]any)["field"] != "colour" {
		t.Fatalf("field_errors %v", fe)
	}

	r = h.do("POST", "/sites", k.Secret, []byte(`{"name": "x"}`), "Content-Type", "text/plain", idem[0], idem[1])
	r.problem(t, "unsupported_media_type", 415)
	assertProblemShape(t, r)

	r = h.do("POST", "/sites", k.Secret, `{"name": "x"}`)
	m = r.problem(t, "invalid_request", 400)
	if fe := m["field_errors"].([]any); fe[0].(map[string]any)["field"] != "Idempotency-Key" {
		t.Fatalf("missing header not named: %v", fe)
	}
	for _, bad := range []string{"has space", strings.Repeat("a", 129), "semi;colon", "ünïcode"} {
		r = h.do("POST", "/sites", k.Secret, `{"name": "x"}`, "Idempotency-Key", bad)
		r.problem(t, "invalid_request", 400)
	}
	if count.Load() != 0 {
		t.Fatalf("%d executions for requests that were all refused", count.Load())
	}
}

func TestPayloadTooLargeRefusedBeforeReading(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "sites:read", "sites:write")
	addr := strings.TrimPrefix(strings.TrimSuffix(h.base, api.BasePath), "http://")
	// The server answers from Content-Length and closes the connection, so a
	// client still writing the body may see a reset: write it concurrently
	// over a raw connection and read the answer regardless.
	for _, size := range []int{api.MaxRequestBody + 1, 1 << 30} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /api/v1/sites HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: big\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", k.Secret, size)
		if size < 1<<30 {
			go func() { _, _ = conn.Write(bytes.Repeat([]byte("x"), size)) }()
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		req, _ := http.NewRequest("POST", h.base+"/sites", nil)
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			t.Fatalf("no answer to a %d-byte body: %v", size, err)
		}
		body := h.v.CheckResponse(t, resp)
		r := response{status: resp.StatusCode, header: resp.Header, body: body}
		r.problem(t, "payload_too_large", 413)
		assertProblemShape(t, r)
		conn.Close()
	}
}

func TestInternalErrorsHideTheCause(t *testing.T) {
	t.Parallel()
	var count atomic.Int64
	h := setup(t, func(s *api.Server) { api.InstallEcho(s, &count, nil) })
	k := h.key(h.account(0), nil, "sites:read", "sites:write")
	for i, name := range []string{"boom", "panic"} {
		r := h.do("POST", "/sites", k.Secret, map[string]any{"name": name}, "Idempotency-Key", fmt.Sprintf("ie-%d", i))
		r.problem(t, "internal_error", 500)
		assertProblemShape(t, r)
		for _, leak := range []string{"secret_table", "goroutine", ".go:", "pq:"} {
			if bytes.Contains(r.body, []byte(leak)) {
				t.Fatalf("internal detail %q leaked: %s", leak, r.body)
			}
		}
	}
	// A retryable failure is not stored: the retry executes again.
	before := count.Load()
	h.do("POST", "/sites", k.Secret, map[string]any{"name": "boom"}, "Idempotency-Key", "ie-0")
	if count.Load() != before+1 {
		t.Fatal("a retry after internal_error was replayed instead of executed")
	}
}

func TestRequestIDOnEverySuccess(t *testing.T) {
	t.Parallel()
	h := setup(t)
	r := h.do("GET", "/openapi.json", "", nil)
	if r.status != 200 || r.header.Get("X-Request-Id") == "" {
		t.Fatalf("openapi.json: %d %v", r.status, r.header)
	}
	if !bytes.Contains(r.body, []byte(`"openapi"`)) {
		t.Fatal("not the OpenAPI document")
	}
}
