package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// releasePair writes two GeoJSON releases of the test-bores layer: A with
// b1..b10; B with b1..b6 unchanged, b7 and b8 with other fields, b9 moved,
// b10 gone and b11..b13 new: 3 added, 1 removed, 3 changed, 6 unchanged.
func releasePair(t *testing.T, dir string) (a, b string) {
	t.Helper()
	feat := func(id string, lon float64, depth float64, status string) string {
		return fmt.Sprintf(`{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%g,-33.8]},"properties":{"depth_m":%g,"status":%q}}`, id, lon, depth, status)
	}
	var fa, fb []string
	for i := 1; i <= 10; i++ {
		id := fmt.Sprintf("b%d", i)
		lon := 151 + float64(i)/100
		fa = append(fa, feat(id, lon, float64(i), "active"))
		switch {
		case i <= 6:
			fb = append(fb, feat(id, lon, float64(i), "active"))
		case i <= 8:
			fb = append(fb, feat(id, lon, float64(i), "capped"))
		case i == 9:
			fb = append(fb, feat(id, lon+0.001, float64(i), "active"))
		}
	}
	for i := 11; i <= 13; i++ {
		fb = append(fb, feat(fmt.Sprintf("b%d", i), 151+float64(i)/100, 1, "new"))
	}
	write := func(name string, fs []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(fs, ",")+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("a.geojson", fa), write("b.geojson", fb)
}

// TestStageDiffPromote: stage a release, diff it against the current one
// (exact counts and CSV), promote it, promote the first back; queries
// created between the steps keep the release they froze, and new ones take
// the current release of the moment. Every change is audited.
func TestStageDiffPromote(t *testing.T) {
	dsn := ledgertest.DSN(t)
	t.Setenv("SITEENV_DATABASE_URL", dsn)
	t.Setenv("SITEENV_STORE", "")
	dir := t.TempDir()
	t.Setenv("SITEENV_DATA_DIR", filepath.Join(dir, "var"))
	layer := filepath.Join(dir, "layer.json")
	if err := os.WriteFile(layer, []byte(layerJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	fa, fb := releasePair(t, dir)
	ctx := context.Background()
	led, err := ledger.Open(ctx, dsn, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	const layerID = "nsw.test-bores"

	// A query as POST /queries makes one: freeze the current release.
	acct, err := led.CreateAccount(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	key, err := led.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"queries:run"}})
	if err != nil {
		t.Fatal(err)
	}
	site, err := led.CreateSite(ctx, ledger.Site{AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "s"})
	if err != nil {
		t.Fatal(err)
	}
	type made struct {
		id   uuid.UUID
		want string
	}
	var queries []made
	// query freezes the current release as POST /queries does, checks it
	// is want, and that every query made before still holds its own.
	query := func(step, want string) {
		t.Helper()
		lrs, err := led.LayersForQuery(ctx, []string{layerID})
		if err != nil {
			t.Fatal(err)
		}
		lr := lrs[layerID]
		if lr.Release == nil || lr.Release.ReleaseID != want {
			t.Fatalf("%s: current release %+v, want %s", step, lr.Release, want)
		}
		q, err := led.CreateQuery(ctx, ledger.Query{AccountID: acct.ID, IntegrationID: key.IntegrationID, SiteID: site.ID, SiteGeometry: site.Geometry,
			LayerIDs: []string{layerID}, RadiusM: 100, Frozen: []ledger.FrozenLayer{{LayerID: layerID, ReleaseID: &lr.Release.ReleaseID,
				SectionKey: lr.Layer.SectionKey, SchemaVersion: lr.Release.SchemaVersion, FieldSchema: lr.Release.FieldSchema,
				Sources: lr.Release.Sources}}}, ledger.QueryLimits{MaxQueued: 100, MaxRetainedBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, made{q.ID, want})
		for i, m := range queries {
			back, err := led.Query(ctx, acct.ID, m.id)
			if err != nil || len(back.Frozen) != 1 || back.Frozen[0].ReleaseID == nil || *back.Frozen[0].ReleaseID != m.want {
				t.Fatalf("%s: query %d froze %+v (%v), want release %s", step, i, back.Frozen, err, m.want)
			}
		}
	}
	list := func(step string, want map[string]string) {
		t.Helper()
		out, err := cli(t, "release", "list", "--layer", layerID)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range out["releases"].([]any) {
			r := r.(map[string]any)
			got[r["release_id"].(string)] = r["state"].(string)
			if r["features"] == nil || r["ingested_at"] == nil || len(r["source_dates"].([]any)) != 1 {
				t.Errorf("%s: release %v lacks counts or dates", step, r)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: release list %v, want %v", step, got, want)
		}
	}

	// 1. A is published and current.
	sumA, err := cli(t, "ingest", "--json", "--layer", layer, fa)
	if err != nil {
		t.Fatal(err)
	}
	relA := sumA["release_id"].(string)
	query("after publishing A", relA)

	// 2. B is staged: A stays current for queries.
	sumB, err := cli(t, "ingest", "--json", "--stage", "--layer", layer, fb)
	if err != nil {
		t.Fatal(err)
	}
	relB := sumB["release_id"].(string)
	if relB == relA || sumB["features"] != float64(12) {
		t.Fatalf("staged %v", sumB)
	}
	list("staged", map[string]string{relA: "current", relB: "staged"})
	query("after staging B", relA)

	// 3. Diff, by default current -> newest staged.
	csvPath := filepath.Join(dir, "changes.csv")
	d, err := cli(t, "release", "diff", "--layer", layerID, "--out", csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if d["from_release"] != relA || d["to_release"] != relB || d["added"] != float64(3) || d["removed"] != float64(1) ||
		d["changed"] != float64(3) || d["unchanged"] != float64(6) || d["from_features"] != float64(10) || d["to_features"] != float64(12) {
		t.Fatalf("diff %v", d)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, r := range rows[1:] {
		changes = append(changes, r[0]+":"+r[1])
	}
	sort.Strings(changes)
	if want := "[added:b11 added:b12 added:b13 changed:b7 changed:b8 changed:b9 removed:b10]"; fmt.Sprint(changes) != want {
		t.Fatalf("changes %v, want %s", changes, want)
	}
	// The same changes as GeoParquet, read back by two readers.
	pqPath := filepath.Join(dir, "changes.parquet")
	d, err = cli(t, "release", "diff", "--layer", layerID, "--out", pqPath)
	if err != nil || d["changes_file"] != pqPath || d["added"] != float64(3) || d["removed"] != float64(1) || d["changed"] != float64(3) {
		t.Fatalf("diff to GeoParquet %v %v", d, err)
	}
	checkChangesGeoParquet(t, pqPath, pairChanges(false))
	query("after the diff", relA)

	// 4. Promote B.
	p, err := cli(t, "release", "promote", "--layer", layerID, "--release", relB)
	if err != nil || p["changed"] != true || p["previous_release_id"] != relA {
		t.Fatalf("promote B: %v %v", p, err)
	}
	list("promoted", map[string]string{relA: "previous", relB: "current"})
	query("after promoting B", relB)

	// 5. Promote A back (the rollback); the reverse diff mirrors the first.
	if p, err = cli(t, "release", "promote", "--layer", layerID, "--release", relA); err != nil || p["previous_release_id"] != relB {
		t.Fatalf("promote A back: %v %v", p, err)
	}
	list("rolled back", map[string]string{relA: "current", relB: "previous"})
	query("after promoting A back", relA)
	d, err = cli(t, "release", "diff", "--layer", layerID, "--from", relB, "--to", relA, "--out", "-")
	if err != nil || d["added"] != float64(1) || d["removed"] != float64(3) || d["changed"] != float64(3) || d["unchanged"] != float64(6) {
		t.Fatalf("reverse diff %v %v", d, err)
	}
	if _, err = cli(t, "release", "diff", "--layer", layerID, "--from", relB, "--to", relA, "--out", pqPath); err != nil {
		t.Fatal(err)
	}
	checkChangesGeoParquet(t, pqPath, pairChanges(true))

	// Promoting the current release changes nothing; an unknown one fails.
	if p, err = cli(t, "release", "promote", "--layer", layerID, "--release", relA); err != nil || p["changed"] != false {
		t.Fatalf("promote current: %v %v", p, err)
	}
	if _, err = cli(t, "release", "promote", "--layer", layerID, "--release", "r_nope"); err == nil || !strings.Contains(err.Error(), "no release") {
		t.Fatalf("promote unknown: %v", err)
	}

	// The audit: published A, staged B, promoted B, promoted A.
	evs, err := led.ReleaseEvents(ctx, layerID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		prev := "-"
		if e.PreviousReleaseID != nil {
			prev = *e.PreviousReleaseID
		}
		got = append(got, e.Action+" "+e.ReleaseID+" from "+prev)
		if e.Actor == "" {
			t.Errorf("event %+v has no actor", e)
		}
	}
	want := []string{"published " + relA + " from -", "staged " + relB + " from " + relA, "promoted " + relB + " from " + relA, "promoted " + relA + " from " + relB}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit\n%v\nwant\n%v", got, want)
	}
}
