package content

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"siteenv/report"
)

// east is a point m metres east of p (at about 34° S).
func east(p orb.Point, m float64) orb.Point { return orb.Point{p[0] + m/(111_320*0.829), p[1]} }

var origin = orb.Point{151.0036, -33.815}

// lot is a 20 m square site at origin.
var lot = orb.Polygon{{{151.0035, -33.8151}, {151.0037, -33.8151}, {151.0037, -33.8149}, {151.0035, -33.8149}, {151.0035, -33.8151}}}

func points(prefix string, dists ...float64) []Feature {
	var out []Feature
	for i, d := range dists {
		out = append(out, Feature{ID: fmt.Sprintf("%s-%02d", prefix, i), DistanceM: d, Geometry: east(origin, d+10),
			Properties: func() map[string]any {
				return map[string]any{"bore_id": "GW1", "probability_class": "High", "depth_m": 12.5}
			}})
	}
	return out
}

func layer(id, section string, radius float64, states []string, fs []Feature) Layer {
	n := len(fs)
	l := Layer{ID: id, Name: "Layer " + id, SectionKey: section, SectionName: strings.ToUpper(section[:1]) + section[1:], Jurisdictions: states,
		ReleaseID: "r_" + id, SchemaVersion: "1", RadiusM: radius, Status: "no_data", Reason: "no_matches", Coverage: "complete", Count: &n,
		Features: fs, FieldSchema: json.RawMessage(`{"bore_id":{"type":"string"},"probability_class":{"type":"string","title":"Probability class"},"depth_m":{"type":"number","description":"Depth drilled"}}`),
		Units: json.RawMessage(`{"depth_m":"m"}`)}
	if n > 0 {
		l.Status, l.Reason = "data_present", ""
	}
	return l
}

func sampleInput() Input {
	return Input{ReportID: "r", RevisionID: "v", Revision: 1, Built: time.Date(2026, 11, 23, 23, 30, 0, 0, time.UTC),
		Site: Site{ID: "s", Name: "Lot", AreaM2: 400, Jurisdiction: "NT", Geometry: lot},
		Layers: []Layer{
			layer("a", "contamination", 2000, []string{"NSW"}, nil),
			layer("a2", "contamination", 2000, []string{"VIC"}, nil),
			layer("b", "contamination", 10000, []string{"AUS"}, points("B", 0, 50, 120, 300, 700, 1500, 1999, 2500, 6000, 9000, 9500, 9900)),
			layer("c", "water", 1000, []string{"AUS"}, points("C", 0, 0, 99.9, 100, 250, 999)),
			layer("d", "water", 1000, []string{"QLD"}, nil),
		},
		Parcels: []Parcel{{Jurisdiction: "NT", CadastreID: "1/DP608976", Address: "1 Test Street, DARWIN NT 0800", Geometry: lot}}}
}

