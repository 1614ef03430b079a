package review

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"siteenv/ingest"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
	"siteenv/store"
)

const layerJSON = `{
  "layer_id": "nsw.review-parcels", "section_key": "planning", "name": "Review parcels",
  "description": null, "schema_version": "1", "radius_max_m": 2000,
  "field_schema": {"zone": {"type": "string"}, "area_ha": {"type": ["number", "null"]}},
  "units": {"area_ha": "ha"},
  "sources": [{"source_variant_id": "review-v1", "scope": null, "provider": "Test", "source_url": null,
    "source_published_at": "2025-01-01", "source_effective_at": null, "retrieved_at": "2025-01-02T00:00:00Z",
    "licence": "CC-BY-4.0", "attribution": "Test", "coverage_verified": false,
    "api_approved": true, "agent_approved": true, "report_approved": true}],
  "jurisdictions": ["NSW"], "coverage": null
}`

// parcels writes a release of square parcels p0..p(n-1) in rows of six;
// dy shifts p2 north (degrees), zone sets p3's zone, and extra adds
// parcels p(n+1)..p(n+extra) (p(n) is left out).
func parcels(t *testing.T, dir, name string, n int, dy float64, zone string, extra int) string {
	t.Helper()
	var fs []string
	sq := func(id string, x, y float64, z string) string {
		const d = 0.002
		return fmt.Sprintf(`{"type":"Feature","id":%q,"geometry":{"type":"Polygon","coordinates":[[[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f]]]},"properties":{"zone":%q,"area_ha":4.1}}`,
			id, x, y, x+d, y, x+d, y+d, x, y+d, x, y, z)
	}
	for i := 0; i <= n+extra; i++ {
		if i == n {
			continue
		}
		x, y, z := 151.0+0.003*float64(i%6), -33.8+0.003*float64(i/6), "R2"
		if i == 2 {
			y += dy
		}
		if i == 3 {
			z = zone
		}
		fs = append(fs, sq(fmt.Sprintf("p%d", i), x, y, z))
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(fs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReviewPagePromote opens the review page of a staged release in
// headless Chromium, checks the counts and the table show what changed,
// clicks promote and checks the release became the layer's current one
// (the same ledger transaction `siteenv release promote` makes).
func TestReviewPagePromote(t *testing.T) {
	bctx := browser(t)
	led, st, relA, relB := stagedFixture(t)
	ctx := context.Background()
	srv, err := New(Options{Ledger: led, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	// Addressed by another name (DNS rebinding), nothing is served.
	req, _ := http.NewRequest("GET", hs.URL+"/", nil)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("a request for another host name: %d", resp.StatusCode)
	}
	// Without the page's token, promote is refused.
	resp, err = http.Post(hs.URL+"/api/promote/nsw.review-parcels/"+relB, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("promote without the token: %d", resp.StatusCode)
	}

	// The index lists the staged release.
	if err := chromedp.Do(bctx, chromedp.Navigate(hs.URL+"/")); err != nil {
		t.Fatal(err)
	}
	index, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(index, relB) || !strings.Contains(index, relA) || !strings.Contains(index, "Review parcels") {
		t.Fatalf("index lists:\n%s", index)
	}
	err = chromedp.Do(bctx,
		chromedp.Navigate(hs.URL+"/review/nsw.review-parcels/"+relB),
		chromedp.WaitVisible(chromedp.CSS(`main[data-loaded="true"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	text := func(css string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(css)))
		if err != nil {
			t.Fatalf("%s: %v", css, err)
		}
		return s
	}
	added, removed, changed, unchanged := text("#count-added b"), text("#count-removed b"), text("#count-changed b"), text("#count-unchanged b")
	if added != "3" || removed != "1" || changed != "2" || unchanged != "9" {
		t.Errorf("counts added %s removed %s changed %s unchanged %s, want 3 1 2 9", added, removed, changed, unchanged)
	}
	rows := text("#rows")
	for _, w := range []string{"p2", "geometry moved 55", "p3", "zone: \"R2\" \u2192 \"B4\"", "p11", "removed", "p14", "added"} {
		if !strings.Contains(rows, w) {
			t.Errorf("table lacks %q:\n%s", w, rows)
		}
	}
	// 12 current parcels, and the changes: 3 added, 1 removed, p2 before
	// and after, p3 after.
	paths, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#map path").length`))
	if err != nil {
		t.Fatal(err)
	}
	if paths != 12+3+1+2+1 {
		t.Errorf("map draws %d paths, want 19", paths)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if shot := os.Getenv("SITEENV_REVIEW_SCREENSHOT"); shot != "" {
		_ = os.WriteFile(shot, png, 0o644)
	}

	// Promote, by the button.
	err = chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS("#promote")),
		chromedp.WaitVisible(chromedp.CSS(`#outcome[data-done="promoted"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if state := text("#state"); state != "current" {
		t.Errorf("page says state %q after promote", state)
	}
	y, err := led.Layer(ctx, "nsw.review-parcels")
	if err != nil || y.CurrentReleaseID == nil || *y.CurrentReleaseID != relB {
		t.Fatalf("current release %v (%v), want %s", y.CurrentReleaseID, err, relB)
	}
	evs, err := led.ReleaseEvents(ctx, "nsw.review-parcels")
	if err != nil || len(evs) != 3 || evs[2].Action != "promoted" || evs[2].ReleaseID != relB || !strings.Contains(evs[2].Actor, "review") {
		t.Fatalf("audit %+v %v", evs, err)
	}
}

// stagedFixture ingests release A of the review layer as current and
// stages release B: p2 moved about 55 m north, p3 rezoned, p11 gone,
// p12..p14 new.
func stagedFixture(t *testing.T) (led *ledger.Ledger, st store.Store, relA, relB string) {
	t.Helper()
	ctx := context.Background()
	led, err := ledger.Open(ctx, ledgertest.DSN(t), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(led.Close)
	dir := t.TempDir()
	st, err = store.NewFileStore(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	def, err := ingest.ParseLayerDef([]byte(layerJSON))
	if err != nil {
		t.Fatal(err)
	}
	ingestRelease := func(file string, stage bool) string {
		sum, err := ingest.Run(ctx, ingest.Options{Layer: def, Store: st, TempDir: t.TempDir(),
			Publisher: ingest.LedgerPublisher{Ledger: led, Stage: stage}}, file)
		if err != nil {
			t.Fatal(err)
		}
		return sum.ReleaseID
	}
	relA = ingestRelease(parcels(t, dir, "a.geojson", 12, 0, "R2", 0), false)
	relB = ingestRelease(parcels(t, dir, "b.geojson", 11, 0.0005, "B4", 3), true)
	return led, st, relA, relB
}

// browser starts headless Chromium (Debian's chromium package) for the
// test, with two minutes to do its work.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run make tools (scripts/install-test-tools.sh installs Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 1100))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	bctx, cancelT := context.WithTimeout(bctx, 2*time.Minute)
	t.Cleanup(cancelT)
	return bctx
}

// TestReviewDiscard: discard from the page's API (with its token) leaves
// the current release alone and the release no longer staged.
func TestReviewDiscard(t *testing.T) {
	ctx := context.Background()
	led, err := ledger.Open(ctx, ledgertest.DSN(t), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	dir := t.TempDir()
	st, _ := store.NewFileStore(filepath.Join(dir, "store"))
	def, _ := ingest.ParseLayerDef([]byte(layerJSON))
	run := func(file string, stage bool) string {
		sum, err := ingest.Run(ctx, ingest.Options{Layer: def, Store: st, TempDir: t.TempDir(), Publisher: ingest.LedgerPublisher{Ledger: led, Stage: stage}}, file)
		if err != nil {
			t.Fatal(err)
		}
		return sum.ReleaseID
	}
	relA := run(parcels(t, dir, "a.geojson", 4, 0, "R2", 0), false)
	relB := run(parcels(t, dir, "b.geojson", 4, 0, "B4", 0), true)
	srv, _ := New(Options{Ledger: led, Store: st})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	req, _ := http.NewRequest("POST", hs.URL+"/api/discard/nsw.review-parcels/"+relB, nil)
	req.Header.Set("X-Review-Token", srv.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("discard: %v %v", resp, err)
	}
	resp.Body.Close()
	rs, _ := led.ListReleases(ctx, "nsw.review-parcels")
	states := map[string]string{}
	for _, r := range rs {
		states[r.ReleaseID] = r.State
	}
	if states[relA] != "current" || states[relB] != "discarded" {
		t.Fatalf("states %v", states)
	}
	// Again: not staged any more.
	resp, _ = http.DefaultClient.Do(req)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("second discard: %d", resp.StatusCode)
	}
}
