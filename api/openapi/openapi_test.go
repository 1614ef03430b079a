package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"siteenv/api/openapi"
	"siteenv/api/openapi/openapitest"
)

// problemTable is contract/status-codes.md: code -> HTTP status and
// retryable ("either" for idempotency_conflict, whose retryable depends on
// whether the duplicate is still in flight).
var problemTable = []struct {
	code      string
	status    int
	retryable string
}{
	{"invalid_request", 400, "false"},
	{"invalid_json", 400, "false"},
	{"invalid_cursor", 400, "false"},
	{"unauthenticated", 401, "false"},
	{"credential_revoked", 401, "false"},
	{"reauthorization_required", 401, "false"},
	{"insufficient_credits", 402, "false"},
	{"scope_insufficient", 403, "false"},
	{"access_required", 403, "false"},
	{"source_rights_restricted", 403, "false"},
	{"feature_disabled", 403, "false"},
	{"not_found", 404, "false"},
	{"method_not_allowed", 405, "false"},
	{"credit_ceiling_exceeded", 409, "false"},
	{"report_unavailable", 409, "false"},
	{"idempotency_conflict", 409, "either"},
	{"site_reference_conflict", 409, "false"},
	{"paid_site_immutable", 409, "false"},
	{"result_not_ready", 409, "true"},
	{"content_unavailable", 409, "false"},
	{"result_expired", 410, "false"},
	{"result_released", 410, "false"},
	{"delivery_expired", 410, "false"},
	{"payload_too_large", 413, "false"},
	{"unsupported_media_type", 415, "false"},
	{"range_not_satisfiable", 416, "false"},
	{"invalid_geometry", 422, "false"},
	{"site_ineligible", 422, "false"},
	{"cadastre_incomplete", 422, "false"},
	{"report_jurisdiction_required", 422, "false"},
	{"report_jurisdiction_conflict", 422, "false"},
	{"unsupported_crs", 422, "false"},
	{"feature_too_large", 422, "false"},
	{"result_limit_exceeded", 422, "false"},
	{"output_too_large", 422, "false"},
	{"rate_limited", 429, "true"},
	{"capacity_exceeded", 429, "true"},
	{"internal_error", 500, "true"},
	{"source_unavailable", 503, "true"},
	{"service_unavailable", 503, "true"},
}

// scopeTable is the endpoint table of contract/api-v1.md: operationId ->
// method, path and base required scopes. nil scopes with public=false means
// any valid key.
var scopeTable = []struct {
	id, method, path string
	scopes           []string
	public           bool
}{
	{"search_locations", "GET", "/locations/search", []string{"sites:read"}, false},
	{"resolve_location", "POST", "/locations/resolve", []string{"sites:read"}, false},
	{"get_context", "GET", "/context", nil, false},
	{"get_usage", "GET", "/usage", []string{"usage:read"}, false},
	{"list_portfolios", "GET", "/portfolios", []string{"sites:read"}, false},
	{"list_sites", "GET", "/sites", []string{"sites:read"}, false},
	{"create_site", "POST", "/sites", []string{"sites:read"}, false},
	{"get_site", "GET", "/sites/{site_id}", []string{"sites:read"}, false},
	{"update_site", "PATCH", "/sites/{site_id}", []string{"sites:write"}, false},
	{"archive_site", "DELETE", "/sites/{site_id}", []string{"sites:write"}, false},
	{"get_site_section_map_image", "GET", "/sites/{site_id}/sections/{section_key}/map-image", []string{"sites:read", "queries:run"}, false},
	{"list_layers", "GET", "/layers", []string{"layers:read"}, false},
	{"get_layer", "GET", "/layers/{layer_id}", []string{"layers:read"}, false},
	{"get_layer_schema", "GET", "/layers/{layer_id}/schema", []string{"layers:read"}, false},
	{"create_acquisition", "POST", "/access/acquisitions", []string{"access:acquire"}, false},
	{"list_queries", "GET", "/queries", []string{"queries:run"}, false},
	{"create_query", "POST", "/queries", []string{"queries:run", "sites:read"}, false},
	{"get_query", "GET", "/queries/{query_id}", []string{"queries:run"}, false},
	{"get_query_results", "GET", "/queries/{query_id}/results", []string{"queries:run"}, false},
	{"delete_query", "DELETE", "/queries/{query_id}", []string{"queries:run"}, false},
	{"get_query_layer_schema", "GET", "/queries/{query_id}/layers/{layer_id}/schema", []string{"queries:run"}, false},
	{"list_purchases", "GET", "/purchases", []string{"usage:read"}, false},
	{"get_purchase", "GET", "/purchases/{purchase_id}", []string{"usage:read"}, false},
	{"list_activity", "GET", "/activity", []string{"usage:read"}, false},
	{"list_reports", "GET", "/reports", []string{"reports:read"}, false},
	{"create_report", "POST", "/reports", []string{"reports:create"}, false},
	{"get_report", "GET", "/reports/{report_id}", []string{"reports:read"}, false},
	{"list_report_revisions", "GET", "/reports/{report_id}/revisions", []string{"reports:read"}, false},
	{"get_report_content", "GET", "/reports/{report_id}/content", []string{"reports:read"}, false},
	{"get_artifact", "GET", "/artifacts/{artifact_id}", []string{"artifacts:read"}, false},
	{"create_delivery", "POST", "/artifacts/{artifact_id}/deliveries", []string{"artifacts:read"}, false},
	{"get_delivery", "GET", "/deliveries/{capability}", nil, true},
	{"get_openapi", "GET", "/openapi.json", nil, true},
	{"get_docs", "GET", "/docs", nil, true},
}

