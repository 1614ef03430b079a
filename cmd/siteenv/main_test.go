package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"siteenv/api/openapi/openapitest"
)

// cli runs one command in-process and decodes its JSON output.
func cli(t *testing.T, args ...string) (map[string]any, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v printed %q, not one JSON object", args, out.String())
	}
	if strings.Count(strings.TrimSpace(out.String()), "\n") != 0 {
		t.Fatalf("%v printed more than one line: %q", args, out.String())
	}
	return m, nil
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeAndAdminShareTheEmbeddedCluster is the newcomer's path: serve with
// the embedded defaults, create a key with admin while it runs, call the API.
func TestServeAndAdminShareTheEmbeddedCluster(t *testing.T) {
	t.Setenv("SITEENV_DATABASE_URL", "")
	t.Setenv("SITEENV_SECRET", "")
	dir := reachableTempDir(t)
	dataDir := filepath.Join(dir, "var")
	t.Setenv("SITEENV_DATA_DIR", dataDir)
	addr := freeAddr(t)

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	var serveOut bytes.Buffer
	var serveLog lockedBuffer
	go func() { served <- run(ctx, []string{"serve", "--addr", addr, "--demo"}, &serveOut, &serveLog) }()
	base := "http://" + addr + "/api/v1"
	// Loading the demo takes ~20 s alone and over a minute on a loaded
	// 2-core machine; this bounds a hang, it does not time the load.
	deadline := time.Now().Add(180 * time.Second)
	for {
		// Its own "serving" line first: freeAddr's port, free when picked,
		// may answer for another test's server until this one binds it
		// (once, a GET answered before the demo key was written).
		if strings.Contains(serveLog.String(), "msg=serving ") {
			resp, err := http.Get(base + "/openapi.json")
			if err == nil {
				resp.Body.Close()
				break
			}
		}
		select {
		case err := <-served:
			t.Fatalf("serve exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not start listening")
		}
		time.Sleep(100 * time.Millisecond)
	}
	v := openapitest.New(t)
	get := func(path, key string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, v.CheckResponse(t, resp)
	}

	// The demo key works.
	demoKey, err := os.ReadFile(filepath.Join(dataDir, "demo-key"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := get("/context", strings.TrimSpace(string(demoKey))); resp.StatusCode != 200 {
		t.Fatalf("demo key: %d %s", resp.StatusCode, body)
	} else if !strings.Contains(string(body), `"report_price_credits":25`) {
		t.Fatalf("the demo does not price reports (25 credits): %s", body)
	}
	if strings.Contains(serveOut.String(), strings.TrimSpace(string(demoKey))) {
		t.Fatal("serve printed the demo key; it belongs only in the 0600 file")
	}

	acct, err := cli(t, "admin", "account", "create", "--name", "Acme Pty Ltd", "--credits", "500")
	if err != nil {
		t.Fatal(err)
	}
	id := acct["account_id"].(string)
	key, err := cli(t, "admin", "key", "create", "--account", id, "--scopes", "all", "--spend-limit", "200")
	if err != nil {
		t.Fatal(err)
	}
	secret := key["key"].(string)
	resp, body := get("/context", secret)
	if resp.StatusCode != 200 {
		t.Fatalf("context: %d %s", resp.StatusCode, body)
	}
	var c map[string]any
	_ = json.Unmarshal(body, &c)
	if c["account"].(map[string]any)["id"] != id || c["integration_credit_limit"] != float64(200) || c["credit_balance"] != float64(500) {
		t.Fatalf("context %s", body)
	}

	// --datasets names layers of the catalogue: a typo is refused, nothing created.
	if _, err := cli(t, "admin", "key", "create", "--account", id, "--scopes", "sites:read", "--datasets", "nsw-flood-planning-area,no-such-layer"); err == nil ||
		!strings.Contains(err.Error(), "no-such-layer") || strings.Contains(err.Error(), "nsw-flood-planning-area,") {
		t.Fatalf("--datasets with an unknown layer: %v", err)
	}
	if _, err := cli(t, "admin", "key", "create", "--account", id, "--scopes", "sites:read", "--datasets", "nsw-flood-planning-area,au-groundwater-bores"); err != nil {
		t.Fatalf("--datasets with demo layers: %v", err)
	}

	// An additional key on the same integration shares the cap.
	k2, err := cli(t, "admin", "key", "create", "--account", id, "--scopes", "sites:read", "--datasets", "none", "--integration", key["integration_id"].(string), "--principal", "human")
	if err != nil {
		t.Fatal(err)
	}
	if k2["integration_id"] != key["integration_id"] {
		t.Fatal("--integration ignored")
	}
	_, body = get("/context", k2["key"].(string))
	_ = json.Unmarshal(body, &c)
	if c["principal_kind"] != "human" || c["integration_credit_limit"] != float64(200) || len(c["dataset_ids"].([]any)) != 0 {
		t.Fatalf("second key context %s", body)
	}

	g, err := cli(t, "admin", "credits", "grant", "--account", id, "--amount", "25")
	if err != nil || g["credit_balance"] != float64(525) {
		t.Fatalf("grant %v %v", g, err)
	}
	if _, err := cli(t, "admin", "section", "set", "--key", "flood", "--name", "Flood", "--price", "30"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli(t, "admin", "config", "set", "report-price", "45"); err != nil {
		t.Fatal(err)
	}
	p, err := cli(t, "admin", "portfolio", "create", "--account", id, "--name", "Coastal sites")
	if err != nil || p["portfolio_id"] == nil {
		t.Fatalf("portfolio %v %v", p, err)
	}
	if _, err := cli(t, "admin", "key", "revoke", "--key-id", key["key_id"].(string)); err != nil {
		t.Fatal(err)
	}
	if resp, body := get("/context", secret); resp.StatusCode != 401 || !bytes.Contains(body, []byte("credential_revoked")) {
		t.Fatalf("after revoke: %d %s", resp.StatusCode, body)
	}

	// Bad command lines fail with a usage error and print nothing on stdout.
	for _, args := range [][]string{
		{"admin", "key", "create", "--account", "nope", "--scopes", "all"},
		{"admin", "key", "create", "--account", id},
		{"admin", "account", "create"},
		{"admin", "section", "set", "--key", "Bad Key", "--name", "x", "--price", "1"},
		{"admin", "frobnicate", "now"},
		{"nonsense"},
	} {
		_, err := cli(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
	if _, err := cli(t, "admin", "credits", "grant", "--account", "0190b2a4-0000-7000-8000-000000000009", "--amount", "5"); err == nil {
		t.Error("grant to an unknown account succeeded")
	}
	if _, err := cli(t, "admin", "key", "create", "--account", id, "--scopes", "sites:fly"); err == nil || !strings.Contains(err.Error(), "unknown scope") {
		t.Errorf("unknown scope: %v", err)
	}

	// serve warms the engine in the background: every shard of the demo
	// and its property blocks fit the default budget.
	for !strings.Contains(serveLog.String(), "engine warmed") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not warm the engine:\n%s", serveLog.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if warmed := serveLog.String(); strings.Contains(warmed, " shards=0 ") || !strings.Contains(warmed, "shards_left=0 ") ||
		!strings.Contains(warmed, "all_properties=true") {
		t.Fatalf("warm start: %s", warmed)
	}

	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "pg", "data", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("serve left its PostgreSQL running")
	}
	// Run alone, an admin command starts the cluster and stops it again.
	if _, err := cli(t, "admin", "account", "create", "--name", "Later"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "pg", "data", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("admin left PostgreSQL running")
	}
}

func TestMissingPostgreSQLBinariesSayWhatToInstall(t *testing.T) {
	t.Setenv("SITEENV_DATABASE_URL", "")
	t.Setenv("SITEENV_PG_BIN", filepath.Join(t.TempDir(), "nothing-here"))
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	_, err := cli(t, "admin", "account", "create", "--name", "x", "--data-dir", dir)
	if err == nil || !strings.Contains(err.Error(), "SITEENV_DATABASE_URL") || !strings.Contains(strings.ToLower(err.Error()), "install") {
		t.Fatalf("error does not say what to install or set: %v", err)
	}
}

// reachableTempDir is a temp dir the postgres user can traverse (t.TempDir's
// parent is private to us, and the embedded cluster runs as postgres under root).
func reachableTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "siteenv-cmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
