package jobs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/clock"
	"siteenv/engine"
	"siteenv/ingest"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
	"siteenv/report"
	"siteenv/store"
	"siteenv/store/s3test"
	"siteenv/tiles"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	boresID     = "test.bores"
	floodID     = "test.flood"
	reportPrice = 25
	credits     = 100
	siteName    = "12 Test Street, Parramatta"
)

func north(p orb.Point, m float64) orb.Point { return orb.Point{p[0], p[1] + m/110_950} }

// square is a CRS84 square of side m metres centred on c.
func square(c orb.Point, m float64) orb.Polygon {
	dx, dy := m/2/(111_320*0.8309), m/2/110_950
	return orb.Polygon{{{c[0] - dx, c[1] - dy}, {c[0] + dx, c[1] - dy}, {c[0] + dx, c[1] + dy}, {c[0] - dx, c[1] + dy}, {c[0] - dx, c[1] - dy}}}
}

// rbundle is a real ledger (fake clock) and store holding two published
// layers in two sections, an account with credits, and a named site with a
// report ordered for it.
type rbundle struct {
	t                    *testing.T
	ctx                  context.Context
	clk                  *clock.Fake
	led                  *ledger.Ledger
	store                store.Store
	logs                 *syncBuffer
	log                  *slog.Logger
	account, integ, site uuid.UUID
	releases             map[string]string
}

func reportSetup(t *testing.T, st store.Store) *rbundle {
	t.Helper()
	b := &rbundle{t: t, ctx: context.Background(), clk: clock.NewFake(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)),
		logs: &syncBuffer{}, releases: map[string]string{}}
	b.log = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b.led = ledgertest.New(t, b.clk)
	if st == nil {
		fs, err := store.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		st = fs
	}
	b.store = st
	b.publishBores(boreFeatures(nil))
	b.publishFlood()
	acct, err := b.led.CreateAccount(b.ctx, "Reports test", credits)
	if err != nil {
		t.Fatal(err)
	}
	b.account = acct.ID
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: b.account, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	b.integ = k.IntegrationID
	name := siteName
	site := square(origin, 40)
	raw, _ := json.Marshal(geojson.NewGeometry(site))
	bd := site.Bound()
	s, err := b.led.CreateSite(b.ctx, ledger.Site{AccountID: b.account, Name: &name, Geometry: raw, Fingerprint: "report-site", AreaM2: 1600,
		Bounds: [4]float64{bd.Min[0], bd.Min[1], bd.Max[0], bd.Max[1]}})
	if err != nil {
		t.Fatal(err)
	}
	b.site = s.ID
	return b
}

// boreFeatures: twelve bores 100 m apart eastwards (12 within the layer's
// 5 km, all listed) and one at 8 km (beyond it); extra are added.
func boreFeatures(extra map[string]orb.Point) map[string]orb.Point {
	pts := map[string]orb.Point{"B-FAR": east(8000)}
	for i := 1; i <= 12; i++ {
		pts[fmt.Sprintf("B-%04d", i*100)] = east(float64(i * 100))
	}
	for id, p := range extra {
		pts[id] = p
	}
	return pts
}