func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return doc
}

type opEntry struct {
	method, path string
	op           *openapi3.Operation
}

func allOperations(doc *openapi3.T) []opEntry {
	var out []opEntry
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			out = append(out, opEntry{method, path, op})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].path != out[j].path {
			return out[i].path < out[j].path
		}
		return out[i].method < out[j].method
	})
	return out
}

func TestDocumentIsValid(t *testing.T) {
	doc := loadDoc(t)
	if err := doc.Validate(context.Background(), openapi3.EnableSchemaFormatValidation()); err != nil {
		t.Fatalf("document is invalid: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/api/v1" {
		t.Errorf("servers = %+v, want exactly /api/v1", doc.Servers)
	}
	ss := doc.Components.SecuritySchemes["bearerAuth"]
	if ss == nil || ss.Value.Type != "http" || ss.Value.Scheme != "bearer" {
		t.Errorf("components.securitySchemes.bearerAuth must be http bearer")
	}
	for _, want := range []string{"OGC:CRS84, EPSG:4326 and EPSG:7844 are taken as equal", "EPSG:7847-7858"} {
		if !strings.Contains(doc.Info.Description, want) {
			t.Errorf("info.description lacks %q", want)
		}
	}
	// The New helper validates too; it must not fail.
	openapitest.New(t)
}

// TestJSONSchema2020Style rejects OpenAPI 3.0 idioms anywhere in the document.
func TestJSONSchema2020Style(t *testing.T) {
	var root any
	if err := json.Unmarshal(openapi.Document, &root); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, n any)
	walk = func(path string, n any) {
		switch n := n.(type) {
		case map[string]any:
			for k, v := range n {
				_, isSchema := n["type"]
				if k == "nullable" || (isSchema && k == "example") || (k == "exclusiveMinimum" && v == true) {
					t.Errorf("%s: OpenAPI 3.0 keyword %q", path, k)
				}
				walk(path+"/"+k, v)
			}
		case []any:
			for i, v := range n {
				walk(path+"/"+strconv.Itoa(i), v)
			}
		}
	}
	walk("#", root)
}

func TestOperationIDs(t *testing.T) {
	doc := loadDoc(t)
	count := map[string]int{}
	for _, e := range allOperations(doc) {
		count[e.op.OperationID]++
	}
	for _, row := range scopeTable {
		if count[row.id] != 1 {
			t.Errorf("operationId %s appears %d times, want 1", row.id, count[row.id])
		}
		delete(count, row.id)
	}
	for id := range count {
		t.Errorf("unexpected operationId %q", id)
	}
	for _, e := range allOperations(doc) {
		op := doc.Paths.Value(e.path).GetOperation(e.method)
		if op.OperationID == "" || len(op.OperationID) > 80 || strings.ToLower(op.OperationID) != op.OperationID {
			t.Errorf("%s %s: operationId %q must be snake_case, at most 80 characters", e.method, e.path, op.OperationID)
		}
	}
}

func TestProblemCodes(t *testing.T) {
	doc := loadDoc(t)
	var want []string
	for _, row := range problemTable {
		want = append(want, row.code)
	}
	if len(want) != 40 {
		t.Fatalf("table has %d codes, want 40", len(want))
	}
	got := openapitest.ProblemCodes()
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("Problem.code enum = %v\nwant %v", got, want)
	}

	problem := doc.Components.Schemas["Problem"].Value
	wantKeys := []string{"code", "detail", "field_errors", "request_id", "retryable", "status", "title", "type"}
	var keys []string
	for k := range problem.Properties {
		keys = append(keys, k)
	}
	if !slices.Equal(sorted(keys), wantKeys) || !slices.Equal(sorted(problem.Required), wantKeys) {
		t.Errorf("Problem properties %v required %v, want exactly %v", sorted(keys), sorted(problem.Required), wantKeys)
	}
	if has := problem.AdditionalProperties.Has; has == nil || *has {
		t.Errorf("Problem must have additionalProperties: false")
	}

	// Each code is valid in the Problem schema of its own status only, with
	// the retryable value of status-codes.md.
	statuses := map[int]bool{}
	for _, row := range problemTable {
		statuses[row.status] = true
	}
	for _, row := range problemTable {
		for status := range statuses {
			s := doc.Components.Schemas["Problem"+strconv.Itoa(status)]
			if s == nil {
				t.Fatalf("no Problem%d schema", status)
			}
			for _, retryable := range []bool{false, true} {
				err := s.Value.VisitJSON(problemValue(row.code, status, retryable), openapi3.EnableJSONSchema2020())
				wantOK := status == row.status && (row.retryable == "either" || row.retryable == strconv.FormatBool(retryable))
				if (err == nil) != wantOK {
					t.Errorf("code %s status %d retryable %v: valid=%v, want %v (%v)", row.code, status, retryable, err == nil, wantOK, err)
				}
			}
		}
	}
}

