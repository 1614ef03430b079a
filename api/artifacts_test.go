package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/api"
	"siteenv/artifacts"
	"siteenv/internal/syncbuf"
	"siteenv/ledger"
	"siteenv/store"
	"siteenv/store/s3test"
)

// artifactHarness is a server with a real store, an account holding one
// report PDF (of dataset layer.a) and a key that may read it.
type artifactHarness struct {
	*harness
	st   store.Store
	acct uuid.UUID
	k    ledger.NewKey
	art  ledger.Artifact
	data []byte
	logs *syncBuffer
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer = syncbuf.Buffer

func setupArtifacts(t testing.TB, size int) *artifactHarness {
	t.Helper()
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return setupArtifactsIn(t, st, size)
}

func setupArtifactsIn(t testing.TB, st store.Store, size int) *artifactHarness {
	t.Helper()
	logs := &syncBuffer{}
	h := setup(t, func(s *api.Server) {
		api.SetStore(s, st)
		api.SetLogger(s, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	})
	ah := &artifactHarness{harness: h, st: st, logs: logs}
	ah.acct = h.account(0)
	ah.k = h.key(ah.acct, nil, ledger.ScopeArtifactsRead, ledger.ScopeUsageRead)
	ah.data = randomBytes(size, 1)
	ah.art = ah.put(ah.acct, "site-report.pdf", ah.data, []string{"layer.a"})
	return ah
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// put stores an artifact the way report builds do.
func (h *artifactHarness) put(account uuid.UUID, name string, data []byte, datasets []string) ledger.Artifact {
	h.t.Helper()
	rev := 1
	rep, revID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	a, err := artifacts.Put(h.ctx, h.st, h.led, artifacts.Params{Account: account, ReportID: &rep, RevisionID: &revID, Revision: &rev,
		Filename: name, MediaType: ledger.MediaPDF, DatasetIDs: datasets}, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

// mint creates a delivery and returns its path below the API base.
func (h *artifactHarness) mint(key string, id uuid.UUID) string {
	h.t.Helper()
	resp := h.do("POST", "/artifacts/"+id.String()+"/deliveries", key, "{}")
	if resp.status != 201 {
		h.t.Fatalf("mint: %d %s", resp.status, resp.body)
	}
	return strings.TrimPrefix(resp.json(h.t)["url"].(string), api.BasePath)
}

var deliveryURLRE = regexp.MustCompile(`^/api/v1/deliveries/dl_[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$`)

func TestGetArtifact(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 1000)
	other := h.account(0)
	otherKey := h.key(other, nil, ledger.ScopeArtifactsRead)
	historical := h.put(h.acct, "legacy.pdf", []byte("%PDF-1.4 old"), nil) // unknown dataset scope
	empty := h.put(h.acct, "empty.pdf", nil, []string{})

	resp := h.do("GET", "/artifacts/"+h.art.ID.String(), h.k.Secret, nil)
	if resp.status != 200 {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	a := resp.json(t)["artifact"].(map[string]any)
	sum := sha256.Sum256(h.data)
	if a["artifact_id"] != h.art.ID.String() || a["sha256"] != hex.EncodeToString(sum[:]) || a["size"] != float64(1000) ||
		a["media_type"] != "application/pdf" || a["filename"] != "site-report.pdf" || a["revision"] != float64(1) ||
		a["report_id"] != h.art.ReportID.String() {
		t.Fatalf("artifact = %v", a)
	}
	if bytes.Contains(resp.body, []byte("artifacts/")) || bytes.Contains(resp.body, []byte(h.acct.String())) {
		t.Fatalf("metadata leaks the storage location: %s", resp.body)
	}

	tests := []struct {
		name   string
		key    string
		id     string
		status int
		code   string
	}{
		{"another account's artifact", otherKey.Secret, h.art.ID.String(), 404, "not_found"},
		{"unknown id", h.k.Secret, uuid.Must(uuid.NewV7()).String(), 404, "not_found"},
		{"malformed id", h.k.Secret, "not-a-uuid", 400, "invalid_request"},
		{"no key", "", h.art.ID.String(), 401, "unauthenticated"},
		{"no artifacts:read", h.key(h.acct, nil, ledger.ScopeReportsRead).Secret, h.art.ID.String(), 403, "scope_insufficient"},
		{"restricted key permitting its dataset", h.key(h.acct, []string{"layer.a", "layer.b"}, ledger.ScopeArtifactsRead).Secret, h.art.ID.String(), 200, ""},
		{"restricted key without its dataset", h.key(h.acct, []string{"layer.b"}, ledger.ScopeArtifactsRead).Secret, h.art.ID.String(), 404, "not_found"},
		{"empty restriction", h.key(h.acct, []string{}, ledger.ScopeArtifactsRead).Secret, h.art.ID.String(), 404, "not_found"},
		{"unknown scope, unrestricted key", h.k.Secret, historical.ID.String(), 200, ""},
		{"unknown scope, restricted key", h.key(h.acct, []string{"layer.a"}, ledger.ScopeArtifactsRead).Secret, historical.ID.String(), 404, "not_found"},
		{"no datasets, restricted key", h.key(h.acct, []string{}, ledger.ScopeArtifactsRead).Secret, empty.ID.String(), 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.do("GET", "/artifacts/"+tc.id, tc.key, nil)
			if tc.code == "" {
				if resp.status != tc.status {
					t.Fatalf("status %d, want %d: %s", resp.status, tc.status, resp.body)
				}
				return
			}
			resp.problem(t, tc.code, tc.status)
		})
	}
}

func TestCreateDelivery(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 1000)
	resp := h.do("POST", "/artifacts/"+h.art.ID.String()+"/deliveries", h.k.Secret, "{}")
	if resp.status != 201 {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	d := resp.json(t)
	if !deliveryURLRE.MatchString(d["url"].(string)) {
		t.Fatalf("url %q is not a capability link", d["url"])
	}
	if d["sha256"] != h.art.SHA256 || d["artifact_id"] != h.art.ID.String() {
		t.Fatalf("delivery = %v", d)
	}
	if want := h.clock.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339); d["expires_at"] != want {
		t.Fatalf("expires_at %v, want %s", d["expires_at"], want)
	}
	// The capability names its delivery: dl_<delivery_id>.<secret>.
	if !strings.Contains(d["url"].(string), "/dl_"+d["delivery_id"].(string)+".") {
		t.Fatalf("url %v does not carry delivery_id %v", d["url"], d["delivery_id"])
	}
	if resp.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("Cache-Control %q", resp.header.Get("Cache-Control"))
	}
	// Two mints are two distinct secrets.
	if a, b := h.mint(h.k.Secret, h.art.ID), h.mint(h.k.Secret, h.art.ID); a == b {
		t.Fatal("two deliveries share a capability")
	}

	other := h.account(0)
	path := "/artifacts/" + h.art.ID.String() + "/deliveries"
	tests := []struct {
		name   string
		key    string
		path   string
		body   any
		ctype  string
		status int
		code   string
		field  string
	}{
		{"unknown field", h.k.Secret, path, `{"ttl": 60}`, "", 400, "invalid_request", "ttl"},
		{"not an object", h.k.Secret, path, `[]`, "", 400, "invalid_request", "body"},
		{"malformed JSON", h.k.Secret, path, `{`, "", 400, "invalid_json", ""},
		{"empty body", h.k.Secret, path, ``, "", 400, "invalid_json", ""},
		{"not JSON", h.k.Secret, path, `{}`, "text/plain", 415, "unsupported_media_type", ""},
		{"another account's artifact", h.key(other, nil, ledger.ScopeArtifactsRead).Secret, path, `{}`, "", 404, "not_found", ""},
		{"restricted key", h.key(h.acct, []string{"layer.b"}, ledger.ScopeArtifactsRead).Secret, path, `{}`, "", 404, "not_found", ""},
		{"no artifacts:read", h.key(h.acct, nil, ledger.ScopeReportsRead).Secret, path, `{}`, "", 403, "scope_insufficient", ""},
		{"unknown artifact", h.k.Secret, "/artifacts/" + uuid.Must(uuid.NewV7()).String() + "/deliveries", `{}`, "", 404, "not_found", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.ctype != "" {
				hdr = []string{"Content-Type", tc.ctype}
			}
			p := h.do("POST", tc.path, tc.key, tc.body, hdr...).problem(t, tc.code, tc.status)
			if tc.field != "" {
				fe := p["field_errors"].([]any)
				if len(fe) != 1 || fe[0].(map[string]any)["field"] != tc.field {
					t.Fatalf("field_errors %v, want %s", fe, tc.field)
				}
			}
		})
	}
}

func TestDeliveryDownload(t *testing.T) {
	t.Parallel()
	const size = 300_000
	h := setupArtifacts(t, size)
	link := h.mint(h.k.Secret, h.art.ID)
	sum := sha256.Sum256(h.data)
	digest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	etag := `"` + hex.EncodeToString(sum[:]) + `"`

	// The full file, fetched without any key.
	resp := h.do("GET", link, "", nil)
	if resp.status != 200 || !bytes.Equal(resp.body, h.data) {
		t.Fatalf("status %d, %d bytes", resp.status, len(resp.body))
	}
	for k, want := range map[string]string{
		"Content-Type": "application/pdf", "Content-Length": fmt.Sprint(size), "Accept-Ranges": "bytes",
		"Repr-Digest": digest, "ETag": etag, "Referrer-Policy": "no-referrer", "Cache-Control": "private, no-store",
		"Content-Disposition": `attachment; filename="site-report.pdf"`,
	} {
		if got := resp.header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	// A key sent along changes nothing (the capability alone authorizes).
	other := h.key(h.account(0), nil, ledger.ScopeArtifactsRead)
	if resp := h.do("GET", link, other.Secret, nil); resp.status != 200 || !bytes.Equal(resp.body, h.data) {
		t.Fatalf("with an unrelated key: status %d", resp.status)
	}

	ranges := []struct {
		name, rng, ifRange string
		status             int
		first, last        int // inclusive, for 206
		code               string
	}{
		{"first byte", "bytes=0-0", "", 206, 0, 0, ""},
		{"last byte", "bytes=299999-299999", "", 206, size - 1, size - 1, ""},
		{"middle", "bytes=1000-1999", "", 206, 1000, 1999, ""},
		{"open ended", "bytes=299000-", "", 206, 299000, size - 1, ""},
		{"suffix", "bytes=-500", "", 206, size - 500, size - 1, ""},
		{"suffix longer than the file", "bytes=-400000", "", 206, 0, size - 1, ""},
		{"huge suffix", "bytes=-99999999999999999999", "", 206, 0, size - 1, ""},
		{"last beyond the end is clamped", "bytes=100-999999999", "", 206, 100, size - 1, ""},
		{"huge last is clamped", "bytes=100-99999999999999999999", "", 206, 100, size - 1, ""},
		{"If-Range matches", "bytes=0-9", etag, 206, 0, 9, ""},
		{"If-Range stale: full file", "bytes=0-9", `"0000"`, 200, 0, size - 1, ""},
		{"If-Range date: full file", "bytes=0-9", "Mon, 02 Mar 2026 01:02:03 GMT", 200, 0, size - 1, ""},
		{"other unit ignored", "items=0-9", "", 200, 0, size - 1, ""},
		{"beyond the end", "bytes=300000-", "", 416, 0, 0, "range_not_satisfiable"},
		{"far beyond the end", "bytes=999999-1000000", "", 416, 0, 0, "range_not_satisfiable"},
		{"empty suffix", "bytes=-0", "", 416, 0, 0, "range_not_satisfiable"},
		{"several ranges", "bytes=0-1,5-6", "", 416, 0, 0, "range_not_satisfiable"},
		{"several ranges, one bad", "bytes=0-1, 999999-", "", 416, 0, 0, "range_not_satisfiable"},
		{"reversed", "bytes=9-2", "", 400, 0, 0, "invalid_request"},
		{"not numbers", "bytes=a-b", "", 400, 0, 0, "invalid_request"},
		{"no dash", "bytes=5", "", 400, 0, 0, "invalid_request"},
		{"bare dash", "bytes=-", "", 400, 0, 0, "invalid_request"},
		{"negative", "bytes=--5", "", 400, 0, 0, "invalid_request"},
	}
	for _, tc := range ranges {
		t.Run(tc.name, func(t *testing.T) {
			hdr := []string{"Range", tc.rng}
			if tc.ifRange != "" {
				hdr = append(hdr, "If-Range", tc.ifRange)
			}
			resp := h.do("GET", link, "", nil, hdr...)
			if tc.code != "" {
				resp.problem(t, tc.code, tc.status)
				if tc.status == 416 && resp.header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
					t.Fatalf("Content-Range %q", resp.header.Get("Content-Range"))
				}
				return
			}
			if resp.status != tc.status {
				t.Fatalf("status %d, want %d: %.200s", resp.status, tc.status, resp.body)
			}
			if !bytes.Equal(resp.body, h.data[tc.first:tc.last+1]) {
				t.Fatalf("body: %d bytes, want bytes %d-%d", len(resp.body), tc.first, tc.last)
			}
			if resp.header.Get("Repr-Digest") != digest || resp.header.Get("ETag") != etag {
				t.Fatalf("Repr-Digest %q ETag %q", resp.header.Get("Repr-Digest"), resp.header.Get("ETag"))
			}
			if tc.status == 206 {
				if want := fmt.Sprintf("bytes %d-%d/%d", tc.first, tc.last, size); resp.header.Get("Content-Range") != want {
					t.Fatalf("Content-Range %q, want %q", resp.header.Get("Content-Range"), want)
				}
			}
		})
	}
}

func TestDeliveryCapabilityChecks(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 5000)
	link := h.mint(h.k.Secret, h.art.ID)
	capability := strings.TrimPrefix(link, "/deliveries/")
	id, secret, _ := strings.Cut(strings.TrimPrefix(capability, "dl_"), ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[len(b)-1] == 'A' {
			b[len(b)-1] = 'B'
		} else {
			b[len(b)-1] = 'A'
		}
		return string(b)
	}
	otherID := uuid.Must(uuid.NewV7()).String()
	for _, tc := range []struct{ name, path string }{
		{"tampered secret", "/deliveries/dl_" + id + "." + flip(secret)},
		{"another delivery id", "/deliveries/dl_" + otherID + "." + secret},
		{"wrong prefix", "/deliveries/dx_" + id + "." + secret},
		{"short secret", "/deliveries/dl_" + id + "." + secret[1:]},
		{"uppercase", "/deliveries/" + strings.ToUpper(capability)},
		{"not a capability", "/deliveries/x"},
		{"the delivery id alone", "/deliveries/" + id},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.do("GET", tc.path, "", nil).problem(t, "not_found", 404)
			// A valid key never stands in for the capability.
			h.do("GET", tc.path, h.k.Secret, nil).problem(t, "not_found", 404)
		})
	}

	// Expiry: five minutes on the replaceable clock, checked on every request.
	h.clock.Advance(5*time.Minute - time.Second)
	if resp := h.do("GET", link, "", nil, "Range", "bytes=0-9"); resp.status != 206 {
		t.Fatalf("just before expiry: %d", resp.status)
	}
	h.clock.Advance(time.Second)
	h.do("GET", link, "", nil).problem(t, "delivery_expired", 410)
	h.do("GET", link, "", nil, "Range", "bytes=0-9").problem(t, "delivery_expired", 410)

	// Revoking the minting key ends its links at once, full or ranged; a
	// link of another key stays valid.
	second := h.key(h.acct, nil, ledger.ScopeArtifactsRead)
	link1, link2 := h.mint(h.k.Secret, h.art.ID), h.mint(second.Secret, h.art.ID)
	if resp := h.do("GET", link1, "", nil); resp.status != 200 {
		t.Fatalf("fresh link: %d", resp.status)
	}
	if err := h.led.RevokeKey(h.ctx, h.k.KeyID); err != nil {
		t.Fatal(err)
	}
	h.do("GET", link1, "", nil).problem(t, "credential_revoked", 401)
	h.do("GET", link1, "", nil, "Range", "bytes=0-0").problem(t, "credential_revoked", 401)
	if resp := h.do("GET", link2, "", nil); resp.status != 200 {
		t.Fatalf("other key's link after revocation: %d", resp.status)
	}
	// A delivery revoked on its own.
	d2, err := h.led.Delivery(h.ctx, strings.TrimPrefix(link2, "/deliveries/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.led.RevokeDelivery(h.ctx, d2.ID); err != nil {
		t.Fatal(err)
	}
	h.do("GET", link2, "", nil).problem(t, "credential_revoked", 401)
	// The revoked key can mint no more.
	h.do("POST", "/artifacts/"+h.art.ID.String()+"/deliveries", h.k.Secret, "{}").problem(t, "credential_revoked", 401)
}