func (b *rbundle) publish(def map[string]any, feats map[string]tiles.Feature) string {
	b.t.Helper()
	raw, _ := json.Marshal(def)
	ld, err := ingest.ParseLayerDef(raw)
	if err != nil {
		b.t.Fatal(err)
	}
	ids := make([]string, 0, len(feats))
	for id := range feats {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	sum, err := ingest.RunRows(b.ctx, ingest.Options{Layer: ld, Store: b.store, Publisher: ingest.LedgerPublisher{Ledger: b.led}, TempDir: b.t.TempDir()},
		func(yield func(ingest.Row) error) error {
			for i, id := range ids {
				f := feats[id]
				f.ID = id
				if err := yield(ingest.Row{File: "test", Row: int64(i + 1), Feature: f}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		b.t.Fatal(err)
	}
	b.releases[ld.LayerID] = sum.ReleaseID
	return sum.ReleaseID
}

func (b *rbundle) publishBores(pts map[string]orb.Point) string { return b.publishBoresWith(pts, nil) }

// publishBoresWith publishes the bores with extra members of layer.json.
func (b *rbundle) publishBoresWith(pts map[string]orb.Point, extra map[string]any) string {
	feats := map[string]tiles.Feature{}
	for id, p := range pts {
		feats[id] = tiles.Feature{Geometry: p, Properties: map[string]any{"bore_name": "Bore " + id, "status": "active", "depth_m": 12.5}}
	}
	def := map[string]any{
		"layer_id": boresID, "section_key": "water", "section_name": "Water", "name": "Groundwater bores", "description": "Test bores",
		"schema_version": "1", "radius_max_m": 5000,
		"field_schema": map[string]any{"bore_name": map[string]any{"type": "string"}, "status": map[string]any{"type": "string"},
			"depth_m": map[string]any{"type": []string{"number", "null"}}},
		"units": map[string]any{"depth_m": "m", "bore_name": nil, "status": nil},
		"sources": []map[string]any{{"source_variant_id": "v1", "scope": "NSW", "provider": "Test Survey", "source_url": "https://example.gov.au/bores",
			"source_published_at": "2024-03-01", "source_effective_at": "2024-02-15", "retrieved_at": "2024-03-05T00:00:00Z",
			"licence": "CC-BY-4.0", "attribution": "© Test Survey 2024", "coverage_verified": true, "api_approved": true,
			"agent_approved": true, "report_approved": true}},
		"jurisdictions": []string{"NSW"}, "geometry_types": []string{"Point"}, "coverage": nil,
	}
	maps.Copy(def, extra)
	return b.publish(def, feats)
}

// publishFlood: a flood area over the site (distance 0), one 2 km west
// and one 12 km east (beyond the 10 km cap).
func (b *rbundle) publishFlood() string {
	west := orb.Point{origin[0] - 2000/(111_320*0.8309), origin[1]}
	feats := map[string]tiles.Feature{
		"F-SITE": {Geometry: square(origin, 200), Properties: map[string]any{"zone_name": "Parramatta River 1% AEP", "hazard_class": "H3"}},
		"F-WEST": {Geometry: square(west, 300), Properties: map[string]any{"zone_name": "Duck Creek 1% AEP", "hazard_class": "H1"}},
		"F-FAR":  {Geometry: square(east(12000), 300), Properties: map[string]any{"zone_name": "Far away", "hazard_class": "H1"}},
	}
	return b.publish(map[string]any{
		"layer_id": floodID, "section_key": "flood", "section_name": "Flooding", "name": "Flood planning areas", "description": "Test flood areas",
		"schema_version": "2024-01", "radius_max_m": 10000,
		"field_schema": map[string]any{"zone_name": map[string]any{"type": "string"}, "hazard_class": map[string]any{"type": "string"}},
		"units":        map[string]any{"zone_name": nil, "hazard_class": nil},
		"sources": []map[string]any{{"source_variant_id": "ses-1", "scope": nil, "provider": "NSW State Emergency Service", "source_url": nil,
			"source_published_at": "2024-01-10", "source_effective_at": nil, "retrieved_at": nil,
			"licence": "CC-BY-4.0-AU", "attribution": "© NSW SES 2024", "coverage_verified": true, "api_approved": true,
			"agent_approved": true, "report_approved": true}},
		"jurisdictions": []string{"NSW"}, "geometry_types": []string{"Polygon"}, "coverage": nil,
	}, feats)
}

// order charges for and queues a report of both layers.
func (b *rbundle) order() (ledger.Report, ledger.Purchase) {
	b.t.Helper()
	rep, pur, err := b.led.OrderReport(b.ctx, ledger.OrderReportParams{Account: b.account, Integration: b.integ, IdemKey: uuid.NewString(),
		SiteID: b.site, Jurisdiction: "NSW", DatasetIDs: []string{floodID, boresID}, Price: reportPrice})
	if err != nil {
		b.t.Fatal(err)
	}
	return rep, pur
}

func (b *rbundle) runner(cfg jobs.Config, engineStore store.Store) *jobs.Runner {
	b.t.Helper()
	if engineStore == nil {
		engineStore = b.store
	}
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	cfg.TempDir, cfg.Logger = b.t.TempDir(), b.log
	eng := newEngine(b.t, engineStore, engine.Options{MemoryBudget: 64 << 20, Logger: b.log})
	return newRunner(b.t, cfg, b.led, eng, b.store)
}

func (b *rbundle) report(id uuid.UUID) ledger.Report {
	b.t.Helper()
	r, err := b.led.Report(b.ctx, b.account, id)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

func (b *rbundle) waitFor(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkLedger asserts the ledger's invariants hold.
func (b *rbundle) checkLedger() {
	b.t.Helper()
	v, err := b.led.Check(b.ctx)
	if err != nil || len(v) > 0 {
		b.t.Fatalf("ledger check: %v %+v", err, v)
	}
}

// pdf reads a revision's PDF from the store and checks it against its
// artifact record (size and SHA-256).
func (b *rbundle) pdf(rev *ledger.Revision) []byte {
	b.t.Helper()
	if len(rev.Artifacts) != 1 {
		b.t.Fatalf("revision %d has %d artifacts", rev.Number, len(rev.Artifacts))
	}
	a := rev.Artifacts[0]
	if a.MediaType != ledger.MediaPDF || a.Revision == nil || *a.Revision != rev.Number || a.RevisionID == nil || *a.RevisionID != rev.ID ||
		a.Filename != jobs.PDFFilename(rev.ReportID, rev.Number) {
		b.t.Fatalf("artifact %+v", a)
	}
	obj, err := b.store.Open(b.ctx, a.StorageKey)
	if err != nil {
		b.t.Fatal(err)
	}
	defer obj.Close()
	data, err := io.ReadAll(io.NewSectionReader(obj, 0, obj.Size()))
	if err != nil {
		b.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != a.Size || hex.EncodeToString(sum[:]) != a.SHA256 {
		b.t.Fatalf("stored PDF: %d bytes sha256 %x; artifact says %d bytes sha256 %s", len(data), sum, a.Size, a.SHA256)
	}
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		b.t.Fatal("the artifact is not a PDF")
	}
	return data
}

// pdfText extracts a PDF's text with poppler's pdftotext (installed by
// scripts/install-test-tools.sh), as a reader of the report would.
func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	bin, err := exec.LookPath("pdftotext")
	if err != nil {
		t.Fatal("pdftotext not found: run make tools (scripts/install-test-tools.sh installs poppler-utils)")
	}
	in := filepath.Join(t.TempDir(), "r.pdf")
	if err := os.WriteFile(in, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-layout", "-enc", "UTF-8", in, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// built asserts a completed report with n revisions and returns the latest.
func (b *rbundle) built(id uuid.UUID, n int) ledger.Revision {
	b.t.Helper()
	rep := b.report(id)
	if rep.Status != ledger.ReportCompleted || rep.RevisionCount != n || rep.Latest == nil || rep.ReasonCode != nil {
		b.t.Fatalf("report %+v", rep)
	}
	return *rep.Latest
}

// checkFirstRevision checks everything a first revision states.
func (b *rbundle) checkFirstRevision(rep ledger.Report, pur ledger.Purchase, rev ledger.Revision) {
	t := b.t
	t.Helper()
	if rev.Number != 1 || rev.ContentStatus != "available" || rev.ProvenanceStatus != "captured" || !slices.Contains(rev.Limitations, report.Limitations) {
		t.Fatalf("revision %+v", rev)
	}
	text := flat(pdfText(t, b.pdf(&rev)))
	want := []string{siteName, "Groundwater bores", "Flood planning areas", "Water", "Flooding",
		"© Test Survey 2024", "CC-BY-4.0", "© NSW SES 2024", "CC-BY-4.0-AU", "Test Survey", "NSW State Emergency",
		"Statistical profile", "Site profile", "Data sources and currency",
		b.releases[boresID], b.releases[floodID], rep.ID.String(), pur.ID.String(), "B-0100", "B-1200", "F-SITE", "F-WEST", "Duck Creek 1% AEP",
		"on site", flat(report.Limitations)}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the PDF's text lacks %q", w)
		}
	}
	for _, not := range []string{"B-FAR", "F-FAR", "not listed"} {
		if strings.Contains(text, not) {
			t.Errorf("the PDF lists %s (beyond the radius), or says a record is not listed", not)
		}
	}
	var ev jobs.Evidence
	if err := json.Unmarshal(rev.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Version != jobs.EvidenceVersion || ev.Site.SiteID != b.site.String() || *ev.Site.Name != siteName || ev.PreviousRevisionID != nil ||
		len(ev.Layers) != 2 || !ev.BuiltAt.Equal(b.clk.Now().Truncate(time.Second)) {
		t.Fatalf("evidence %+v", ev)
	}
	byID := map[string]jobs.EvidenceLayer{}
	for _, l := range ev.Layers {
		byID[l.LayerID] = l
	}
	bores, flood := byID[boresID], byID[floodID]
	if bores.DataStatus != "data_present" || *bores.MatchedCount != 12 || bores.RadiusM != 5000 || *bores.ReleaseID != b.releases[boresID] ||
		*bores.SchemaVersion != "1" || len(bores.Features) != 12 || bores.Features[0].FeatureID != "B-0100" ||
		len(bores.Provenance) != 1 || bores.Provenance[0].Attribution != "© Test Survey 2024" || bores.Changes != nil {
		t.Fatalf("bores evidence %+v", bores)
	}
	// A bore east of the site: about 90 degrees, some 80 m from its edge.
	if f := bores.Features[0]; f.BearingDeg == nil || math.Abs(*f.BearingDeg-90) > 1 || math.Abs(f.DistanceM-80) > 2 {
		t.Fatalf("nearest bore %+v", f)
	}
	if flood.DataStatus != "data_present" || *flood.MatchedCount != 2 || flood.RadiusM != jobs.ReportRadiusCapM || len(flood.Features) != 2 {
		t.Fatalf("flood evidence %+v", flood)
	}
	if f := flood.Features[0]; f.FeatureID != "F-SITE" || f.DistanceM != 0 || f.BearingDeg != nil {
		t.Fatalf("flood area over the site %+v", f)
	}
	if f := flood.Features[1]; f.FeatureID != "F-WEST" || f.BearingDeg == nil || math.Abs(*f.BearingDeg-270) > 1 {
		t.Fatalf("flood area to the west %+v", f)
	}
	secs, err := b.led.ReportSections(b.ctx, rev.ID, -1, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.ValidateSections(secs); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	var headings []string
	for _, s := range secs {
		headings = append(headings, *s.Heading)
		all.WriteString(s.Text + "\n")
	}
	if !slices.Equal(headings, []string{"Summary", "Overview", "Statistical profile", "Site profile", "Flooding", "Water", "Sources", "Limitations"}) {
		t.Fatalf("section headings %q", headings)
	}
	for _, w := range []string{siteName, "Groundwater bores (test.bores)", "Outcome: Records found; matched: 12 within 5 km", "] B-0100: 80 m E",
		"] F-SITE: 0 m on site", "© NSW SES 2024", "licence CC-BY-4.0-AU", report.Limitations, "Groundwater bores | 0 | 1 | 1 | 3 | 5 | 2 | 0 | – | 12"} {
		if !strings.Contains(all.String(), w) {
			t.Errorf("retained text lacks %q:\n%s", w, all.String())
		}
	}
}

// TestReportIsBuilt: a queued report is built by RunReportOnce: completed,
// one revision, its PDF stored with the recorded size and SHA-256, stating
// the site, every layer, every source's attribution and licence and the
// limitations; the charge stands (no refund) and the ledger checks.
func TestReportIsBuilt(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	rep, pur := b.order()
	r := b.runner(jobs.Config{}, nil)
	if ran, err := r.RunReportOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v\n%s", ran, err, b.logs)
	}
	b.checkFirstRevision(rep, pur, b.built(rep.ID, 1))
	if ran, err := r.RunReportOnce(b.ctx); ran || err != nil {
		t.Fatalf("second RunReportOnce = %v, %v", ran, err)
	}
	acct, _ := b.led.Account(b.ctx, b.account)
	p, _ := b.led.Purchase(b.ctx, b.account, pur.ID)
	if acct.CreditBalance != credits-reportPrice || *p.CreditsRefunded != 0 {
		t.Fatalf("balance %d, refunded %d", acct.CreditBalance, *p.CreditsRefunded)
	}
	b.checkLedger()
}

// TestReportBuiltFromS3: the runner's report worker, woken by Notify,
// builds a report whose releases and PDF live on a real S3 server.
func TestReportBuiltFromS3(t *testing.T) {
	t.Parallel()
	endpoint, ak, sk, bucket := s3test.Start(t)
	st, err := store.OpenStore(context.Background(), "s3://"+bucket+"/siteenv",
		store.S3Config{Endpoint: "http://" + endpoint, AccessKey: ak, SecretKey: sk, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	b := reportSetup(t, st)
	r := b.runner(jobs.Config{Poll: time.Hour}, nil) // only Notify wakes it
	r.Start(b.ctx)
	defer r.Stop(b.ctx)
	rep, pur := b.order()
	r.Notify()
	b.waitFor("the report to complete", func() bool { return b.report(rep.ID).Status == ledger.ReportCompleted })
	b.checkFirstRevision(rep, pur, b.built(rep.ID, 1))
	b.checkLedger()
}

// TestReportGoldenText: what a reader extracts from a report built at a
// fixed time over fixed data, page by page (the random ids replaced by
// placeholders; -update rewrites testdata/report_build.txt). With
// SITEENV_REPORT_PDF=file the PDF is also written there, to look at.
func TestReportGoldenText(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	rep, pur := b.order()
	if ran, err := b.runner(jobs.Config{}, nil).RunReportOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v", ran, err)
	}
	rev := b.built(rep.ID, 1)
	pdf := b.pdf(&rev)
	if out := os.Getenv("SITEENV_REPORT_PDF"); out != "" {
		// To look at it: pdftoppm -png -r 60 $SITEENV_REPORT_PDF /tmp/page
		if err := os.WriteFile(out, pdf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// pdftotext -layout places columns by the widths of the text on a
	// page, and the random ids in the footer have widths of their own in a
	// proportional font: each line's runs of spaces are compared as one.
	var lines []string
	for _, line := range strings.Split(pdfText(t, pdf), "\n") {
		lines = append(lines, flat(line))
	}
	got := strings.NewReplacer(rep.ID.String(), "<report-id>", rev.ID.String(), "<revision-id>", pur.ID.String(), "<receipt-id>").
		Replace(strings.Join(lines, "\n"))
	golden := filepath.Join("testdata", "report_build.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./jobs -run TestReportGoldenText -update)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("text differs from %s at line %d:\n got: %q\nwant: %q", golden, i+1, g, w)
			}
		}
	}
}

// failingArtifacts refuses every artifact upload.
type failingArtifacts struct{ store.Store }

var errStoreDown = errors.New("test: artifact store down")

func (f failingArtifacts) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasPrefix(key, "artifacts/") {
		return errStoreDown
	}
	return f.Store.Put(ctx, key, r, size)
}

// TestReportFailureRefundsOnce: a build that cannot succeed is retried
// until MaxAttempts, then fails with its reason code; the purchase is
// refunded exactly once, nothing is left recorded, and the ledger checks.
func TestReportFailureRefundsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		break_ func(b *rbundle) (artifactStore store.Store)
		reason string
	}{
		{"artifact store refuses the PDF", func(b *rbundle) store.Store { return failingArtifacts{b.store} }, "internal_error"},
		{"release tiles removed", func(b *rbundle) store.Store {
			infos, err := b.store.List(b.ctx, "releases/"+boresID+"/"+b.releases[boresID]+"/tiles/")
			if err != nil || len(infos) == 0 {
				b.t.Fatalf("tiles: %v %v", infos, err)
			}
			for _, in := range infos {
				if err := b.store.Delete(b.ctx, in.Key); err != nil {
					b.t.Fatal(err)
				}
			}
			return b.store
		}, "source_unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := reportSetup(t, nil)
			st := tc.break_(b)
			rep, pur := b.order()
			const attempts = 3
			eng := newEngine(t, b.store, engine.Options{MemoryBudget: 64 << 20, Logger: b.log})
			r := newRunner(t, jobs.Config{MaxAttempts: attempts, Logger: b.log}, b.led, eng, st)
			for i := 1; i <= attempts; i++ {
				if ran, err := r.RunReportOnce(b.ctx); !ran || err != nil {
					t.Fatalf("attempt %d: RunReportOnce = %v, %v", i, ran, err)
				}
				got := b.report(rep.ID)
				if want := map[bool]string{true: ledger.ReportFailed, false: ledger.ReportQueued}[i == attempts]; got.Status != want || got.Attempts != i {
					t.Fatalf("after attempt %d: report %+v", i, got)
				}
			}
			got := b.report(rep.ID)
			if got.ReasonCode == nil || *got.ReasonCode != tc.reason || got.RevisionCount != 0 {
				t.Fatalf("failed report %+v", got)
			}
			if ran, err := r.RunReportOnce(b.ctx); ran || err != nil {
				t.Fatalf("a failed report was claimed again: %v, %v", ran, err)
			}
			// A late failure (another replica's janitor) refunds nothing more.
			if failed, err := b.led.FailReport(b.ctx, rep.ID, "internal_error"); failed || err != nil {
				t.Fatalf("second FailReport = %v, %v", failed, err)
			}
			acct, _ := b.led.Account(b.ctx, b.account)
			p, _ := b.led.Purchase(b.ctx, b.account, pur.ID)
			if acct.CreditBalance != credits || *p.CreditsRefunded != reportPrice || *p.RefundStatus != "full" {
				t.Fatalf("balance %d, purchase %+v", acct.CreditBalance, p)
			}
			if !strings.Contains(b.logs.String(), "report build failed") || !strings.Contains(b.logs.String(), "reason_code="+tc.reason) {
				t.Fatalf("the failure is not logged with its reason:\n%s", b.logs)
			}
			b.checkLedger()
		})
	}
}

// TestReportTooLargeFailsAtOnce: a PDF over the limit fails its report
// output_too_large on the first attempt (no retry can shrink it), with one
// refund, and nothing is stored or recorded as a revision.
func TestReportTooLargeFailsAtOnce(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	rep, pur := b.order()
	r := b.runner(jobs.Config{MaxAttempts: 3, MaxReportBytes: 4096}, nil)
	if ran, err := r.RunReportOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v", ran, err)
	}
	got := b.report(rep.ID)
	if got.Status != ledger.ReportFailed || got.Attempts != 1 || got.ReasonCode == nil || *got.ReasonCode != "output_too_large" || got.RevisionCount != 0 {
		t.Fatalf("report %+v (reason %v)", got, got.ReasonCode)
	}
	if infos, err := b.store.List(b.ctx, "artifacts/"); err != nil || len(infos) != 0 {
		t.Fatalf("artifacts stored for a failed report: %v %v", infos, err)
	}
	acct, _ := b.led.Account(b.ctx, b.account)
	p, _ := b.led.Purchase(b.ctx, b.account, pur.ID)
	if acct.CreditBalance != credits || *p.CreditsRefunded != reportPrice || *p.RefundStatus != "full" {
		t.Fatalf("balance %d, purchase %+v", acct.CreditBalance, p)
	}
	b.checkLedger()
}

// TestStaleReportBuildIsRetriedThenFailed: a builder that crashes leaves
// its claim to expire; the janitor requeues the report until its attempts
// are used, then fails it and refunds it once.
func TestStaleReportBuildIsRetriedThenFailed(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	rep, pur := b.order()
	r := b.runner(jobs.Config{MaxAttempts: 2, ReportAttempt: time.Minute}, nil)
	for attempt := 1; attempt <= 2; attempt++ {
		// A builder claims it, then crashes: its claim simply expires.
		if c, err := b.led.ClaimReport(b.ctx, time.Minute); err != nil || c.ID != rep.ID {
			t.Fatalf("claim %d: %v %v", attempt, c.ID, err)
		}
		if err := r.Sweep(b.ctx); err != nil {
			t.Fatal(err)
		}
		if s := b.report(rep.ID).Status; s != ledger.ReportRunning {
			t.Fatalf("a live claim was swept: %s", s)
		}
		b.clk.Advance(2 * time.Minute)
		if err := r.Sweep(b.ctx); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: ledger.ReportFailed, false: ledger.ReportQueued}[attempt == 2]
		if got := b.report(rep.ID); got.Status != want || got.Attempts != attempt {
			t.Fatalf("after crash %d: %+v", attempt, got)
		}
	}
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	got := b.report(rep.ID)
	acct, _ := b.led.Account(b.ctx, b.account)
	p, _ := b.led.Purchase(b.ctx, b.account, pur.ID)
	if *got.ReasonCode != "internal_error" || acct.CreditBalance != credits || *p.CreditsRefunded != reportPrice {
		t.Fatalf("report %+v, balance %d, purchase %+v", got, acct.CreditBalance, p)
	}
	b.checkLedger()
}

// TestStaleReportIsBuiltByAnotherRunner: the janitor requeues a crashed
// build and a runner builds it.
func TestStaleReportIsBuiltByAnotherRunner(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	rep, pur := b.order()
	if _, err := b.led.ClaimReport(b.ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	b.clk.Advance(2 * time.Minute)
	r := b.runner(jobs.Config{}, nil)
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if ran, err := r.RunReportOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v", ran, err)
	}
	rev := b.built(rep.ID, 1)
	if got := b.report(rep.ID); got.Attempts != 2 {
		t.Fatalf("attempts %d", got.Attempts)
	}
	b.checkFirstRevision(rep, pur, rev)
	b.checkLedger()
}

// TestStopRequeuesInterruptedReportBuild: a build still running when
// Stop's deadline passes is requeued, its attempt not counted, not failed.
func TestStopRequeuesInterruptedReportBuild(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	gate := newGate(b.store) // never opened: the build cannot finish
	r := b.runner(jobs.Config{Workers: 1}, gate)
	r.Start(b.ctx)
	rep, _ := b.order()
	r.Notify()
	<-gate.opened
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	if err := r.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := b.report(rep.ID); got.Status != ledger.ReportQueued || got.Attempts != 0 || got.ReasonCode != nil {
		t.Fatalf("interrupted report %+v", got)
	}
	if strings.Contains(b.logs.String(), "report build failed") {
		t.Fatalf("an interrupted build was logged as a failure:\n%s", b.logs)
	}
	if ran, err := b.runner(jobs.Config{}, nil).RunReportOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v", ran, err)
	}
	b.built(rep.ID, 1)
}

