package report

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func ptrInt(n int) *int { return &n }

// sampleReport is a two-section report whose layers end every way a layer
// can: records found, no records, not covered, source unavailable.
func sampleReport() Report {
	cover := pointSiteMap()
	flood := borderMap()
	for _, m := range []*Map{&cover, &flood} {
		m.Print = true
		for i := range m.Layers {
			m.Layers[i].Keys = make([]int, len(m.Layers[i].Features))
			if len(m.Layers[i].Keys) > 0 {
				m.Layers[i].Keys[0] = 2
			}
		}
	}
	src := func(layer, p, a string) SourceRow {
		return SourceRow{Layer: layer, Provider: p, Variant: strings.ToLower(strings.Fields(p)[0]) + "-2024", Release: "r_aaaa", Licence: "CC-BY-4.0",
			Attribution: a, URL: "https://example.gov.au/" + strings.ToLower(strings.ReplaceAll(p, " ", "-")),
			Published: "2024-03-01", Effective: "2024-02-15", Retrieved: "2024-03-05T00:00:00Z", Coverage: "complete"}
	}
	rows := []Row{
		{Key: 1, Layer: "NSW contaminated land notified to the EPA", ID: "NSWEPA-00000017", DistanceM: 0, BearingDeg: math.NaN(), OnSite: true,
			Fields: []Field{{"Name of the notified site", "Former service station"}, {"EPA regulatory status", "Regulated"}}},
		{Key: 2, Layer: "NSW contaminated land notified to the EPA", ID: "NSWEPA-00000042", DistanceM: 412.3, BearingDeg: 47,
			Fields: []Field{{"Name of the notified site", "Dry cleaner"}, {"EPA regulatory status", "Under assessment"}}},
	}
	two, zero := 2, 0
	band := func(v ...int) []*int {
		out := make([]*int, 8)
		for i, n := range v {
			if n >= 0 {
				out[i] = &v[i]
			}
		}
		return out
	}
	return Report{
		ReportID: "0190c6d4-6f1e-7b8a-9c3d-4e5f60718293", RevisionID: "0190c6d4-7000-7b8a-9c3d-4e5f60718294", Revision: 2,
		ReceiptID: "0190c6d4-7100-7b8a-9c3d-4e5f60718295", Created: time.Date(2026, 11, 23, 4, 5, 6, 0, time.UTC),
		Site: ReportSite{Name: "12 Smith Street, Parramatta", Reference: "crm: DEAL-42", Addresses: []string{"12 Smith Street, PARRAMATTA NSW 2150"},
			LGAs:     []string{"City of Parramatta"},
			LotPlans: []string{"1/DP608976"}, Lon: 151.0036, Lat: -33.815, MGAZone: 56, Easting: 315223.7, Northing: 6256564.2,
			AreaM2: 612.5, Jurisdiction: "NSW", Built: "23 November 2026 15:05 AEDT (UTC+11:00)"},
		Locality: cover, SearchArea: Map{Site: cover.Site, Print: true, Rings: []float64{100, 250, 500, 1000, 2000}},
		Overview: []OverviewLine{{Section: "Contamination", Key: "contamination", Finding: "On site", Detail: "NSW contaminated land notified to the EPA"},
			{Section: "Flooding", Key: "flood", Finding: "None found", Detail: "1 layer unavailable"}},
		Profile: []ProfileRow{
			{Section: "Contamination", Layer: "NSW contaminated land notified to the EPA", Counts: band(1, 0, 0, 1, 0, 0, -1, -1), Total: &two},
			{Section: "Contamination", Layer: "Victoria EPA Priority Sites Register", Counts: band(-1, -1, -1, -1, -1, -1, -1, -1), Total: &zero, Note: "Not covered: the data does not reach the site", NotCovered: true},
			{Section: "Flooding", Layer: "Flood planning areas", Counts: band(0, 0, 0, 0, 0, -1, -1, -1), Total: &zero},
			{Section: "Flooding", Layer: "Flood warning gauges", Counts: band(-1, -1, -1, -1, -1, -1, -1, -1), Note: "Source unavailable: count unknown"},
		},
		SiteProfile: rows[:1],
		Sections: []ReportSection{
			{Key: "contamination", Name: "Contamination", Map: cover, MapRadiusM: 2000, NotCovered: []string{"Victoria EPA Priority Sites Register"},
				Legend: []LegendEntry{{Style: 0, Name: "NSW contaminated land notified to the EPA", Kind: "point", Features: 6, Marks: 6, Keyed: 1}},
				Layers: []ReportLayer{
					{ID: "nsw-epa-contaminated-land", Name: "NSW contaminated land notified to the EPA", ReleaseID: "r_aaaa", SchemaVersion: "2024-03",
						RadiusM: 2000, Status: "data_present", Coverage: "complete", Count: &two,
						DetailM: 500, BriefFields: []string{"Name of the notified site", "EPA regulatory status"}, Cards: rows[:1], Appendix: rows[1:]},
					{ID: "vic-epa-priority-sites", Name: "Victoria EPA Priority Sites Register", ReleaseID: "r_bbbb", SchemaVersion: "2023-11",
						RadiusM: 2000, Status: "no_data", Reason: "outside_coverage", Coverage: "none", Count: &zero},
				}},
			{Key: "flood", Name: "Flooding", Map: flood, MapRadiusM: 2000, Warning: "No NSW register: a test warning.",
				Detail: func() Map { m := flood; m.Rings = []float64{100, 250}; return m }(), DetailRadiusM: 250,
				Legend: []LegendEntry{{Style: 0, Name: "Flood planning areas", Kind: "polygon", Features: 3}},
				Layers: []ReportLayer{
					{ID: "nsw-flood-planning-area", Name: "Flood planning areas", ReleaseID: "r_cccc", SchemaVersion: "2024-01",
						RadiusM: 1000, Status: "no_data", Reason: "no_matches", Coverage: "complete", Count: &zero},
					{ID: "bom-flood-warning-gauges", Name: "Flood warning gauges", ReleaseID: "r_dddd", SchemaVersion: "2024.1",
						RadiusM: 10000, Status: "unavailable", Reason: "source_unavailable", Coverage: "unknown"},
				}},
		},
		Changes: []LayerChange{{LayerID: "nsw-epa-contaminated-land", OldRelease: "r_0000", NewRelease: "r_aaaa", Added: []string{"NSWEPA-00000042"},
			AddedCount: 1, Bands: []string{"250–500 m 0 → 1"}}},
		Sources: []SourceRow{src("NSW contaminated land notified to the EPA", "NSW Environment Protection Authority", "© State of New South Wales (EPA) 2024"),
			src("Flood warning gauges", "Bureau of Meteorology", "© Commonwealth of Australia (Bureau of Meteorology) 2024")},
		Limitations: []string{Limitations, "Coverage. A second paragraph."},
	}
}

