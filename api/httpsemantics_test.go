package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"siteenv/api"
	"siteenv/api/openapi"
	"siteenv/ledger"
)

// TestHeadAnswersEveryGetRoute: HEAD on every GET operation of the document
// answers as GET does - the same status and Content-Type - with no body,
// and every answer is valid for the document.
func TestHeadAnswersEveryGetRoute(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 1000)
	capability := strings.TrimPrefix(h.mint(h.k.Secret, h.art.ID), "/deliveries/")
	k := h.key(h.acct, nil, ledger.Scopes...)
	site := h.do("POST", "/sites", k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": 151.0022684, "latitude": -33.8146291}},
		"Idempotency-Key", "head-site")
	if site.status != 200 {
		t.Fatalf("POST /sites: %d %s", site.status, site.body)
	}
	siteID := site.json(t)["site"].(map[string]any)["site_id"].(string)
	values := map[string]string{
		"site_id": siteID, "section_key": "water", "layer_id": "layer.a", "query_id": uuid.NewString(),
		"purchase_id": uuid.NewString(), "report_id": uuid.NewString(), "artifact_id": h.art.ID.String(), "capability": capability,
	}
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, op := range ops {
		if op.Method != "GET" {
			continue
		}
		n++
		path := op.Path
		for name, v := range values {
			path = strings.ReplaceAll(path, "{"+name+"}", v)
		}
		if strings.Contains(path, "{") {
			t.Fatalf("%s: no value for a parameter of %s", op.ID, op.Path)
		}
		// One representation for both (Go's client asks GETs, not HEADs, for gzip).
		get := h.do("GET", path, k.Secret, nil, "Accept-Encoding", "identity")
		head := h.do("HEAD", path, k.Secret, nil, "Accept-Encoding", "identity")
		if head.status != get.status || head.header.Get("Content-Type") != get.header.Get("Content-Type") {
			t.Errorf("%s: HEAD %d %q, GET %d %q", op.ID, head.status, head.header.Get("Content-Type"), get.status, get.header.Get("Content-Type"))
		}
		if len(head.body) != 0 {
			t.Errorf("%s: HEAD answered a %d-byte body", op.ID, len(head.body))
		}
		if head.header.Get("ETag") != get.header.Get("ETag") {
			t.Errorf("%s: HEAD ETag %q, GET %q", op.ID, head.header.Get("ETag"), get.header.Get("ETag"))
		}
		if op.ID == "get_site" && head.status != 200 {
			t.Errorf("HEAD %s: %d", path, head.status)
		}
	}
	if n < 20 {
		t.Fatalf("only %d GET operations", n)
	}
	// 405 lists HEAD beside GET.
	r := h.do("DELETE", "/context", k.Secret, nil)
	if r.status != 405 || !strings.Contains(r.header.Get("Allow"), "HEAD") {
		t.Fatalf("DELETE /context: %d, Allow %q", r.status, r.header.Get("Allow"))
	}
}

// TestDeliveryIfNoneMatch: GET /deliveries/{capability} with the artifact's
// ETag in If-None-Match answers 304 without a body (also for HEAD, and
// whatever Range asks); another ETag gets the file.
func TestDeliveryIfNoneMatch(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 5000)
	path := h.mint(h.k.Secret, h.art.ID)
	full := h.do("GET", path, "", nil)
	etag := full.header.Get("ETag")
	if full.status != 200 || etag != `"`+h.art.SHA256+`"` {
		t.Fatalf("GET: %d, ETag %q", full.status, etag)
	}
	for _, tc := range []struct {
		method, inm, rng string
		status           int
	}{
		{"GET", etag, "", 304},
		{"GET", `W/` + etag, "", 304},
		{"GET", `"other", ` + etag, "", 304},
		{"GET", "*", "", 304},
		{"GET", etag, "bytes=0-9", 304},
		{"HEAD", etag, "", 304},
		{"GET", `"other"`, "", 200},
		{"GET", `"other"`, "bytes=0-9", 206},
	} {
		hdr := []string{"If-None-Match", tc.inm}
		if tc.rng != "" {
			hdr = append(hdr, "Range", tc.rng)
		}
		r := h.do(tc.method, path, "", nil, hdr...)
		if r.status != tc.status || r.header.Get("ETag") != etag {
			t.Errorf("%s If-None-Match %s Range %q: %d, ETag %q; want %d", tc.method, tc.inm, tc.rng, r.status, r.header.Get("ETag"), tc.status)
		}
		if tc.status == 304 && len(r.body) != 0 {
			t.Errorf("304 with a %d-byte body", len(r.body))
		}
	}
}