// TestReviseReport: a revision built after a new release states what
// changed (release, count, added and removed features) in its evidence,
// its PDF and its text; the first revision is kept unchanged, and no
// credits move.
func TestReviseReport(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	rep, _ := b.order()
	r := b.runner(jobs.Config{}, nil)
	if ran, err := r.RunReportOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v", ran, err)
	}
	first := b.built(rep.ID, 1)
	oldRelease := b.releases[boresID]
	pts := boreFeatures(map[string]orb.Point{"B-NEW": north(origin, 300)})
	delete(pts, "B-0500")
	newRelease := b.publishBores(pts)
	b.clk.Advance(24 * time.Hour)
	rev, err := r.ReviseReport(b.ctx, rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Number != 2 || rev.ReportID != rep.ID {
		t.Fatalf("revision %+v", rev)
	}
	latest := b.built(rep.ID, 2)
	if latest.ID != rev.ID {
		t.Fatalf("latest %v, revised %v", latest.ID, rev.ID)
	}
	var ev jobs.Evidence
	if err := json.Unmarshal(latest.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.PreviousRevisionID == nil || *ev.PreviousRevisionID != first.ID.String() {
		t.Fatalf("previous revision %v", ev.PreviousRevisionID)
	}
	for _, l := range ev.Layers {
		c := l.Changes
		switch l.LayerID {
		case boresID:
			if c == nil || !c.ReleaseChanged || *c.PreviousReleaseID != oldRelease || *l.ReleaseID != newRelease || *c.PreviousCount != 12 ||
				*l.MatchedCount != 12 || !slices.Equal(c.Added, []string{"B-NEW"}) || !slices.Equal(c.Removed, []string{"B-0500"}) ||
				c.AddedCount != 1 || c.RemovedCount != 1 {
				t.Fatalf("bores changes %+v", c)
			}
		case floodID:
			if c == nil || c.ReleaseChanged || c.AddedCount != 0 || c.RemovedCount != 0 || len(c.Added) != 0 {
				t.Fatalf("flood changes %+v", c)
			}
		}
	}
	text := flat(pdfText(t, b.pdf(&latest)))
	for _, w := range []string{"Changes since revision 1", "release " + oldRelease + " → " + newRelease, "added B-NEW", "removed B-0500", "B-NEW"} {
		if !strings.Contains(text, w) {
			t.Errorf("revision 2's PDF lacks %q", w)
		}
	}
	secs, err := b.led.ReportSections(b.ctx, latest.ID, -1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var changes string
	for _, s := range secs {
		if *s.Heading == "Changes since revision 1" {
			changes = s.Text
		}
	}
	if want := "test.bores: release " + oldRelease + " → " + newRelease + "; 1 added, 1 removed; added B-NEW; removed B-0500."; changes != want {
		t.Fatalf("changes text %q, want %q", changes, want)
	}
	revs, err := b.led.ListRevisions(b.ctx, b.account, rep.ID, 0, 10)
	if err != nil || len(revs) != 2 || revs[0].ID != first.ID || !bytes.Equal(revs[0].Evidence, first.Evidence) || len(revs[0].Artifacts) != 1 {
		t.Fatalf("revisions %v %+v", err, revs)
	}
	acct, _ := b.led.Account(b.ctx, b.account)
	if acct.CreditBalance != credits-reportPrice {
		t.Fatalf("balance %d after a revision", acct.CreditBalance)
	}
	// Nothing new: revision 3 says so.
	if _, err := r.ReviseReport(b.ctx, rep.ID); err != nil {
		t.Fatal(err)
	}
	third := b.built(rep.ID, 3)
	if text := flat(pdfText(t, b.pdf(&third))); !strings.Contains(text, "Changes since revision 2 Nothing changed") {
		t.Fatalf("revision 3 does not say nothing changed:\n%s", text)
	}
	b.checkLedger()
}

// TestReviseRefusesUnbuiltReports: only a completed, built report is revised.
func TestReviseRefusesUnbuiltReports(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	rep, _ := b.order()
	r := b.runner(jobs.Config{}, nil)
	if _, err := r.ReviseReport(b.ctx, rep.ID); !errors.Is(err, jobs.ErrNotRevisable) {
		t.Fatalf("revising a queued report: %v", err)
	}
	if _, err := r.ReviseReport(b.ctx, uuid.New()); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("revising a missing report: %v", err)
	}
	id, rid := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := b.led.ImportReport(b.ctx, ledger.ImportReportParams{ID: id, RevisionID: rid, Account: b.account, SiteID: b.site,
		CreatedAt: b.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReviseReport(b.ctx, id); !errors.Is(err, jobs.ErrNotRevisable) {
		t.Fatalf("revising an imported report: %v", err)
	}
}

// TestFitSections: retained text always fits the contract's limits, is cut
// on a UTF-8 boundary and says where it was cut.
func TestFitSections(t *testing.T) {
	t.Parallel()
	h := "heading"
	sec := func(n int, text string) []ledger.ReportSection {
		out := make([]ledger.ReportSection, n)
		for i := range out {
			out[i] = ledger.ReportSection{Index: i, Heading: &h, Text: text}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		in       []ledger.ReportSection
		sections int
		cut      bool // some text was cut
	}{
		{"small", sec(3, "hello"), 3, false},
		{"exactly 8 KiB", sec(1, strings.Repeat("a", ledger.MaxSectionBytes)), 1, false},
		{"multibyte over 8 KiB", sec(2, strings.Repeat("é€😀", 2000)), 2, true},
		{"too many sections", sec(300, "x"), ledger.MaxSections, true},
		{"over 1 MiB", sec(150, strings.Repeat("b", ledger.MaxSectionBytes)), 128, true},
		{"invalid UTF-8", sec(1, "ok\xffok"), 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := jobs.FitSections(tc.in)
			if err := ledger.ValidateSections(out); err != nil {
				t.Fatal(err)
			}
			if len(out) != tc.sections {
				t.Fatalf("%d sections, want %d", len(out), tc.sections)
			}
			cut := false
			for _, s := range out {
				if !utf8.ValidString(s.Text) {
					t.Fatal("invalid UTF-8")
				}
				cut = cut || strings.HasSuffix(s.Text, "\n[truncated]")
			}
			if cut != tc.cut {
				t.Fatalf("cut = %v, want %v", cut, tc.cut)
			}
			if tc.cut && !strings.HasSuffix(out[len(out)-1].Text, "\n[truncated]") {
				t.Fatal("the last section does not say the text was cut")
			}
		})
	}
}

// TestReportLayerWithoutRelease: a layer in scope with no release to read
// is stated as unavailable (count unknown, not zero), the revision's
// provenance is partial and its limitations say why; the rest is built.
func TestReportLayerWithoutRelease(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	rep, _, err := b.led.OrderReport(b.ctx, ledger.OrderReportParams{Account: b.account, Integration: b.integ, IdemKey: "gone",
		SiteID: b.site, Jurisdiction: "NSW", DatasetIDs: []string{boresID, "test.unpublished"}, Price: reportPrice})
	if err != nil {
		t.Fatal(err)
	}
	if ran, err := b.runner(jobs.Config{}, nil).RunReportOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v", ran, err)
	}
	rev := b.built(rep.ID, 1)
	if rev.ProvenanceStatus != "partial" || !strings.Contains(strings.Join(rev.Limitations, " "), "test.unpublished had no published release") {
		t.Fatalf("revision %+v", rev)
	}
	var ev jobs.Evidence
	if err := json.Unmarshal(rev.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	for _, l := range ev.Layers {
		if l.LayerID == "test.unpublished" && (l.DataStatus != "unavailable" || l.MatchedCount != nil || l.ReleaseID != nil || *l.Reason != "source_unavailable") {
			t.Fatalf("unpublished layer %+v", l)
		}
	}
	if text := flat(pdfText(t, b.pdf(&rev))); !strings.Contains(text, "test.unpublished") || !strings.Contains(text, "Source unavailable") {
		t.Fatalf("the PDF does not state the unpublished layer:\n%s", text)
	}
	b.checkLedger()
}