// pdfText extracts a PDF's text with poppler's pdftotext (installed by
// scripts/install-test-tools.sh), as a reader of the filed report would.
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

func TestPDFStatesEveryLine(t *testing.T) {
	r := sampleReport()
	pdf, err := RenderPDF(r)
	if err != nil {
		t.Fatal(err)
	}
	text := pdfText(t, pdf)
	flat := strings.Join(strings.Fields(text), " ")
	want := []string{r.Site.Name, r.ReportID, r.ReceiptID, "DEAL-42", "613 m²", "NSW", "1/DP608976", "PARRAMATTA NSW 2150",
		"33.815000° S, 151.003600° E", "zone 56: 315223.7 mE, 6256564.2 mN", "AEDT (UTC+11:00)",
		"Records found", "No records", "Not covered", "Source unavailable", "Statistical profile", "Site profile",
		"NSWEPA-00000042", "412 m", "NE", "on site", "Dry cleaner", "EPA regulatory status", "beyond the map's frame", "Appendix A: records beyond the detail distance",
		"Changes since revision 1", "250–500 m 0 → 1", "No NSW register",
		"Detail: the records keyed within 250 m of the site boundary (rings 100 m, 250 m)", "Those within 250 m are on the detail map",
		strings.Join(strings.Fields(Limitations), " ")}
	for _, s := range r.Sections {
		want = append(want, s.Name)
		for _, l := range s.Layers {
			want = append(want, l.Name)
			if l.Reason != "outside_coverage" {
				want = append(want, l.ReleaseID)
			}
		}
	}
	for _, src := range r.Sources {
		want = append(want, src.Attribution, src.Licence, strings.Fields(src.Provider)[0])
	}
	for _, w := range want {
		if !strings.Contains(flat, w) {
			t.Errorf("the PDF's text lacks %q", w)
		}
	}
	// A layer whose data does not reach the site has no row in the
	// statistical profile: the profile names it once, below its table.
	if i, j := strings.Index(flat, "Statistical profile"), strings.Index(flat, "Site profile"); i < 0 || j < i {
		t.Error("the PDF lacks the statistical profile or the site profile")
	} else if prof := flat[i:j]; !strings.Contains(prof, "Not covered here (the data does not reach the site; nothing was searched): Victoria EPA Priority Sites Register.") ||
		strings.Contains(prof, "Not covered: the data does not reach the site") {
		t.Errorf("the statistical profile does not name its not-covered layer once below the table: %q", prof)
	}
	if !bytes.Contains(pdf, []byte("/FontFile2")) {
		t.Error("fonts are not embedded")
	}
	// The overview links to the sections; the outline has a bookmark per
	// part and layer.
	for _, w := range []string{"/Outlines", "/Subtype /Link", "/First "} {
		if !bytes.Contains(pdf, []byte(w)) {
			t.Errorf("the PDF has no %s", w)
		}
	}
}

// Golden text: what a reader extracts, page by page (-update rewrites it).
func TestPDFGoldenText(t *testing.T) {
	pdf, err := RenderPDF(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	got := pdfText(t, pdf)
	golden := filepath.Join("testdata", "report.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run TestPDFGoldenText -update)", err)
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

func TestPDFDeterministic(t *testing.T) {
	a, err := RenderPDF(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	// Several renders: resource order inside fpdf once depended on map
	// iteration, which two renders alone caught only half the time.
	for range 6 {
		b, err := RenderPDF(sampleReport())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("renders of the same report differ")
		}
	}
	r := sampleReport()
	r.Created = r.Created.Add(time.Hour)
	c, _ := RenderPDF(r)
	if bytes.Equal(a, c) {
		t.Fatal("the build time does not reach the PDF")
	}
}

func TestPDFRefusesIncompleteInput(t *testing.T) {
	if _, err := RenderPDF(Report{}); err == nil {
		t.Fatal("a report without id and time was printed")
	}
}

func TestDirection(t *testing.T) {
	for _, tc := range []struct {
		deg  float64
		want string
	}{{0, "N"}, {11, "N"}, {12, "NNE"}, {45, "NE"}, {90, "E"}, {180, "S"}, {270, "W"}, {350, "N"}, {-45, "NW"}, {math.NaN(), "on site"}} {
		if got := direction(tc.deg); got != tc.want {
			t.Errorf("direction(%v) = %s, want %s", tc.deg, got, tc.want)
		}
	}
}

// BenchmarkReportPDF prints the sample report (two sections, three maps).
func BenchmarkReportPDF(b *testing.B) {
	r := sampleReport()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := RenderPDF(r); err != nil {
			b.Fatal(err)
		}
	}
}