// TestDeliveryCapabilityNeverLogged drives every outcome of a download with
// debug logging on and reads the log and the audit feed for the secret.
func TestDeliveryCapabilityNeverLogged(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 5000)
	link := h.mint(h.k.Secret, h.art.ID)
	capability := strings.TrimPrefix(link, "/deliveries/")
	_, secret, _ := strings.Cut(capability, ".")
	h.do("GET", link, "", nil)
	h.do("GET", link, "", nil, "Range", "bytes=0-0")
	h.do("GET", link, "", nil, "Range", "bytes=0-1,2-3")
	h.do("GET", link+"?x=1", "", nil)
	h.do("GET", link+"x", "", nil)
	// The stored file goes missing: an internal error, logged.
	if err := h.st.Delete(h.ctx, h.art.StorageKey); err != nil {
		t.Fatal(err)
	}
	h.do("GET", link, "", nil).problem(t, "internal_error", 500)
	h.clock.Advance(time.Hour)
	h.do("GET", link, "", nil)

	logs := h.logs.String()
	if !strings.Contains(logs, "internal error") {
		t.Fatalf("the missing file was not logged; logs:\n%s", logs)
	}
	if strings.Contains(logs, secret) || strings.Contains(logs, capability) {
		t.Fatalf("a capability reached the log:\n%s", logs)
	}
	act := h.do("GET", "/activity?limit=100", h.k.Secret, nil)
	if act.status != 200 {
		t.Fatalf("activity: %d %s", act.status, act.body)
	}
	if bytes.Contains(act.body, []byte(secret)) || bytes.Contains(act.body, []byte("deliveries/")) {
		t.Fatalf("a capability reached the audit feed: %s", act.body)
	}
	if !bytes.Contains(act.body, []byte("create_delivery")) {
		t.Fatalf("minting is not audited: %s", act.body)
	}
	// The fasthttp logger redacts request lines too.
	line := "error when serving connection: GET /api/v1/deliveries/" + capability + " HTTP/1.1 and " + capability
	if got := api.RedactCapabilities(line); strings.Contains(got, secret) || strings.Contains(got, "dl_") {
		t.Fatalf("redacted = %q", got)
	}
}