// TestBandsSumToMatched: every layer's bands sum to its matched count;
// bands beyond the radius are nil, within it never nil.
func TestBandsSumToMatched(t *testing.T) {
	in := sampleInput()
	out := Build(in)
	for i, l := range in.Layers {
		sum := 0
		for j, c := range out.Layers[i].Bands {
			if c == nil {
				if Searched(j, l.RadiusM) {
					t.Errorf("%s: band %s within %v m has no count", l.ID, Bands[j].Key, l.RadiusM)
				}
				continue
			}
			sum += *c
		}
		if sum != *l.Count {
			t.Errorf("%s: bands sum to %d, matched %d", l.ID, sum, *l.Count)
		}
	}
	// Band edges: 100 m is in 0-100 m, 100.1 in 100-250 m, 0 on site.
	for _, tc := range []struct {
		d    float64
		want string
	}{{0, "on_site"}, {0.01, "0_100m"}, {100, "0_100m"}, {100.1, "100_250m"}, {2000, "1_2km"}, {10000, "5_10km"}} {
		if got := Bands[BandOf(tc.d)].Key; got != tc.want {
			t.Errorf("BandOf(%v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

// TestEveryRecordKeyedAndListed: every matched record of every layer (a
// layer of 500 among them) has a key unique in the report and one row: a
// record card within its layer's detail distance (every schema field,
// titled, with its unit, in schema order), an appendix row beyond; the
// drawn ones are on exactly one map, and every mark on a map is keyed.
func TestEveryRecordKeyedAndListed(t *testing.T) {
	in := sampleInput()
	many := make([]float64, 500)
	for i := range many {
		many[i] = float64(i) * 19.9
	}
	in.Layers = append(in.Layers, layer("m", "water", 10000, []string{"AUS"}, points("M", many...)))
	out := Build(in)
	onMap := keysOnMaps(out.Doc.Sections)
	rows := map[int]report.Row{}
	cards := map[int]bool{}
	for _, s := range out.Doc.Sections {
		// A mark keyed on neither the section map nor its detail map (which
		// takes the near ones' keys) would be a record without a number.
		for i, ml := range s.Map.Layers {
			for j, k := range ml.Keys {
				if s.Detail.Site != nil {
					k = max(k, s.Detail.Layers[i].Keys[j])
				}
				if k <= 0 && ml.Features[j] != nil {
					t.Errorf("%s: a mark without a key", ml.ID)
				}
			}
		}
		for _, l := range s.Layers {
			for _, r := range l.Cards {
				if _, dup := rows[r.Key]; dup {
					t.Errorf("key %d has two rows", r.Key)
				}
				rows[r.Key], cards[r.Key] = r, true
				if r.DistanceM > l.DetailM {
					t.Errorf("key %d: a card at %v m beyond the detail distance %v m", r.Key, r.DistanceM, l.DetailM)
				}
				var names []string
				for _, f := range r.Fields {
					names = append(names, f.Name)
				}
				if want := []string{"Bore ID", "Depth drilled (m)", "Probability class"}; !slices.Equal(names, want) {
					t.Errorf("key %d card fields %v, want %v", r.Key, names, want)
				}
			}
			for _, r := range l.Appendix {
				if _, dup := rows[r.Key]; dup {
					t.Errorf("key %d has two rows", r.Key)
				}
				rows[r.Key] = r
				if r.DistanceM <= l.DetailM {
					t.Errorf("key %d: an appendix row at %v m within the detail distance %v m", r.Key, r.DistanceM, l.DetailM)
				}
			}
		}
	}
	seen := map[int]bool{}
	listed, matched := 0, 0
	for i, f := range out.Layers {
		if in.Layers[i].Status == "data_present" {
			matched += *in.Layers[i].Count
		}
		if len(f.Listed) != len(in.Layers[i].Features) {
			t.Errorf("%s: %d listed of %d matched", in.Layers[i].ID, len(f.Listed), len(in.Layers[i].Features))
		}
		for _, lf := range f.Listed {
			listed++
			if seen[lf.Key] {
				t.Errorf("key %d used twice", lf.Key)
			}
			seen[lf.Key] = true
			r, ok := rows[lf.Key]
			if !ok || r.ID != lf.FeatureID || cards[lf.Key] != lf.Card {
				t.Errorf("key %d (%s): row %v %q, card %v", lf.Key, lf.FeatureID, ok, r.ID, lf.Card)
			}
			if lf.Drawn != (onMap[lf.Key] == 1) || onMap[lf.Key] > 1 {
				t.Errorf("key %d: drawn %v, on %d maps", lf.Key, lf.Drawn, onMap[lf.Key])
			}
			if lf.Drawn && lf.DistanceM > f.MapRadiusM {
				t.Errorf("key %d drawn at %v m beyond the map's %v m", lf.Key, lf.DistanceM, f.MapRadiusM)
			}
		}
	}
	if listed != matched || listed != 518 {
		t.Errorf("%d listed, %d matched, want 518", listed, matched)
	}
	if len(rows) != listed {
		t.Errorf("%d rows for %d records", len(rows), listed)
	}
	// The site profile: the on-site features of every layer, first.
	if got := len(out.Doc.SiteProfile); got != 4 {
		t.Errorf("site profile has %d rows, want 4", got)
	}
	for _, text := range Text(out.Doc) {
		if strings.Contains(text.Text, "not listed") {
			t.Errorf("section %s says records are not listed", text.Heading)
		}
	}
}

// TestCoverAndGaps: the cover's lot/plan, address, coordinates and local
// time; a section whose state registers are all of other jurisdictions
// says so.
func TestCoverAndGaps(t *testing.T) {
	out := Build(sampleInput())
	s := out.Doc.Site
	if len(s.LotPlans) != 1 || s.LotPlans[0] != "1/DP608976" || len(s.Addresses) != 1 || s.MGAZone != 56 {
		t.Errorf("site %+v", s)
	}
	if s.Built != "24 November 2026 09:00 ACST (UTC+09:30)" {
		t.Errorf("built %q", s.Built)
	}
	if math.Abs(s.Lat+33.815) > 1e-6 || math.Abs(s.Lon-151.0036) > 1e-6 {
		t.Errorf("centroid %v %v", s.Lat, s.Lon)
	}
	var warned bool
	for _, sec := range out.Doc.Sections {
		if sec.Key == "contamination" && strings.Contains(sec.Warning, "no NT register") {
			warned = true
		}
		if sec.Key == "water" && sec.Warning != "" {
			t.Errorf("water warns %q", sec.Warning)
		}
	}
	if !warned {
		t.Error("the contamination section does not say the service holds no NT register")
	}
	if !strings.Contains(strings.Join(out.Doc.Limitations, " "), "Registers not held for NT") {
		t.Error("the limitations do not name the NT gap")
	}
}

func TestLabels(t *testing.T) {
	f := NewFields(json.RawMessage(`{"probability_class":{"title":"Probability"},"depth_m":{"description":"Depth drilled"},"bore_id":{"type":"string"}}`),
		json.RawMessage(`{"depth_m":"m","swl_m":"m"}`))
	for name, want := range map[string]string{"probability_class": "Probability", "depth_m": "Depth drilled (m)", "bore_id": "Bore ID",
		"swl_m":             "Swl (m)", // its name says its unit: once, not "Swl (m) (m)"
		"record_updated_at": "Record updated at", "lga": "LGA"} {
		if got := f.Label(name); got != want {
			t.Errorf("Label(%s) = %q, want %q", name, got, want)
		}
	}
	for _, text := range Text(Build(sampleInput()).Doc) {
		if strings.Contains(text.Text, "probability_class") || strings.Contains(text.Text, "bore_id") {
			t.Errorf("section %s prints a raw field name:\n%s", text.Heading, text.Text)
		}
	}
}

// keysOnMaps counts each key's marks on the sections' maps and detail maps.
func keysOnMaps(secs []report.ReportSection) map[int]int {
	onMap := map[int]int{}
	for _, s := range secs {
		for _, ml := range append(slices.Clone(s.Map.Layers), s.Detail.Layers...) {
			for _, k := range ml.Keys {
				if k > 0 {
					onMap[k]++
				}
			}
		}
	}
	return onMap
}

// TestDetailMap: when six or more keyed records crowd the site on a 2 km
// map, a detail map draws them at 250 m (or 500 m), and their keys move
// there: every drawn key is still on exactly one map. Spread records get
// no detail map.
func TestDetailMap(t *testing.T) {
	in := sampleInput()
	in.Layers = []Layer{layer("f", "flood", 2000, []string{"AUS"}, points("F", 0, 20, 40, 80, 120, 160, 200, 240, 900, 1800))}
	out := Build(in)
	s := out.Doc.Sections[0]
	if s.Detail.Site == nil || s.DetailRadiusM != 250 {
		t.Fatalf("detail map %v to %v m, want one to 250 m", s.Detail.Site != nil, s.DetailRadiusM)
	}
	if !slices.Equal(s.Detail.Rings, []float64{100, 250}) {
		t.Errorf("detail rings %v, want [100 250]", s.Detail.Rings)
	}
	var main, detail []int
	for _, ml := range s.Map.Layers {
		for _, k := range ml.Keys {
			if k > 0 {
				main = append(main, k)
			}
		}
	}
	for _, ml := range s.Detail.Layers {
		for _, k := range ml.Keys {
			if k > 0 {
				detail = append(detail, k)
			}
		}
	}
	if !slices.Equal(detail, []int{1, 2, 3, 4, 5, 6, 7, 8}) || !slices.Equal(main, []int{9, 10}) {
		t.Errorf("keys on the detail map %v and on the section map %v, want 1-8 and 9-10", detail, main)
	}
	for k, n := range keysOnMaps(out.Doc.Sections) {
		if n != 1 {
			t.Errorf("key %d is on %d maps", k, n)
		}
	}

	in.Layers = []Layer{layer("f", "flood", 2000, []string{"AUS"}, points("F", 0, 200, 400, 600, 800, 1000, 1200, 1400, 1600, 1800))}
	if s := Build(in).Doc.Sections[0]; s.Detail.Site != nil {
		t.Errorf("records spread over the map got a detail map to %v m", s.DetailRadiusM)
	}
	// A map of 500 m is its own detail.
	in.Layers = []Layer{layer("f", "flood", 500, []string{"AUS"}, points("F", 0, 20, 40, 80, 120, 160, 200, 240))}
	if s := Build(in).Doc.Sections[0]; s.Detail.Site != nil {
		t.Errorf("a 500 m map got a detail map to %v m", s.DetailRadiusM)
	}
}

// TestGapsFromTheWholeCatalogue: an NT order holds only national layers
// (as the order's scope gives it), yet the report names every theme the
// service holds state registers of for other states but none for the NT,
// from the whole catalogue: on the overview (a line of its own for a theme
// with no section), in the section and in the limitations. National
// layers do not fill a gap; one state's regional layer makes none.
func TestGapsFromTheWholeCatalogue(t *testing.T) {
	in := sampleInput()
	in.Layers = []Layer{
		layer("pfas", "contamination", 2000, []string{"AUS"}, points("P", 300)),
		layer("gauges", "flood", 2000, []string{"AUS"}, points("G", 100)),
	}
	in.Held = []Held{
		{SectionKey: "contamination", SectionName: "Contamination", Jurisdictions: []string{"AUS"}},
		{SectionKey: "contamination", SectionName: "Contamination", Jurisdictions: []string{"NSW"}},
		{SectionKey: "contamination", SectionName: "Contamination", Jurisdictions: []string{"QLD"}},
		{SectionKey: "flood", SectionName: "Flooding", Jurisdictions: []string{"AUS"}},
		{SectionKey: "flood", SectionName: "Flooding", Jurisdictions: []string{"NSW"}},
		{SectionKey: "flood", SectionName: "Flooding", Jurisdictions: []string{"QLD"}},
		{SectionKey: "bushfire", SectionName: "Bushfire", Jurisdictions: []string{"NSW"}},
		{SectionKey: "bushfire", SectionName: "Bushfire", Jurisdictions: []string{"VIC"}},
		{SectionKey: "biodiversity", SectionName: "Biodiversity", Jurisdictions: []string{"QLD"}},
		{SectionKey: "heritage", SectionName: "Heritage", Jurisdictions: []string{"NT"}},
		{SectionKey: "heritage", SectionName: "Heritage", Jurisdictions: []string{"VIC"}},
	}
	out := Build(in)
	var gaps []string
	for _, g := range Gaps(in) {
		gaps = append(gaps, g.Key)
	}
	if want := []string{"bushfire", "contamination", "flood"}; !slices.Equal(gaps, want) {
		t.Errorf("gaps %v, want %v", gaps, want)
	}
	lines := map[string]report.OverviewLine{}
	for _, o := range out.Doc.Overview {
		lines[o.Key] = o
	}
	for _, k := range []string{"bushfire", "contamination", "flood"} {
		if !strings.Contains(lines[k].Detail, "holds no NT register") {
			t.Errorf("overview %s: %+v", k, lines[k])
		}
	}
	if lines["bushfire"].Finding != "Not held" {
		t.Errorf("the bushfire theme, without a section, reads %+v", lines["bushfire"])
	}
	if d := lines["flood"].Detail; !strings.Contains(d, "a record of Layer gauges, 100 m E") {
		t.Errorf("the flood line does not say what was found: %q", d)
	}
	for _, s := range out.Doc.Sections {
		if !strings.Contains(s.Warning, "No NT register") {
			t.Errorf("section %s does not warn: %q", s.Key, s.Warning)
		}
	}
	lim := strings.Join(out.Doc.Limitations, " ")
	for _, name := range []string{"Bushfire", "Contamination", "Flooding"} {
		if !strings.Contains(lim, name+" (the service's") {
			t.Errorf("the limitations do not name %s: %s", name, lim)
		}
	}
}

// BenchmarkBuild50Pages: a report of 2,000 matched records (a 500-record
// layer in each of four sections, fields in every record) decided and
// rendered to a PDF of 50 pages or more. Goal: under 10 s an op.
func BenchmarkBuild50Pages(b *testing.B) {
	in := sampleInput()
	in.Layers = nil
	for i, sec := range []string{"contamination", "flood", "soils", "water"} {
		dists := make([]float64, 500)
		for j := range dists {
			dists[j] = float64(j) * 3.9
		}
		in.Layers = append(in.Layers, layer(fmt.Sprintf("l%d", i), sec, 2000, []string{"AUS"}, points(fmt.Sprintf("L%d", i), dists...)))
	}
	b.ReportAllocs()
	pages := 0
	for b.Loop() {
		pdf, err := report.RenderPDF(Build(in).Doc)
		if err != nil {
			b.Fatal(err)
		}
		pages = strings.Count(string(pdf), "/Type /Page\n")
	}
	if pages < 50 {
		b.Fatalf("%d pages, want 50 or more", pages)
	}
	b.ReportMetric(float64(pages), "pages")
}

// TestClassedPolygons: a polygon layer with an enumerated class field is
// filled by class on its map, and its legend names every class.
func TestClassedPolygons(t *testing.T) {
	in := sampleInput()
	classes := []string{"High", "Low", "Extremely low"}
	var fs []Feature
	for i, d := range []float64{0, 150, 400, 900} {
		c := origin
		if d > 0 {
			c = east(origin, d)
		}
		sq := orb.Polygon{{{c[0] - 5e-4, c[1] - 5e-4}, {c[0] + 5e-4, c[1] - 5e-4}, {c[0] + 5e-4, c[1] + 5e-4}, {c[0] - 5e-4, c[1] + 5e-4}, {c[0] - 5e-4, c[1] - 5e-4}}}
		class := classes[i%3]
		fs = append(fs, Feature{ID: fmt.Sprintf("S-%d", i), DistanceM: d, Geometry: sq,
			Properties: func() map[string]any { return map[string]any{"probability_class": class} }})
	}
	l := layer("s", "soils", 2000, []string{"AUS"}, fs)
	l.FieldSchema = json.RawMessage(`{"probability_class":{"type":"string","title":"Probability","enum":["High","Low","Extremely low"]}}`)
	in.Layers = []Layer{l}
	s := Build(in).Doc.Sections[0]
	ml := s.Map.Layers[0]
	if !slices.Equal(ml.ClassNames, classes) || !slices.Equal(ml.Classes, []int{0, 1, 2, 0}) {
		t.Errorf("map classes %v %v", ml.ClassNames, ml.Classes)
	}
	if len(s.Legend) != 1 || s.Legend[0].ClassField != "Probability" || !slices.Equal(s.Legend[0].Classes, classes) {
		t.Errorf("legend %+v", s.Legend)
	}
}
