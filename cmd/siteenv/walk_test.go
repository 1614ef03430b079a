package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"siteenv/api/openapi/openapitest"
)

// TestReadmeWalk runs scripts/walk.sh, the README's first walk, against a
// fresh `serve --demo` (as `make run` starts it, on a free port with its own
// data directory), so the README cannot drift from the service. The script
// talks through a proxy that validates every answer against the OpenAPI
// document; the script itself stops at the first unexpected status, and this
// test checks every step ran with the status the README shows.
func TestReadmeWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the walk loads the demo data (about a minute)")
	}
	for _, tool := range []string{"sh", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("scripts/walk.sh needs %s: %v", tool, err)
		}
	}
	_, errJQ := exec.LookPath("jq")
	_, errPy := exec.LookPath("python3")
	if errJQ != nil && errPy != nil {
		t.Skip("scripts/walk.sh needs jq or python3")
	}
	script, err := filepath.Abs("../../scripts/walk.sh")
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv("SITEENV_DATABASE_URL", "")
	t.Setenv("SITEENV_SECRET", "")
	t.Setenv("SITEENV_STORE", "")
	dataDir := filepath.Join(reachableTempDir(t), "var")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	var serveLog lockedBuffer
	go func() {
		served <- run(ctx, []string{"serve", "--addr", addr, "--data-dir", dataDir, "--demo"}, io.Discard, &serveLog)
	}()

	// The validating proxy in front of the server.
	v := openapitest.New(t)
	backend, _ := url.Parse("http://" + addr)
	proxy := httputil.NewSingleHostReverseProxy(backend)
	var mu sync.Mutex
	var invalid []string
	var answered []string // "METHOD PATH STATUS" of every answer, in order
	proxy.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock()
		answered = append(answered, fmt.Sprintf("%s %s %d", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode))
		mu.Unlock()
		if err := v.Validate(resp.Request, resp.StatusCode, resp.Header, body); err != nil {
			mu.Lock()
			invalid = append(invalid, err.Error())
			mu.Unlock()
		}
		return nil
	}
	// While the demo loads, the server is not listening: answer 502 without
	// validation (the script's wait loop retries).
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	// Until its own "serving" line, freeAddr's port may answer for another
	// test's server: 502 as while the demo loads.
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(serveLog.String(), "msg=serving ") {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	cmd := exec.CommandContext(ctx, "sh", script)
	walkDir := t.TempDir() // the map image, report.pdf and walk.env land here
	cmd.Dir = walkDir
	cmd.Env = append(os.Environ(), "API="+front.URL+"/api/v1", "KEY_FILE="+filepath.Join(dataDir, "demo-key"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err = <-done:
	case err = <-served:
		<-done
		t.Fatalf("serve exited during the walk: %v\n%s", err, out.String())
	}
	if err != nil {
		t.Fatalf("scripts/walk.sh: %v\n%s", err, out.String())
	}
	walk := out.String()
	t.Logf("scripts/walk.sh:\n%s", walk)

	for _, step := range []string{
		`context: 200`, `search: 200`, `resolve: 200`, `save the site: 20[01]`, `layers: 200`,
		`buy contamination: 20[01]`, `query: 20[02]`, `results page 1: 200`, `results page 2: 200`,
		`map image: 200`, `map image again: 304`,
		`order report: 202`, `report status: 200`, `report text: 200`, `download link: 201`, `download report.pdf: 200`,
		`purchases: 200`, `usage: 200`, `activity: 200`,
		`usage without a key: 401 unauthenticated`, `reference: `, `walk.env: `,
	} {
		if !regexp.MustCompile(`(?m)^== ` + step).MatchString(walk) {
			t.Errorf("the walk has no step %q", step)
		}
	}
	for _, want := range []string{
		"first: 1 Stanley Street, PARRAMATTA NSW",
		"resolved: 1/DP608976 (NSW), 1 Stanley Street",
		"walk: ok",
	} {
		if !strings.Contains(walk, want) {
			t.Errorf("the walk does not print %q", want)
		}
	}
	// The sample output the README shows is what the walk prints.
	readmeText, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sample := regexp.MustCompile("(?s)<!-- the walk's output -->\n```\n(.*?)```").FindSubmatch(readmeText)
	if sample == nil {
		t.Fatal("README.md shows no sample output of the walk")
	}
	var shown []string
	for _, l := range strings.Split(string(sample[1]), "\n") {
		if l != "..." {
			shown = append(shown, l)
		}
	}
	if err := matchSample(strings.Join(shown, "\n"), walk, ""); err != nil {
		t.Errorf("README's sample output of the walk: %v", err)
	}
	key, err := os.ReadFile(filepath.Join(dataDir, "demo-key"))
	if err != nil || len(bytes.TrimSpace(key)) == 0 {
		t.Fatalf("demo key: %v", err)
	}
	if strings.Contains(walk, strings.TrimSpace(string(key))) {
		t.Error("the walk printed the API key")
	}
	// The README's later blocks, pasted after the walk in the same
	// directory, run as they stand: every request they make succeeds.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)<!-- after the walk: ([a-z]+)[^>]*-->\n```sh\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d blocks marked to run after the walk, want the Reports and Files blocks", len(blocks))
	}
	for _, b := range blocks {
		mu.Lock()
		before := len(answered)
		mu.Unlock()
		sh := exec.CommandContext(ctx, "sh", "-eu", "-c", string(b[2]))
		sh.Dir = walkDir
		// Only what a reader's shell has: walk.env supplies the rest.
		sh.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		got, err := sh.CombinedOutput()
		if err != nil {
			t.Errorf("README block %q after the walk: %v\n%s", b[1], err, got)
			continue
		}
		mu.Lock()
		calls := append([]string(nil), answered[before:]...)
		mu.Unlock()
		want := strings.Count(string(b[2]), "curl -")
		if len(calls) != want {
			t.Errorf("README block %q: %d answers, want one per curl (%d): %v", b[1], len(calls), want, calls)
		}
		for _, c := range calls {
			if f := strings.Fields(c); f[len(f)-1] >= "400" {
				t.Errorf("README block %q: %s", b[1], c)
			}
		}
		t.Logf("README block %q: %v", b[1], calls)
	}
	if pdf, err := os.Stat(filepath.Join(walkDir, "report.pdf")); err != nil || pdf.Size() == 0 {
		t.Errorf("the Files block did not download report.pdf: %v", err)
	}

	// The data team's blocks, pasted in order from a checkout whose ./var
	// is the server's data directory: they run as they stand, print what
	// the README shows, and leave nothing outside var/.
	dataTeamBlocks(t, ctx, readme, filepath.Dir(dataDir))

	mu.Lock()
	for _, msg := range invalid {
		t.Error(msg)
	}
	mu.Unlock()

	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestReadmeShowsWalk: the README's first walk is scripts/walk.sh, verbatim,
// so what a reader pastes is what TestReadmeWalk runs.
func TestReadmeShowsWalk(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../../scripts/walk.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- scripts/walk.sh: begin[^>]*-->\n```sh\n(.*?)```\n<!-- scripts/walk.sh: end -->").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no scripts/walk.sh block")
	}
	if !bytes.Equal(m[1], script) {
		t.Fatal("README.md's walk differs from scripts/walk.sh: copy the script into the README block")
	}
}

