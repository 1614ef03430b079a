package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestIngestSafeByDefault: the first release of a layer goes live; a later
// one is staged unless --publish; the summary is for people unless --json;
// the rejects file goes under the data dir (or --out), never the current
// directory, and its path is printed; the same file again is a no-op.
func TestIngestSafeByDefault(t *testing.T) {
	dsn := ledgertest.DSN(t)
	t.Setenv("SITEENV_DATABASE_URL", dsn)
	t.Setenv("SITEENV_STORE", "")
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "var")
	t.Setenv("SITEENV_DATA_DIR", dataDir)
	cwd := t.TempDir()
	t.Chdir(cwd)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	layer := write("layer.json", layerJSON)
	a, b := releasePair(t, dir)
	human := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, &out, &errOut)
		return out.String(), err
	}
	led, err := ledger.Open(context.Background(), dsn, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	current := func() string {
		y, err := led.Layer(context.Background(), "nsw.test-bores")
		if err != nil || y.CurrentReleaseID == nil {
			t.Fatalf("layer %+v %v", y, err)
		}
		return *y.CurrentReleaseID
	}

	out, err := human("ingest", "--layer", layer, a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "published and current") || !strings.Contains(out, "10 features, 0 rejected") || strings.HasPrefix(out, "{") {
		t.Fatalf("first ingest printed:\n%s", out)
	}
	relA := current()

	// B, plainly: staged, and A stays live.
	out, err = human("ingest", "--layer", layer, b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "staged (not current)") || !strings.Contains(out, "--publish") || !strings.Contains(out, "siteenv release promote --layer nsw.test-bores") {
		t.Fatalf("second ingest printed:\n%s", out)
	}
	if current() != relA {
		t.Fatal("a plain ingest replaced the live release")
	}
	// The same file again: a no-op, said so; as JSON with --json.
	m, err := cli(t, "ingest", "--json", "--layer", layer, b)
	if err != nil || m["same_input"] != true || m["state"] != "staged" || m["already_published"] != true {
		t.Fatalf("again: %v %v", m, err)
	}
	// --publish makes it live at once.
	m, err = cli(t, "ingest", "--json", "--publish", "--layer", layer, b)
	if err != nil || m["state"] != "current" || current() != m["release_id"] {
		t.Fatalf("--publish: %v %v", m, err)
	}

	// Rejects: under <data-dir>/out by default, or --out; the path printed.
	bad := write("bad.geojson", badGeoJSON)
	_, err = human("ingest", "--layer", layer, bad)
	wantRejects := filepath.Join(dataDir, "out", "nsw.test-bores.rejects.csv")
	if err == nil || !strings.Contains(err.Error(), wantRejects) {
		t.Fatalf("bad ingest: %v, want the rejects path %s", err, wantRejects)
	}
	if _, err := os.Stat(wantRejects); err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Join(dir, "reports")
	if _, err = human("ingest", "--layer", layer, "--out", outDir, bad); err == nil || !strings.Contains(err.Error(), filepath.Join(outDir, "nsw.test-bores.rejects.csv")) {
		t.Fatalf("--out: %v", err)
	}
	// A diff's changes file too.
	st, err := cli(t, "ingest", "--json", "--stage", "--layer", layer, a)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cli(t, "release", "diff", "--layer", "nsw.test-bores", "--to", relA)
	if err != nil || !strings.HasPrefix(d["changes_file"].(string), filepath.Join(dataDir, "out")+string(filepath.Separator)) {
		t.Fatalf("diff: %v %v", d, err)
	}
	// Only a staged release can be discarded: A (the same content, the same
	// id) was current once; a new staged release can, and is then no longer
	// offered for review.
	if _, err := cli(t, "release", "discard", "--layer", "nsw.test-bores", "--release", st["release_id"].(string)); err == nil {
		t.Errorf("discarded a release that was current once")
	}
	c := write("c.geojson", goodGeoJSON)
	sc, err := cli(t, "ingest", "--json", "--layer", layer, c)
	if err != nil || sc["state"] != "staged" {
		t.Fatalf("c: %v %v", sc, err)
	}
	if d, err := cli(t, "release", "discard", "--layer", "nsw.test-bores", "--release", sc["release_id"].(string)); err != nil || d["state"] != "discarded" {
		t.Fatalf("discard: %v %v", d, err)
	}
	if _, err := cli(t, "release", "diff", "--layer", "nsw.test-bores"); err == nil || !strings.Contains(err.Error(), "no staged release") {
		t.Errorf("diff after discarding the only staged release: %v", err)
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Errorf("files left in the current directory: %v", ents)
	}
}
