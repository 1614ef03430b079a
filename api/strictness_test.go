package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/api"
	"siteenv/api/openapi"
	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// setupConfig is setup with a Config the test adjusts.
func setupConfig(t *testing.T, configure func(*api.Config)) *harness {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 10, 0, time.UTC))
	return setupOn(t, clk, ledgertest.New(t, clk), configure)
}

// refused asserts a 400 of code whose field_errors name field.
func refused(t *testing.T, r response, code, field string) {
	t.Helper()
	m := r.problem(t, code, 400)
	assertProblemShape(t, r)
	if got := fieldsNamed(m); !slices.Contains(got, field) {
		t.Fatalf("field_errors %v do not name %q: %s", got, field, r.body)
	}
}

// apiSite creates an unnamed 1 ha site through the API.
func (h *harness) apiSite(key string, lon float64) uuid.UUID {
	h.t.Helper()
	r := h.createSite(key, map[string]any{"site": geometrySelector(squareHa(1, lon, -33.8))})
	if r.status != 201 && r.status != 200 {
		h.t.Fatalf("create site: %d %s", r.status, r.body)
	}
	return uuid.MustParse(r.json(h.t)["site"].(map[string]any)["site_id"].(string))
}

// concretePath fills an operation's path template with well-formed values.
func concretePath(op openapi.Operation) string {
	p := op.Path
	for _, name := range []string{"site_id", "query_id", "purchase_id", "report_id", "artifact_id"} {
		p = strings.ReplaceAll(p, "{"+name+"}", uuid.NewString())
	}
	p = strings.ReplaceAll(p, "{layer_id}", "nsw.flood")
	p = strings.ReplaceAll(p, "{section_key}", "water")
	p = strings.ReplaceAll(p, "{capability}", "dl_"+uuid.NewString()+"."+strings.Repeat("A", 43))
	return p
}

// TestEveryOperationRefusesUndeclaredQueryParameters: each operation of the
// OpenAPI document answers 400 invalid_request naming a query parameter it
// does not declare, and naming a declared one given twice, whatever its
// handler does with parameters.
func TestEveryOperationRefusesUndeclaredQueryParameters(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		// A fresh account per operation keeps the read limit out of the way.
		k := h.key(h.account(0), nil, ledger.Scopes...)
		key := k.Secret
		if op.Public {
			key = ""
		}
		path := concretePath(op)
		r := h.do(op.Method, path+"?dry_run=true", key, nil, "Idempotency-Key", "unknown-"+op.ID)
		if r.status != 400 {
			t.Errorf("%s %s?dry_run=true: status %d: %s", op.Method, path, r.status, r.body)
			continue
		}
		refused(t, r, "invalid_request", "dry_run")
		if len(op.Query) == 0 || op.Query[0].Array {
			continue
		}
		name := op.Query[0].Name
		r = h.do(op.Method, path+"?"+name+"=1&"+name+"=1", key, nil)
		refused(t, r, "invalid_request", name)
	}
}

// TestReadsNameEveryBadParameter: a read still names the bad parameters its
// handler finds together with those refused for every operation; and a read
// handler that never looks at its parameters cannot accept undeclared ones.
func TestReadsNameEveryBadParameter(t *testing.T) {
	t.Parallel()
	h := setup(t, api.InstallForgetfulRead)
	k := h.key(h.account(0), nil, "usage:read", "sites:read")
	m := h.do("GET", "/activity?limit=0&operation=a%00b&colour=red&outcome=x&outcome=y", k.Secret, nil).problem(t, "invalid_request", 400)
	got := fieldsNamed(m)
	for _, f := range []string{"limit", "operation", "colour", "outcome"} {
		if !slices.Contains(got, f) {
			t.Errorf("field_errors %v do not name %q", got, f)
		}
	}
	if r := h.do("GET", "/sites", k.Secret, nil); r.status != 200 {
		t.Fatalf("forgetful read: %d %s", r.status, r.body)
	}
	refused(t, h.do("GET", "/sites?colour=red", k.Secret, nil), "invalid_request", "colour")
	refused(t, h.do("GET", "/sites?limit=1&limit=2", k.Secret, nil), "invalid_request", "limit")
	refused(t, h.do("GET", "/sites?search=%00", k.Secret, nil), "invalid_request", "search")
}