func problemValue(code string, status int, retryable bool) map[string]any {
	return map[string]any{
		"type": "about:blank", "title": "t", "status": float64(status), "code": code, "detail": "d",
		"retryable": retryable, "request_id": "0190c6d4-6f1e-7b8a-9c3d-4e5f60718293", "field_errors": []any{},
	}
}

func TestResponsesDeclareRequestIDAndProblems(t *testing.T) {
	doc := loadDoc(t)
	for _, e := range allOperations(doc) {
		for code, ref := range e.op.Responses.Map() {
			where := fmt.Sprintf("%s %s %s", e.method, e.path, code)
			r := ref.Value
			h := r.Headers["X-Request-Id"]
			if h == nil || !h.Value.Required {
				t.Errorf("%s: X-Request-Id header not declared as required", where)
			}
			status, _ := strconv.Atoi(code)
			if status >= 400 {
				if len(r.Content) != 1 || r.Content["application/problem+json"] == nil {
					t.Errorf("%s: error response must have only application/problem+json content", where)
					continue
				}
				if want := "#/components/schemas/Problem" + code; r.Content["application/problem+json"].Schema.Ref != want {
					t.Errorf("%s: schema %s, want %s", where, r.Content["application/problem+json"].Schema.Ref, want)
				}
				if !strings.HasPrefix(ref.Ref, "#/components/responses/") {
					t.Errorf("%s: error responses must use a shared components/responses entry", where)
				}
			}
		}
	}
}

func TestErrorStatusesPerOperation(t *testing.T) {
	doc := loadDoc(t)
	for _, e := range allOperations(doc) {
		var want []int
		if e.op.Security == nil || len(*e.op.Security) > 0 {
			want = append(want, 401, 403, 429, 500, 503)
		}
		if e.op.RequestBody != nil {
			want = append(want, 400, 413, 415)
		}
		for _, status := range want {
			if e.op.Responses.Status(status) == nil {
				t.Errorf("%s (%s %s) does not document %d", e.op.OperationID, e.method, e.path, status)
			}
		}
	}
}

