package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"siteenv/api"
)

// TestMessagesNameTheLimits: a request over a ceiling is told the ceiling
// GET /context reports, the very value enforced, not a number written
// again in the message.
func TestMessagesNameTheLimits(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(100)
	k := h.key(acct, nil, "queries:run", "sites:read", "sites:write", "access:acquire", "layers:read", "usage:read")
	lim := h.do("GET", "/context", k.Secret, nil).json(t)["limits"].(map[string]any)
	limit := func(name string) int {
		v, ok := lim[name].(float64)
		if !ok {
			t.Fatalf("GET /context has no limits.%s", name)
		}
		return int(v)
	}
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("x%d", i)
		}
		return out
	}
	// message is the message of the response's field error on field.
	message := func(r response, field string) string {
		t.Helper()
		for _, fe := range r.json(t)["field_errors"].([]any) {
			if fe := fe.(map[string]any); fe["field"] == field {
				return fe["message"].(string)
			}
		}
		t.Fatalf("no field error on %s: %s", field, r.body)
		return ""
	}
	site := h.site(acct)
	point := map[string]any{"kind": "point", "longitude": 151.0, "latitude": -33.8}
	for _, c := range []struct {
		name, field, want string
		r                 func() response
	}{
		{"max_layers_per_query", "layer_ids", "1 to %d layer ids", func() response {
			n := limit("max_layers_per_query") + 1
			return h.do("POST", "/queries", k.Secret, map[string]any{"site": point, "layer_ids": many(n), "radius_m": 100}, "Idempotency-Key", "q1")
		}},
		{"list_page_max", "page_size", "1 to %d", func() response {
			n := limit("list_page_max") + 1
			return h.do("POST", "/queries", k.Secret, map[string]any{"site": point, "layer_ids": []string{"x"}, "radius_m": 100, "page_size": n}, "Idempotency-Key", "q2")
		}},
		{"max_sections_per_purchase", "section_keys", "1 to %d section keys", func() response {
			n := limit("max_sections_per_purchase") + 1
			return h.do("POST", "/access/acquisitions", k.Secret, map[string]any{"site_id": site, "section_keys": many(n)}, "Idempotency-Key", "a1")
		}},
		{"list_page_max", "limit", "from 1 to %d", func() response {
			return h.do("GET", fmt.Sprintf("/layers?limit=%d", limit("list_page_max")+1), k.Secret, nil)
		}},
		{"history_page_max", "limit", "from 1 to %d", func() response {
			return h.do("GET", fmt.Sprintf("/purchases?limit=%d", limit("history_page_max")+1), k.Secret, nil)
		}},
		{"max_idempotency_key_length", "Idempotency-Key", "1 to %d characters", func() response {
			n := limit("max_idempotency_key_length") + 1
			return h.do("POST", "/access/acquisitions", k.Secret, map[string]any{"site_id": site, "section_keys": []string{"x"}}, "Idempotency-Key", strings.Repeat("k", n))
		}},
	} {
		r := c.r()
		if r.status != 400 {
			t.Errorf("%s: status %d: %s", c.name, r.status, r.body)
			continue
		}
		if got, want := message(r, c.field), fmt.Sprintf(c.want, limit(c.name)); !strings.Contains(got, want) {
			t.Errorf("%s: %s says %q, want it to name %q", c.name, c.field, got, want)
		}
	}
	// The Prefer header's longest wait.
	r := h.do("POST", "/queries", k.Secret, map[string]any{"site": point, "layer_ids": []string{"x"}, "radius_m": 100},
		"Idempotency-Key", "q3", "Prefer", fmt.Sprintf("wait=%d", limit("max_prefer_wait_seconds")+1))
	if got, want := message(r, "Prefer"), fmt.Sprintf("[0-%d]", limit("max_prefer_wait_seconds")); !strings.Contains(got, want) {
		t.Errorf("Prefer says %q, want it to name %q", got, want)
	}
	// The body ceiling, in the unit the detail names. The server answers
	// from Content-Length and closes the connection, so the body is not
	// sent (a client still writing it may see a reset): a raw connection,
	// as TestPayloadTooLargeRefusedBeforeReading.
	addr := strings.TrimPrefix(strings.TrimSuffix(h.base, api.BasePath), "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/sites HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: s1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		k.Secret, limit("max_request_bytes")+1)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, _ := http.NewRequest("POST", h.base+"/sites", nil)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("no answer to a body over the ceiling: %v", err)
	}
	body := h.v.CheckResponse(t, resp)
	r = response{status: resp.StatusCode, header: resp.Header, body: body}
	if want := fmt.Sprintf("%d MiB", limit("max_request_bytes")>>20); !strings.Contains(r.json(t)["detail"].(string), want) {
		t.Errorf("payload too large: %s, want it to name %s", r.body, want)
	}
}