// TestWritesWithUndeclaredQueryParametersChangeNothing: a purchase with
// ?dry_run=true used to charge; now it and the other writes are refused
// before anything is written or charged, and the same Idempotency-Key then
// works for the real request.
func TestWritesWithUndeclaredQueryParametersChangeNothing(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 10, []string{"NSW"}, "")
	acct := h.account(100)
	k := h.key(acct, nil, "access:acquire", "usage:read", "sites:read", "sites:write")
	site := h.apiSite(k.Secret, 151)
	body := map[string]any{"site_id": site, "section_keys": []string{"contamination"}}

	r := h.do("POST", "/access/acquisitions?dry_run=true", k.Secret, body, "Idempotency-Key", "dry-1")
	refused(t, r, "invalid_request", "dry_run")
	balance := func() any {
		return h.do("GET", "/usage", k.Secret, nil).json(t)["credits"].(map[string]any)["account_balance"]
	}
	if b := balance(); b != float64(100) {
		t.Fatalf("balance %v after a refused dry run, want 100", b)
	}
	if n := len(h.do("GET", "/purchases", k.Secret, nil).json(t)["purchases"].([]any)); n != 0 {
		t.Fatalf("%d purchases after a refused dry run", n)
	}

	refused(t, h.do("POST", "/sites?validate_only=1", k.Secret, map[string]any{"site": geometrySelector(squareHa(1, 151.02, -33.8)), "name": "New"}, "Idempotency-Key", "dry-2"), "invalid_request", "validate_only")
	refused(t, h.do("PATCH", "/sites/"+site.String()+"?force=1", k.Secret, map[string]any{"name": "Renamed"}), "invalid_request", "force")
	refused(t, h.do("DELETE", "/sites/"+site.String()+"?x=", k.Secret, nil), "invalid_request", "x")
	sites := h.do("GET", "/sites", k.Secret, nil).json(t)["sites"].([]any)
	if len(sites) != 1 || sites[0].(map[string]any)["name"] == "Renamed" {
		t.Fatalf("refused writes changed the sites: %v", sites)
	}
	h.do("GET", "/sites/"+site.String(), k.Secret, nil).json(t)

	// The refusal stored nothing under the key: the real request runs.
	if r := h.do("POST", "/access/acquisitions", k.Secret, body, "Idempotency-Key", "dry-1"); r.status != 200 {
		t.Fatalf("purchase after the refused dry run: %d %s", r.status, r.body)
	}
	if b := balance(); b != float64(90) {
		t.Fatalf("balance %v, want 90", b)
	}
	h.checkLedger()
}

// TestParametersWithNULOrInvalidUTF8 are refused naming the parameter,
// before they can reach the database (which cannot store NUL in text).
func TestParametersWithNULOrInvalidUTF8(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.flood", "flood", 0, []string{"NSW"}, "")
	acct := h.account(0)
	k := h.key(acct, nil, ledger.Scopes...)
	site := h.apiSite(k.Secret, 151).String()
	cases := []struct{ path, field string }{
		{"/sites?search=a%00b", "search"},
		{"/sites?search=%FF%FE", "search"},
		{"/layers?search=%00", "search"},
		{"/locations/search?query=abc%00", "query"},
		{"/locations/search?query=ab%C3%28", "query"},
		{"/layers/nsw.flood?site_id=" + site + "%00", "site_id"},
		{"/layers/a%00b", "layer_id"},
		{"/layers/a%FFb/schema", "layer_id"},
		{"/sites/%00", "site_id"},
		{"/queries/" + uuid.NewString() + "/layers/%00x/schema", "layer_id"},
	}
	for _, c := range cases {
		refused(t, h.do("GET", c.path, k.Secret, nil), "invalid_request", c.field)
	}
	r := h.do("PATCH", "/sites/"+url.PathEscape("\x00"), k.Secret, map[string]any{"name": "x"})
	refused(t, r, "invalid_request", "site_id")
}