// dataTeamBlocks runs the README's data-team blocks (marked "data team:
// NAME (run by TestReadmeWalk)") in order, in checkout: a directory
// holding var (the server's data directory), bin/siteenv (built here) and
// docs/layer.example.json, as a fresh clone after make build does. Each
// block's output must show, in order, the lines of its "data team: NAME
// output" block, where <...> stands for any text (ids, times, paths).
func dataTeamBlocks(t *testing.T, ctx context.Context, readme []byte, checkout string) {
	t.Helper()
	bin := filepath.Join(checkout, "bin", "siteenv")
	if out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	example, err := os.ReadFile("../../docs/layer.example.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(checkout, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "docs", "layer.example.json"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)<!-- data team: ([a-z]+) output -->\n```\n(.*?)```").FindAllSubmatch(readme, -1) {
		outputs[string(m[1])] = string(m[2])
	}
	blocks := regexp.MustCompile("(?s)<!-- data team: ([a-z]+) \\(run by TestReadmeWalk\\) -->\n```sh\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d data-team blocks, want the ingest and review blocks", len(blocks))
	}
	for _, b := range blocks {
		name := string(b[1])
		sh := exec.CommandContext(ctx, "sh", "-eu", "-c", string(b[2]))
		sh.Dir = checkout
		sh.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		var stdout, stderr bytes.Buffer
		sh.Stdout, sh.Stderr = &stdout, &stderr
		if err := sh.Run(); err != nil {
			t.Fatalf("README data-team block %q: %v\n%s\n%s", name, err, stdout.String(), stderr.String())
		}
		t.Logf("README data-team block %q:\n%s", name, stdout.String())
		want, ok := outputs[name]
		if !ok {
			t.Errorf("README data-team block %q shows no output block", name)
			continue
		}
		if err := matchSample(want, stdout.String(), checkout); err != nil {
			t.Errorf("README data-team block %q: %v\nprinted:\n%s", name, err, stdout.String())
		}
	}
	ents, err := os.ReadDir(checkout)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if n := e.Name(); n != "var" && n != "bin" && n != "docs" {
			t.Errorf("the data-team blocks left %s in the checkout (outside var/)", n)
		}
	}
}

// matchSample checks that every line of sample appears in got, in order;
// in sample, <checkout> is the checkout directory and any other <...>
// stands for some text.
func matchSample(sample, got, checkout string) error {
	lines := strings.Split(got, "\n")
	i := 0
	for _, want := range strings.Split(strings.TrimRight(sample, "\n"), "\n") {
		pat := regexp.QuoteMeta(strings.ReplaceAll(want, "<checkout>", checkout))
		pat = regexp.MustCompile(`<[a-z]+>`).ReplaceAllString(pat, ".+?")
		re := regexp.MustCompile("^" + pat + "$")
		for ; i < len(lines) && !re.MatchString(lines[i]); i++ {
		}
		if i == len(lines) {
			return fmt.Errorf("the output lacks the README's line %q (or not in that order)", want)
		}
		i++
	}
	return nil
}