// TestDeliveryFromS3 serves downloads from a real S3 server (versitygw):
// the full file and ranges come through GetRange's ranged GETs.
func TestDeliveryFromS3(t *testing.T) {
	t.Parallel()
	endpoint, ak, sk, bucket := s3test.Start(t)
	st, err := store.OpenStore(context.Background(), "s3://"+bucket+"/siteenv", store.S3Config{Endpoint: "http://" + endpoint, AccessKey: ak, SecretKey: sk, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	const size = 3<<20 + 17
	h := setupArtifactsIn(t, st, size)
	link := h.mint(h.k.Secret, h.art.ID)
	if resp := h.do("GET", link, "", nil); resp.status != 200 || !bytes.Equal(resp.body, h.data) {
		t.Fatalf("full: status %d, %d bytes", resp.status, len(resp.body))
	}
	for _, r := range [][2]int{{0, 0}, {size - 1, size - 1}, {1 << 20, 2<<20 + 5}} {
		resp := h.do("GET", link, "", nil, "Range", fmt.Sprintf("bytes=%d-%d", r[0], r[1]))
		if resp.status != 206 || !bytes.Equal(resp.body, h.data[r[0]:r[1]+1]) {
			t.Fatalf("range %v: status %d, %d bytes", r, resp.status, len(resp.body))
		}
	}
	resp := h.do("GET", link, "", nil, "Range", "bytes=-10")
	if resp.status != 206 || !bytes.Equal(resp.body, h.data[size-10:]) {
		t.Fatalf("suffix: status %d", resp.status)
	}
	h.do("GET", link, "", nil, "Range", fmt.Sprintf("bytes=%d-", size)).problem(t, "range_not_satisfiable", 416)
}

func TestArtifactsPutRefusals(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 10)
	for _, tc := range []struct {
		name string
		p    artifacts.Params
	}{
		{"slash in filename", artifacts.Params{Account: h.acct, Filename: "a/b.pdf", MediaType: ledger.MediaPDF}},
		{"quote in filename", artifacts.Params{Account: h.acct, Filename: `a".pdf`, MediaType: ledger.MediaPDF}},
		{"media type", artifacts.Params{Account: h.acct, Filename: "a.txt", MediaType: "text/plain"}},
		{"unknown account", artifacts.Params{Account: uuid.Must(uuid.NewV7()), Filename: "a.pdf", MediaType: ledger.MediaPDF}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := h.st.List(context.Background(), "artifacts/")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := artifacts.Put(h.ctx, h.st, h.led, tc.p, strings.NewReader("x"), 1); err == nil {
				t.Fatal("Put succeeded")
			}
			after, _ := h.st.List(context.Background(), "artifacts/")
			if len(after) != len(before) {
				t.Fatalf("a refused Put left a file: %d -> %d objects", len(before), len(after))
			}
		})
	}
}

// TestDeliveryEmptyFile: an empty file downloads whole; any range of it is
// unsatisfiable.
func TestDeliveryEmptyFile(t *testing.T) {
	t.Parallel()
	h := setupArtifacts(t, 0)
	link := h.mint(h.k.Secret, h.art.ID)
	resp := h.do("GET", link, "", nil)
	if resp.status != 200 || len(resp.body) != 0 || resp.header.Get("Content-Length") != "0" {
		t.Fatalf("status %d, %d bytes, Content-Length %q", resp.status, len(resp.body), resp.header.Get("Content-Length"))
	}
	for _, rng := range []string{"bytes=0-0", "bytes=-1", "bytes=0-"} {
		resp := h.do("GET", link, "", nil, "Range", rng)
		resp.problem(t, "range_not_satisfiable", 416)
		if resp.header.Get("Content-Range") != "bytes */0" {
			t.Fatalf("%s: Content-Range %q", rng, resp.header.Get("Content-Range"))
		}
	}
}