// TestBodyStrictness: invalid UTF-8 and duplicate keys are invalid_json and
// NUL is invalid_request, each naming the field, and nothing is written.
func TestBodyStrictness(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 10, []string{"NSW"}, "")
	acct := h.account(100)
	k := h.key(acct, nil, "access:acquire", "usage:read", "sites:read", "sites:write")
	siteA, siteB := h.apiSite(k.Secret, 151), h.apiSite(k.Secret, 151.01)
	geometry, err := json.Marshal(geometrySelector(squareHa(1, 151, -33.8)))
	if err != nil {
		t.Fatal(err)
	}
	post := func(path, body string) response {
		return h.do("POST", path, k.Secret, []byte(body), "Idempotency-Key", nextIdem())
	}

	// Duplicate keys: the purchase used to go to the second site_id.
	r := post("/access/acquisitions", fmt.Sprintf(`{"site_id":%q,"section_keys":["contamination"],"site_id":%q}`, siteA, siteB))
	refused(t, r, "invalid_json", "site_id")
	r = post("/sites", fmt.Sprintf(`{"site":%s,"name":"a","external_reference":{"namespace":"crm","reference":"1","reference":"2"}}`, geometry))
	refused(t, r, "invalid_json", "external_reference.reference")
	r = post("/sites", `{"site":{"kind":"geometry","geometry":{"type":"Point","type":"Polygon","coordinates":[1,2]}}}`)
	refused(t, r, "invalid_json", "site.geometry.type")

	// Invalid UTF-8 used to be stored as U+FFFD.
	r = post("/sites", fmt.Sprintf("{\"site\":%s,\"name\":\"caf\xe9\"}", geometry))
	refused(t, r, "invalid_json", "name")
	r = post("/sites", fmt.Sprintf("{\"site\":%s,\"external_reference\":{\"namespace\":\"crm\",\"reference\":\"\xff\"}}", geometry))
	refused(t, r, "invalid_json", "external_reference.reference")

	// NUL used to reach PostgreSQL and come back as a retryable 503.
	r = post("/sites", fmt.Sprintf(`{"site":%s,"name":"a\u0000b"}`, geometry))
	refused(t, r, "invalid_request", "name")
	r = post("/sites", fmt.Sprintf(`{"site":%s,"external_reference":{"namespace":"c\u0000","reference":"r"}}`, geometry))
	refused(t, r, "invalid_request", "external_reference.namespace")
	r = post("/locations/resolve", `{"location":{"kind":"cadastre","jurisdiction":"NSW","cadastre_ids":["1/DP1\u0000"]}}`)
	refused(t, r, "invalid_request", "location.cadastre_ids[0]")
	r = h.do("PATCH", "/sites/"+siteA.String(), k.Secret, []byte(`{"name":"x\u0000"}`))
	refused(t, r, "invalid_request", "name")

	// Nothing was charged, created or renamed.
	u := h.do("GET", "/usage", k.Secret, nil).json(t)["credits"].(map[string]any)
	if u["account_balance"] != float64(100) {
		t.Fatalf("balance %v, want 100", u["account_balance"])
	}
	sites := h.do("GET", "/sites", k.Secret, nil).json(t)["sites"].([]any)
	if len(sites) != 2 {
		t.Fatalf("%d sites, want the 2 made directly", len(sites))
	}
	for _, s := range sites {
		if s.(map[string]any)["name"] != nil {
			t.Fatalf("a refused write named a site: %v", s)
		}
	}
	h.checkLedger()
}

// TestShortBodyIsAnsweredWithoutWaitingOutTheReadTimeout: a request whose
// Content-Length promises more than it sends gets a 400 Problem (or a
// closed connection) once BodyReadTimeout passes, not the 30 s ReadTimeout.
// The read deadline below only keeps a regression from hanging the suite.
func TestShortBodyIsAnsweredWithoutWaitingOutTheReadTimeout(t *testing.T) {
	t.Parallel()
	h := setupConfig(t, func(c *api.Config) { c.BodyReadTimeout = 50 * time.Millisecond })
	k := h.key(h.account(0), nil, "sites:read", "sites:write")
	addr := strings.TrimPrefix(strings.TrimSuffix(h.base, api.BasePath), "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/sites HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: short\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":12", k.Secret)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	req, _ := http.NewRequest("POST", h.base+"/sites", nil)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return // closed without an answer: also prompt
		}
		t.Fatalf("no answer to a short body: %v", err)
	}
	body := h.v.CheckResponse(t, resp)
	r := response{status: resp.StatusCode, header: resp.Header, body: body}
	r.problem(t, "invalid_request", 400)
	assertProblemShape(t, r)
}