// TestDeliveryCreatedHasLocation: 201 from POST /artifacts/{id}/deliveries
// names the download link in Location, as the body's url.
func TestDeliveryCreatedHasLocation(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 100)
	r := h.do("POST", "/artifacts/"+h.art.ID.String()+"/deliveries", h.k.Secret, "{}")
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if loc := r.header.Get("Location"); loc == "" || loc != r.json(t)["url"] {
		t.Fatalf("Location %q, url %v", loc, r.json(t)["url"])
	}
	if got := h.do("GET", strings.TrimPrefix(r.header.Get("Location"), api.BasePath), "", nil); got.status != 200 || string(got.body) != string(h.data) {
		t.Fatalf("GET Location: %d", got.status)
	}
}

// TestTwoAuthorizationHeadersRefused: a request with two Authorization
// headers is refused 400 whichever key comes first - never authenticated by
// the first one while a proxy might have read the second - on reads and
// writes alike.
func TestTwoAuthorizationHeadersRefused(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 100)
	other := h.key(h.account(0), nil, ledger.Scopes...)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/context", ""},
		{"HEAD", "/context", ""},
		{"POST", "/artifacts/" + h.art.ID.String() + "/deliveries", "{}"},
	} {
		var body *strings.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		req, err := http.NewRequestWithContext(h.ctx, tc.method, h.base+tc.path, nil)
		if body != nil {
			req, err = http.NewRequestWithContext(h.ctx, tc.method, h.base+tc.path, body)
			req.Header.Set("Content-Type", "application/json")
		}
		if err != nil {
			t.Fatal(err)
		}
		req.Header["Authorization"] = []string{"Bearer " + h.k.Secret, "Bearer " + other.Secret}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := h.v.CheckResponse(t, resp)
		if resp.StatusCode != 400 {
			t.Errorf("%s %s with two Authorization headers: %d %s", tc.method, tc.path, resp.StatusCode, b)
			continue
		}
		if tc.method != "HEAD" {
			p := response{status: resp.StatusCode, header: resp.Header, body: b}.problem(t, "invalid_request", 400)
			if fe := fieldsNamed(p); len(fe) != 1 || fe[0] != "Authorization" {
				t.Errorf("%s %s field errors %v", tc.method, tc.path, fe)
			}
		}
	}
	// Nothing was minted by either key.
	if r := h.do("GET", "/artifacts/"+h.art.ID.String(), h.k.Secret, nil); r.status != 200 {
		t.Fatalf("GET artifact: %d", r.status)
	}
}

// TestJSONBodyMustBeApplicationJSON: a JSON request body is accepted only as
// application/json (a charset of utf-8 allowed); problem+json and other
// +json types are unsupported_media_type.
func TestJSONBodyMustBeApplicationJSON(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 100)
	path := "/artifacts/" + h.art.ID.String() + "/deliveries"
	for _, tc := range []struct {
		ctype  string
		status int
	}{
		{"application/json", 201},
		{"application/json; charset=utf-8", 201},
		{"Application/JSON", 201},
		{"application/problem+json", 415},
		{"application/merge-patch+json", 415},
		{"application/vnd.api+json", 415},
		{"text/json", 415},
		{"text/plain", 415},
	} {
		r := h.do("POST", path, h.k.Secret, "{}", "Content-Type", tc.ctype)
		if r.status != tc.status {
			t.Errorf("Content-Type %q: %d %s, want %d", tc.ctype, r.status, r.body, tc.status)
		}
		if tc.status == 415 {
			r.problem(t, "unsupported_media_type", 415)
		}
	}
}