func TestOperationsScopes(t *testing.T) {
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != len(scopeTable) {
		t.Fatalf("Operations() returned %d entries, want %d", len(ops), len(scopeTable))
	}
	if !sort.SliceIsSorted(ops, func(i, j int) bool {
		return ops[i].Path < ops[j].Path || ops[i].Path == ops[j].Path && ops[i].Method < ops[j].Method
	}) {
		t.Errorf("Operations() not sorted by path then method")
	}
	byID := map[string]openapi.Operation{}
	for _, op := range ops {
		byID[op.ID] = op
	}
	for _, row := range scopeTable {
		op, ok := byID[row.id]
		if !ok {
			t.Errorf("%s missing", row.id)
			continue
		}
		if op.Method != row.method || op.Path != row.path || op.Public != row.public || !slices.Equal(op.Scopes, row.scopes) {
			t.Errorf("%s = %+v, want %s %s scopes %v public %v", row.id, op, row.method, row.path, row.scopes, row.public)
		}
	}
}

// fakeTB records Errorf calls so tests can prove Check fails.
type fakeTB struct {
	testing.TB
	errs []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

const reqID = "0190c6d4-6f1e-7b8a-9c3d-4e5f60718293"

func problemBody(t *testing.T, status int, code string, retryable bool, extra map[string]any) []byte {
	t.Helper()
	p := map[string]any{
		"type": "https://errors.example/" + code, "title": "Title", "status": status, "code": code,
		"detail": "Something specific.", "retryable": retryable, "request_id": reqID,
		"field_errors": []map[string]string{{"field": "site_id", "message": "must be a uuid"}},
	}
	for k, v := range extra {
		p[k] = v
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestValidatorCheck(t *testing.T) {
	v := openapitest.New(t)
	siteURL := "http://127.0.0.1:8080/api/v1/sites/0190c6d4-6f1e-7b8a-9c3d-4e5f60718293"
	problemHeader := func(kv ...string) http.Header {
		return hdr(append([]string{"Content-Type", "application/problem+json", "X-Request-Id", reqID}, kv...)...)
	}
	site := `{"api_version":"1","site":{"site_id":"0190c6d4-6f1e-7b8a-9c3d-4e5f60718293","name":null,
		"crs":"OGC:CRS84","axis_order":["longitude","latitude"],
		"geometry":{"type":"Polygon","coordinates":[[[151.2,-33.8],[151.21,-33.8],[151.21,-33.81],[151.2,-33.8]]]},
		"fingerprint":"` + strings.Repeat("ab", 32) + `","created_at":"2026-01-02T03:04:05Z","area_m2":1234.5,"future_field":1}}`
	jsonHeader := hdr("Content-Type", "application/json", "X-Request-Id", reqID)
	mapImage := "http://h/api/v1/sites/0190c6d4-6f1e-7b8a-9c3d-4e5f60718293/sections/contamination/map-image"
	capability := "http://h/api/v1/deliveries/dl_0190c6d4-6f1e-7b8a-9c3d-4e5f60718293." + strings.Repeat("A", 43)

	cases := []struct {
		name                string
		method, url         string
		status              int
		header              http.Header
		body                []byte
		wantErr             bool
		wantErrContainsSome string
	}{
		{name: "valid problem", method: "GET", url: siteURL, status: 404, header: problemHeader(),
			body: problemBody(t, 404, "not_found", false, nil)},
		{name: "valid problem with charset", method: "GET", url: siteURL, status: 404,
			header: hdr("Content-Type", "application/problem+json; charset=utf-8", "X-Request-Id", reqID),
			body:   problemBody(t, 404, "not_found", false, nil)},
		{name: "valid retryable problem", method: "GET", url: siteURL, status: 429, header: problemHeader("Retry-After", "3"),
			body: problemBody(t, 429, "rate_limited", true, nil)},
		{name: "valid site", method: "GET", url: siteURL, status: 200, header: jsonHeader, body: []byte(site)},
		{name: "valid map image", method: "GET", url: mapImage, status: 200,
			header: hdr("Content-Type", "image/jpeg", "X-Request-Id", reqID, "Content-Length", "4",
				"Content-Disposition", `inline; filename="map.jpg"`, "ETag", `"abc"`, "Cache-Control", "private, max-age=300"), body: []byte{0xff, 0xd8, 0xff, 0xd9}},
		{name: "map image not modified", method: "GET", url: mapImage, status: 304,
			header: hdr("X-Request-Id", reqID, "ETag", `"abc"`, "Cache-Control", "private, max-age=300")},
		{name: "valid partial delivery", method: "GET", url: capability, status: 206,
			header: hdr("Content-Type", "application/pdf", "X-Request-Id", reqID, "Content-Range", "bytes 0-3/100"),
			body:   []byte("%PDF")},
		{name: "valid 204", method: "DELETE", url: "http://h/api/v1/queries/" + reqID, status: 204,
			header: hdr("X-Request-Id", reqID)},
		{name: "unknown path 404", method: "GET", url: "http://h/api/v1/nope", status: 404, header: problemHeader(),
			body: problemBody(t, 404, "not_found", false, nil)},
		{name: "undocumented method 405", method: "PUT", url: siteURL, status: 405,
			header: problemHeader("Allow", "GET, PATCH, DELETE"), body: problemBody(t, 405, "method_not_allowed", false, nil)},

		{name: "ninth field", method: "GET", url: siteURL, status: 404, header: problemHeader(),
			body: problemBody(t, 404, "not_found", false, map[string]any{"instance": "/x"}), wantErr: true,
			wantErrContainsSome: "Problem keys"},
		{name: "missing field", method: "GET", url: siteURL, status: 404, header: problemHeader(),
			body:    []byte(`{"type":"t","title":"t","status":404,"code":"not_found","detail":"d","retryable":false,"request_id":"` + reqID + `"}`),
			wantErr: true, wantErrContainsSome: "Problem keys"},
		{name: "missing X-Request-Id", method: "GET", url: siteURL, status: 404,
			header: hdr("Content-Type", "application/problem+json"), body: problemBody(t, 404, "not_found", false, nil),
			wantErr: true, wantErrContainsSome: "X-Request-Id"},
		{name: "X-Request-Id not a uuid", method: "GET", url: siteURL, status: 200,
			header: hdr("Content-Type", "application/json", "X-Request-Id", "req-1"), body: []byte(site),
			wantErr: true, wantErrContainsSome: "X-Request-Id"},
		{name: "wrong content type", method: "GET", url: siteURL, status: 404,
			header: hdr("Content-Type", "application/json", "X-Request-Id", reqID), body: problemBody(t, 404, "not_found", false, nil),
			wantErr: true, wantErrContainsSome: "Content-Type"},
		{name: "undocumented status", method: "GET", url: siteURL, status: 402, header: problemHeader(),
			body: problemBody(t, 402, "insufficient_credits", false, nil), wantErr: true, wantErrContainsSome: "status is not supported"},
		{name: "code of another status", method: "GET", url: siteURL, status: 404, header: problemHeader(),
			body: problemBody(t, 404, "invalid_request", false, nil), wantErr: true},
		{name: "body status differs", method: "GET", url: siteURL, status: 404, header: problemHeader(),
			body: problemBody(t, 400, "not_found", false, nil), wantErr: true, wantErrContainsSome: "differs from HTTP status"},
		{name: "request_id differs", method: "GET", url: siteURL, status: 404, header: problemHeader(),
			body:    problemBody(t, 404, "not_found", false, map[string]any{"request_id": "0190c6d4-6f1e-7b8a-9c3d-000000000000"}),
			wantErr: true, wantErrContainsSome: "request_id"},
		{name: "retryable without Retry-After", method: "GET", url: siteURL, status: 503, header: problemHeader(),
			body: problemBody(t, 503, "service_unavailable", true, nil), wantErr: true, wantErrContainsSome: "Retry-After"},
		{name: "unknown code", method: "GET", url: siteURL, status: 404, header: problemHeader(),
			body: problemBody(t, 404, "nope", false, nil), wantErr: true},
		{name: "detail too long", method: "GET", url: siteURL, status: 404, header: problemHeader(),
			body: problemBody(t, 404, "not_found", false, map[string]any{"detail": strings.Repeat("x", 2049)}), wantErr: true},
		{name: "site missing required field", method: "GET", url: siteURL, status: 200, header: jsonHeader,
			body: []byte(strings.Replace(site, `"area_m2":1234.5,`, "", 1)), wantErr: true},
		{name: "site with null api_version", method: "GET", url: siteURL, status: 200, header: jsonHeader,
			body: []byte(strings.Replace(site, `"api_version":"1"`, `"api_version":1`, 1)), wantErr: true},
		{name: "site latitude out of range", method: "GET", url: siteURL, status: 200, header: jsonHeader,
			body: []byte(strings.Replace(site, "-33.81", "-93.81", 1)), wantErr: true},
		{name: "map image without Content-Length", method: "GET", url: mapImage, status: 200,
			header: hdr("Content-Type", "image/jpeg", "X-Request-Id", reqID, "Content-Disposition", "attachment", "ETag", `"abc"`, "Cache-Control", "private"),
			body:   []byte{0xff, 0xd8}, wantErr: true, wantErrContainsSome: "Content-Length"},
		{name: "map image without ETag", method: "GET", url: mapImage, status: 200,
			header: hdr("Content-Type", "image/jpeg", "X-Request-Id", reqID, "Content-Length", "2", "Content-Disposition", "inline", "Cache-Control", "private"),
			body:   []byte{0xff, 0xd8}, wantErr: true, wantErrContainsSome: "ETag"},
		{name: "206 without Content-Range", method: "GET", url: capability, status: 206,
			header: hdr("Content-Type", "application/pdf", "X-Request-Id", reqID), body: []byte("%PDF"), wantErr: true},
		{name: "unknown path with 200", method: "GET", url: "http://h/api/v1/nope", status: 200, header: jsonHeader,
			body: []byte(`{}`), wantErr: true},
		{name: "path outside server prefix", method: "GET", url: "http://h/sites/" + reqID, status: 200, header: jsonHeader,
			body: []byte(site), wantErr: true},
		{name: "405 without Allow", method: "PUT", url: siteURL, status: 405, header: problemHeader(),
			body: problemBody(t, 405, "method_not_allowed", false, nil), wantErr: true, wantErrContainsSome: "Allow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.url, nil)
			ft := &fakeTB{TB: t}
			v.Check(ft, req, c.status, c.header, c.body)
			if got := len(ft.errs) > 0; got != c.wantErr {
				t.Fatalf("Check reported errors=%v, want %v: %v", got, c.wantErr, ft.errs)
			}
			if c.wantErr {
				msg := strings.Join(ft.errs, "\n")
				t.Logf("rejected as expected:\n%s", msg)
				for _, want := range []string{c.method, strconv.Itoa(c.status), c.wantErrContainsSome} {
					if !strings.Contains(msg, want) {
						t.Errorf("message lacks %q:\n%s", want, msg)
					}
				}
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// TestExamplesConform runs every example of a successful JSON response in the
// document through Validator.Check, so the examples and the schemas agree and
// the validator accepts realistic bodies.
func TestExamplesConform(t *testing.T) {
	doc := loadDoc(t)
	v := openapitest.New(t)
	pathValues := map[string]string{
		"{site_id}": reqID, "{query_id}": reqID, "{purchase_id}": reqID, "{report_id}": reqID, "{artifact_id}": reqID,
		"{section_key}": "contamination", "{layer_id}": "nsw.contaminated-land",
		"{capability}": "dl_" + reqID + "." + strings.Repeat("x", 43),
	}
	seen := map[string]bool{}
	for _, e := range allOperations(doc) {
		for code, ref := range e.op.Responses.Map() {
			status, _ := strconv.Atoi(code)
			mt := ref.Value.Content.Get("application/json")
			if status >= 400 || mt == nil {
				continue
			}
			if len(mt.Examples) == 0 && e.op.OperationID != "get_openapi" {
				t.Errorf("%s %s: no example", e.op.OperationID, code)
			}
			for name, ex := range mt.Examples {
				t.Run(e.op.OperationID+"/"+code+"/"+name, func(t *testing.T) {
					body, err := json.Marshal(ex.Value.Value)
					if err != nil {
						t.Fatal(err)
					}
					path := e.path
					for k, val := range pathValues {
						path = strings.ReplaceAll(path, k, val)
					}
					h := hdr("Content-Type", "application/json", "X-Request-Id", reqID)
					if ref.Value.Headers["Location"] != nil {
						h.Set("Location", "/api/v1/queries/"+reqID)
					}
					if ref.Value.Headers["ETag"] != nil {
						h.Set("ETag", `"example-etag"`)
					}
					v.Check(t, httptest.NewRequest(e.method, "http://127.0.0.1/api/v1"+path, nil), status, h, body)
					seen[e.op.OperationID] = true
				})
			}
		}
	}
	if len(seen) < 29 {
		t.Errorf("only %d operations have JSON examples", len(seen))
	}
}

// TestServesItself checks the get_openapi response: the document is a valid
// body of its own GET /openapi.json.
func TestServesItself(t *testing.T) {
	v := openapitest.New(t)
	req := httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil)
	v.Check(t, req, 200, hdr("Content-Type", "application/json", "X-Request-Id", reqID, "ETag", `"example-etag"`), openapi.Document)
}

// TestNestedViolationsRejected mutates document examples deep inside their
// bodies; each mutation must be reported.
func TestNestedViolationsRejected(t *testing.T) {
	doc := loadDoc(t)
	v := openapitest.New(t)
	example := func(path, method string) map[string]any {
		op := doc.Paths.Value(path).GetOperation(method)
		var out map[string]any
		b, _ := json.Marshal(op.Responses.Status(200).Value.Content.Get("application/json").Examples["typical"].Value.Value)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name, path, url string
		mutate          func(m map[string]any)
	}{
		{"layer reason not in enum", "/queries/{query_id}", "/api/v1/queries/" + reqID, func(m map[string]any) {
			m["layers"].([]any)[0].(map[string]any)["reason"] = "bogus"
		}},
		{"negative distance", "/queries/{query_id}", "/api/v1/queries/" + reqID, func(m map[string]any) {
			m["features"].([]any)[0].(map[string]any)["distance_m"] = -1
		}},
		{"eleven layers", "/queries/{query_id}", "/api/v1/queries/" + reqID, func(m map[string]any) {
			l := m["layers"].([]any)
			for len(l) < 11 {
				l = append(l, l[0])
			}
			m["layers"] = l
		}},
		{"date-time without timezone", "/queries/{query_id}", "/api/v1/queries/" + reqID, func(m map[string]any) {
			m["computed_at"] = "2026-03-02T01:02:03"
		}},
		{"negative limit", "/context", "/api/v1/context", func(m map[string]any) {
			m["limits"].(map[string]any)["some_limit"] = -1
		}},
		{"unknown scope", "/context", "/api/v1/context", func(m map[string]any) { m["scopes"] = []any{"sites:admin"} }},
		{"site id not a uuid", "/queries/{query_id}", "/api/v1/queries/" + reqID, func(m map[string]any) { m["site_id"] = "site-1" }},
		{"bad delivery url", "/artifacts/{artifact_id}/deliveries", "/api/v1/artifacts/" + reqID + "/deliveries", func(m map[string]any) {
			m["url"] = "https://cdn.example/file.pdf"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method, status := http.MethodGet, 200
			if strings.HasSuffix(c.path, "/deliveries") {
				method, status = http.MethodPost, 201
			}
			var m map[string]any
			if status == 201 {
				op := doc.Paths.Value(c.path).Post
				b, _ := json.Marshal(op.Responses.Status(201).Value.Content.Get("application/json").Examples["typical"].Value.Value)
				_ = json.Unmarshal(b, &m)
			} else {
				m = example(c.path, method)
			}
			c.mutate(m)
			body, _ := json.Marshal(m)
			ft := &fakeTB{TB: t}
			v.Check(ft, httptest.NewRequest(method, c.url, nil), status, hdr("Content-Type", "application/json", "X-Request-Id", reqID), body)
			if len(ft.errs) == 0 {
				t.Errorf("mutation %q was accepted", c.name)
			}
		})
	}
}

// TestValidatorConcurrent uses one Validator from many goroutines (run with -race).
func TestValidatorConcurrent(t *testing.T) {
	v := openapitest.New(t)
	body := problemBody(t, 404, "not_found", false, nil)
	done := make(chan struct{})
	for i := 0; i < 8; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := 0; j < 20; j++ {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/reports/"+reqID, nil)
				if err := v.Validate(req, 404, hdr("Content-Type", "application/problem+json", "X-Request-Id", reqID), body); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
}
