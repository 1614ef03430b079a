package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/engine"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
	"siteenv/report"
	"siteenv/store"
)

// TestAdminReportImportAndRevise: a historical website PDF is imported as
// a completed report whose scope, provenance and text are unknown; a built
// report is revised from the command line into revision 2, at no charge;
// bad input is refused and records nothing.
func TestAdminReportImportAndRevise(t *testing.T) {
	dsn := ledgertest.DSN(t)
	t.Setenv("SITEENV_DATABASE_URL", dsn)
	t.Setenv("SITEENV_STORE", "")
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "var")
	t.Setenv("SITEENV_DATA_DIR", dataDir)
	ctx := context.Background()
	write := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := cli(t, "ingest", "--json", "--layer", write("layer.json", []byte(layerJSON)), write("bores.geojson", []byte(goodGeoJSON))); err != nil {
		t.Fatal(err)
	}
	acct, err := cli(t, "admin", "account", "create", "--name", "Reports Co", "--credits", "100")
	if err != nil {
		t.Fatal(err)
	}
	accountID := uuid.MustParse(acct["account_id"].(string))
	key, err := cli(t, "admin", "key", "create", "--account", accountID.String(), "--scopes", "all")
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(ctx, dsn, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	name := "Old Mill, Parramatta"
	site, err := led.CreateSite(ctx, ledger.Site{AccountID: accountID, Name: &name, Fingerprint: "cli-site", AreaM2: 0,
		Geometry: []byte(`{"type":"Point","coordinates":[151.001,-33.8]}`), Bounds: [4]float64{151.001, -33.8, 151.001, -33.8}})
	if err != nil {
		t.Fatal(err)
	}

	// Import.
	pdf, err := report.RenderPDF(report.Report{ReportID: "W-2019-0042", Created: time.Date(2019, 5, 1, 0, 0, 0, 0, time.UTC),
		Site: report.ReportSite{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	file := write("Old Mill (2019).pdf", pdf)
	out, err := cli(t, "admin", "report", "import", "--account", accountID.String(), "--site", site.ID.String(), "--file", file,
		"--created-at", "2019-05-01T10:00:00+10:00")
	if err != nil {
		t.Fatal(err)
	}
	imported, err := led.Report(ctx, accountID, uuid.MustParse(out["report_id"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pdf)
	rev := imported.Latest
	if imported.Origin != ledger.OriginWebsite || imported.Status != ledger.ReportCompleted || imported.DatasetIDs != nil ||
		!imported.CreatedAt.Equal(time.Date(2019, 5, 1, 0, 0, 0, 0, time.UTC)) || rev == nil || rev.ContentStatus != "unavailable" ||
		rev.ProvenanceStatus != "unknown" || rev.ID.String() != out["revision_id"] || len(rev.Artifacts) != 1 {
		t.Fatalf("imported report %+v, revision %+v", imported, rev)
	}
	if !strings.Contains(strings.Join(rev.Limitations, " "), "dataset scope") || !slices.Contains(rev.Limitations, report.Limitations) {
		t.Fatalf("limitations %q", rev.Limitations)
	}
	a := rev.Artifacts[0]
	if a.SHA256 != hex.EncodeToString(sum[:]) || a.Size != int64(len(pdf)) || a.Filename != "Old-Mill--2019.pdf" || a.DatasetIDs != nil ||
		a.MediaType != ledger.MediaPDF {
		t.Fatalf("artifact %+v", a)
	}
	st, err := store.NewFileStore(filepath.Join(dataDir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := st.Stat(ctx, a.StorageKey); err != nil || info.Size != int64(len(pdf)) {
		t.Fatalf("stored PDF %+v %v", info, err)
	}
	if _, err := cli(t, "admin", "report", "import", "--account", accountID.String(), "--site", site.ID.String(),
		"--file", write("notes.pdf", []byte("not a pdf"))); err == nil || !strings.Contains(err.Error(), "not a PDF") {
		t.Fatalf("a non-PDF was imported: %v", err)
	}
	if _, err := cli(t, "admin", "report", "import", "--account", uuid.NewString(), "--site", site.ID.String(), "--file", file); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Fatalf("another account's site: %v", err)
	}
	if _, err := cli(t, "admin", "report", "import", "--account", accountID.String(), "--site", site.ID.String()); err == nil {
		t.Fatal("import without --file")
	}
	if reps, err := led.ListReports(ctx, accountID, ledger.ReportFilter{Limit: 10}); err != nil || len(reps) != 1 {
		t.Fatalf("refused imports recorded reports: %d %v", len(reps), err)
	}

	// Revise: order and build a report, then revise it.
	rep, _, err := led.OrderReport(ctx, ledger.OrderReportParams{Account: accountID, Integration: uuid.MustParse(key["integration_id"].(string)),
		IdemKey: "cli-1", SiteID: site.ID, Jurisdiction: "NSW", DatasetIDs: []string{"nsw.test-bores"}, Price: 25})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := jobs.New(jobs.Config{}, led, eng, st)
	if err != nil {
		t.Fatal(err)
	}
	if ran, err := r.RunReportOnce(ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v", ran, err)
	}
	out, err = cli(t, "admin", "report", "revise", "--report", rep.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	got, err := led.Report(ctx, accountID, rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out["report_id"] != rep.ID.String() || out["revision"] != float64(2) || got.RevisionCount != 2 || got.Latest.ID.String() != out["revision_id"] {
		t.Fatalf("revise printed %v; report %+v", out, got)
	}
	if a, _ := led.Account(ctx, accountID); a.CreditBalance != 75 {
		t.Fatalf("balance %d: a revision was charged", a.CreditBalance)
	}
	if _, err := cli(t, "admin", "report", "revise", "--report", imported.ID.String()); err == nil || !strings.Contains(err.Error(), "cannot be revised") {
		t.Fatalf("revising an imported report: %v", err)
	}
	if _, err := cli(t, "admin", "report", "revise", "--report", uuid.NewString()); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("revising a missing report: %v", err)
	}
	if _, err := cli(t, "admin", "report", "revise"); err == nil {
		t.Fatal("revise without --report")
	}
	if out, err := cli(t, "admin", "ledger", "check"); err != nil || out["ok"] != true {
		t.Fatalf("ledger check %v %v", out, err)
	}
}
