package api_test

import (
	"bytes"
	"testing"

	"siteenv/api/openapi"
)

// TestDocsPage: GET /docs serves the embedded reference page without a key,
// as text/html, and (like every route) refuses an undeclared query parameter.
// The harness validates both answers against the OpenAPI document.
func TestDocsPage(t *testing.T) {
	t.Parallel()
	h := setup(t)
	r := h.do("GET", "/docs", "", nil)
	if r.status != 200 {
		t.Fatalf("GET /docs: %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if !bytes.Equal(r.body, openapi.DocsPage) {
		t.Errorf("GET /docs served %d bytes, not the embedded page (%d bytes)", len(r.body), len(openapi.DocsPage))
	}

	p := h.do("GET", "/docs?theme=dark", "", nil).problem(t, "invalid_request", 400)
	if fe, _ := p["field_errors"].([]any); len(fe) != 1 || fe[0].(map[string]any)["field"] != "theme" {
		t.Errorf("field_errors %v, want one naming theme", p["field_errors"])
	}
}
