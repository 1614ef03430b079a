package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/planar"

	"siteenv/clock"
	"siteenv/engine"
	"siteenv/geo"
	"siteenv/ingest"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
	"siteenv/report/content"
)

// sample is a report the samples test builds on the demo data.
type sample struct {
	name, jurisdiction string
	site               orb.Geometry
	siteName           string
}

// TestReportSamples builds two reports on the demo's synthetic data (the
// benchmark's: every report-approved layer): a Parramatta lot saved from
// its cadastral parcel, and a point in Darwin. For each it checks that
// every layer's profile bands sum to its matched count, that every listed
// feature's map key is unique in the report and appears exactly once, on
// its section map or in its layer's not-drawn list, and compares the
// evidence (bands, map keys, site profile, not-drawn lists, location) with
// testdata/samples-*.txt (-update rewrites them). With
// SITEENV_REPORT_SAMPLES=DIR the PDFs are written there to look at
// (pdftoppm -png -r 60 DIR/parramatta-lot.pdf DIR/p).
//
// It skips under the race detector, where building the demo data (synth
// and ingest, packages make test runs without it) takes about seven times
// as long; make test runs it without the detector (the Makefile's
// PLAIN_RUN). The report build's concurrency is raced by the other report
// tests (TestReportIsBuilt and the rest), over the same code paths.
func TestReportSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo data (about 40 s)")
	}
	if raceEnabled {
		t.Skip("builds the demo data, about 7 x slower under -race: make test runs it without the race detector (PLAIN_RUN)")
	}
	d := reportBenchSetup(t)
	ctx := context.Background()
	led := ledgertest.New(t, clock.NewFake(time.Date(2026, 11, 23, 23, 30, 0, 0, time.UTC)))
	for _, p := range d.published {
		if err := (ingest.LedgerPublisher{Ledger: led}).Publish(ctx, p.def, p.m); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	if _, _, err := led.ReplaceGazetteer(ctx, func() (ledger.AddressRow, bool, error) { return ledger.AddressRow{}, false, nil },
		func() (ledger.ParcelRow, bool, error) {
			if i == len(d.parcels) {
				return ledger.ParcelRow{}, false, nil
			}
			i++
			return d.parcels[i-1], true, nil
		}); err != nil {
		t.Fatal(err)
	}
	// The Parramatta lot: the addressed NSW parcel nearest the demo's
	// first address.
	var lot ledger.ParcelRow
	best := math.Inf(1)
	centre := benchSite.Bound().Center()
	for _, p := range d.parcels {
		if p.Jurisdiction != "NSW" || p.Address == nil {
			continue
		}
		c := orb.Point{(p.MinLon + p.MaxLon) / 2, (p.MinLat + p.MaxLat) / 2}
		if dd := planar.Distance(c, centre); dd < best {
			best, lot = dd, p
		}
	}
	if lot.Geometry == nil {
		t.Fatal("no NSW parcel near the Parramatta site in the demo data")
	}
	g, err := geojson.UnmarshalGeometry(lot.Geometry)
	if err != nil {
		t.Fatal(err)
	}
	samples := []sample{
		{"parramatta-lot", "NSW", g.Geometry(), *lot.Address},
		{"nt-point", "NT", ntPoint, "Darwin point"},
	}
	var ids []string
	for _, p := range d.published {
		ids = append(ids, p.def.LayerID)
	}
	acct, err := led.CreateAccount(ctx, "Samples", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := led.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, d.store, engine.Options{})
	r := newRunner(t, jobs.Config{Logger: slog.New(slog.DiscardHandler), Basemap: d.openBasemap(t)}, led, eng, d.store)
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			raw, _ := json.Marshal(geojson.NewGeometry(s.site))
			bd := s.site.Bound()
			name := s.siteName
			site, err := led.CreateSite(ctx, ledger.Site{AccountID: acct.ID, Name: &name, Geometry: raw, Fingerprint: geo.Fingerprint(s.site),
				AreaM2: geo.Area(s.site), Bounds: [4]float64{bd.Min[0], bd.Min[1], bd.Max[0], bd.Max[1]}})
			if err != nil {
				t.Fatal(err)
			}
			rep, _, err := led.OrderReport(ctx, ledger.OrderReportParams{Account: acct.ID, Integration: k.IntegrationID, SiteID: site.ID,
				Jurisdiction: s.jurisdiction, DatasetIDs: ids, Price: 0})
			if err != nil {
				t.Fatal(err)
			}
			if ran, err := r.RunReportOnce(ctx); !ran || err != nil {
				t.Fatalf("RunReportOnce = %v, %v", ran, err)
			}
			got, err := led.ReportByID(ctx, rep.ID)
			if err != nil || got.Latest == nil {
				t.Fatalf("report %+v: %v", got, err)
			}
			var ev jobs.Evidence
			if err := json.Unmarshal(got.Latest.Evidence, &ev); err != nil {
				t.Fatal(err)
			}
			checkEvidence(t, &ev)
			golden(t, "samples-"+s.name+".txt", evidenceSummary(&ev))
			pdf := readArtifact(t, ctx, d, got.Latest.Artifacts[0].StorageKey)
			checkPDFListsEveryRecord(t, pdf, &ev, d.published)
			if dir := os.Getenv("SITEENV_REPORT_SAMPLES"); dir != "" {
				if err := os.WriteFile(filepath.Join(dir, s.name+".pdf"), pdf, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// checkEvidence: bands sum to matched counts; map keys unique and each
// on a map or in a not-drawn list, exactly once.
func checkEvidence(t *testing.T, ev *jobs.Evidence) {
	t.Helper()
	seen := map[int]string{}
	for _, l := range ev.Layers {
		if l.MatchedCount != nil {
			if len(l.Bands) == 0 {
				t.Errorf("%s: matched %d but no bands", l.LayerID, *l.MatchedCount)
			}
			var sum int64
			for _, b := range l.Bands {
				if b.Count != nil {
					sum += *b.Count
				} else if deref(l.Reason) != "outside_coverage" && (b.MinM < l.RadiusM || b.Band == "on_site") {
					t.Errorf("%s: band %s within the radius %v has no count", l.LayerID, b.Band, l.RadiusM)
				}
			}
			if sum != *l.MatchedCount {
				t.Errorf("%s: bands sum to %d, matched %d", l.LayerID, sum, *l.MatchedCount)
			}
		}
		notDrawn := map[int]int{}
		for _, k := range l.NotDrawn {
			notDrawn[k]++
		}
		for _, f := range l.Features {
			if f.MapKey <= 0 {
				t.Errorf("%s %s: no map key", l.LayerID, f.FeatureID)
				continue
			}
			if other, dup := seen[f.MapKey]; dup {
				t.Errorf("map key %d names %s and %s", f.MapKey, other, f.FeatureID)
			}
			seen[f.MapKey] = f.FeatureID
			places := notDrawn[f.MapKey]
			if f.Drawn {
				places++
				if f.DistanceM > l.MapRadiusM {
					t.Errorf("%s %s: drawn at %v m, beyond the map's %v m", l.LayerID, f.FeatureID, f.DistanceM, l.MapRadiusM)
				}
			}
			if places != 1 {
				t.Errorf("%s %s: key %d appears %d times on the map and in the not-drawn list", l.LayerID, f.FeatureID, f.MapKey, places)
			}
		}
	}
}

// evidenceSummary is the evidence's content in a diffable form.
func evidenceSummary(ev *jobs.Evidence) string {
	var b strings.Builder
	if loc := ev.Site.Location; loc != nil {
		fmt.Fprintf(&b, "site %.6f %.6f", loc.Latitude, loc.Longitude)
		if loc.MGAZone != nil {
			fmt.Fprintf(&b, " MGA %d %.2f %.2f", *loc.MGAZone, *loc.Easting, *loc.Northing)
		}
		fmt.Fprintf(&b, " tz %s\naddresses %q\nlot/plans %q\nlocal government areas %q\n", loc.TimeZone, loc.Addresses, loc.LotPlans, loc.LGAs)
	}
	fmt.Fprintf(&b, "site profile:")
	for _, s := range ev.SiteProfile {
		fmt.Fprintf(&b, " [%d] %s %s;", s.MapKey, s.LayerID, s.FeatureID)
	}
	b.WriteString("\n")
	for _, l := range ev.Layers {
		fmt.Fprintf(&b, "\n%s: %s %s, matched %s, radius %v, map %v\n  bands", l.LayerID, l.DataStatus, deref(l.Reason), count64(l.MatchedCount), l.RadiusM, l.MapRadiusM)
		for _, bd := range l.Bands {
			fmt.Fprintf(&b, " %s=%s", bd.Band, count64(bd.Count))
		}
		b.WriteString("\n")
		for _, f := range l.Features {
			where := "drawn"
			if !f.Drawn {
				where = "not drawn"
			}
			fmt.Fprintf(&b, "  [%d] %s %.1f m %s %s\n", f.MapKey, f.FeatureID, f.DistanceM, f.Band, where)
		}
		if len(l.NotDrawn) > 0 {
			fmt.Fprintf(&b, "  not drawn: %v\n", l.NotDrawn)
		}
	}
	return b.String()
}

func count64(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the evidence (run with -update to accept):\n%s", path, got)
	}
}

func readArtifact(t *testing.T, ctx context.Context, d *reportBenchData, key string) []byte {
	t.Helper()
	obj, err := d.store.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	pdf := make([]byte, obj.Size())
	if _, err := obj.ReadAt(pdf, 0); err != nil {
		t.Fatal(err)
	}
	return pdf
}

// checkPDFListsEveryRecord: every matched record of every layer is in the
// PDF exactly once (twice when on the site: its card and the site profile),
// nothing says records are "not listed", and every field of the schema of
// a layer with record cards is printed under its title with its unit.
func checkPDFListsEveryRecord(t *testing.T, pdf []byte, ev *jobs.Evidence, published []publishedRelease) {
	t.Helper()
	text := pdfRawText(t, pdf)
	if strings.Contains(text, "not listed") {
		t.Error("the PDF says some records are not listed")
	}
	defs := map[string]*ingest.LayerDef{}
	for _, p := range published {
		defs[p.def.LayerID] = p.def
	}
	flatText := flat(text)
	records := 0
	for _, l := range ev.Layers {
		if l.DataStatus == "data_present" && (l.MatchedCount == nil || int64(len(l.Features)) != *l.MatchedCount) {
			t.Errorf("%s: %d features in the evidence of %v matched", l.LayerID, len(l.Features), l.MatchedCount)
		}
		cards := false
		for _, f := range l.Features {
			records++
			want := 1
			if f.OnSite {
				want = 2
			}
			if n := strings.Count(text, f.FeatureID); n != want {
				t.Errorf("%s %s (key %d): in the PDF %d times, want %d", l.LayerID, f.FeatureID, f.MapKey, n, want)
			}
			cards = cards || f.Listed == "card"
		}
		if def := defs[l.LayerID]; cards && def != nil {
			schema, _ := json.Marshal(def.FieldSchema)
			units, _ := json.Marshal(def.Units)
			fields := content.NewFields(schema, units)
			for _, name := range fields.Names() {
				if label := fields.Label(name); !strings.Contains(flatText, label) {
					t.Errorf("%s: field %s is not printed as %q", l.LayerID, name, label)
				}
			}
		}
	}
	t.Logf("%d records, each in the PDF", records)
}

// pdfRawText is the PDF's text in content-stream order (pdftotext -raw),
// so that a wrapped cell's lines stay together.
func pdfRawText(t *testing.T, pdf []byte) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "r.pdf")
	if err := os.WriteFile(in, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pdftotext", "-raw", "-enc", "UTF-8", in, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}
