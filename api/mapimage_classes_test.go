package api_test

import (
	"encoding/json"
	"image"
	"image/color"
	"os"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/ingest"
	"siteenv/report"
	"siteenv/tiles"
)

// classedPolygons publishes a free polygon layer whose hazard_class (an
// enumerated class field) classes each square (id -> centre, class).
func (qh *queryHarness) classedPolygons(layerID, section string, radiusMax, sideM float64, squares map[string]struct {
	centre orb.Point
	class  string
}) {
	qh.t.Helper()
	if err := qh.led.SetSection(qh.ctx, section, "Section "+section, 0); err != nil {
		qh.t.Fatal(err)
	}
	def := &ingest.LayerDef{
		LayerID: layerID, SectionKey: section, Name: "Layer " + layerID, SchemaVersion: "1",
		FieldSchema: map[string]json.RawMessage{"hazard_class": json.RawMessage(`{"type":"string","enum":["H1","H2","H3"]}`)},
		Units:       map[string]*string{"hazard_class": nil}, RadiusMaxM: radiusMax,
		Sources:       []tiles.Source{{SourceVariantID: "v1", Provider: "Test Survey", Licence: "CC-BY-4.0", Attribution: "© Test"}},
		Jurisdictions: []string{"NSW"}, GeometryTypes: []string{"Polygon"},
	}
	raw, _ := json.Marshal(def)
	def, err := ingest.ParseLayerDef(raw)
	if err != nil {
		qh.t.Fatal(err)
	}
	dx, dy := sideM/2/(111_320*0.8309), sideM/2/110_950
	_, err = ingest.RunRows(qh.ctx, ingest.Options{Layer: def, Store: qh.store, Publisher: ingest.LedgerPublisher{Ledger: qh.led}, TempDir: qh.t.TempDir()},
		func(yield func(ingest.Row) error) error {
			n := int64(0)
			for id, s := range squares {
				n++
				c := s.centre
				sq := orb.Polygon{{{c[0] - dx, c[1] - dy}, {c[0] + dx, c[1] - dy}, {c[0] + dx, c[1] + dy}, {c[0] - dx, c[1] + dy}, {c[0] - dx, c[1] - dy}}}
				if err := yield(ingest.Row{File: "test", Row: n, Feature: tiles.Feature{ID: id, Geometry: sq, Properties: map[string]any{"hazard_class": s.class}}}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		qh.t.Fatal(err)
	}
}

// TestMapImageClassedPolygons: a map image fills a classed polygon layer's
// areas by class, in the colours the report's maps use, and its legend
// shows each class's fill.
func TestMapImageClassedPolygons(t *testing.T) {
	t.Parallel()
	qh := setupMaps(t)
	qh.classedPolygons("nsw.flood", "flood", 1000, 500, map[string]struct {
		centre orb.Point
		class  string
	}{"west": {east(-400), "H1"}, "east": {east(400), "H3"}})
	acct := qh.account(100)
	k := qh.key(acct, nil, "sites:read", "sites:write", "queries:run")
	r := qh.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}})
	if r.status != 201 && r.status != 200 {
		t.Fatalf("create site: %d %s", r.status, r.body)
	}
	site := r.json(t)["site"].(map[string]any)["site_id"].(string)
	mr := qh.do("GET", mapPath(site, "flood"), k.Secret, nil)
	img := decodeMap(t, mr)
	if out := os.Getenv("SITEENV_MAP_IMAGE"); out != "" {
		// To look at it: write the JPEG there and open it.
		_ = os.WriteFile(out, mr.body, 0o644)
	}

	// The map panel (24,76)-(904,836) is centred on the site and fits
	// 1000 m x 1.08 in 380 px: 400 m is 141 px; 35 px down is 100 m south.
	const cx, cy, px400 = 464, 456, 141
	land := color.NRGBA{R: 0xf6, G: 0xf4, B: 0xee, A: 0xff}
	h1, h3 := over(report.ClassColour(0), land), over(report.ClassColour(2), land)
	for _, tc := range []struct {
		name string
		x    int
		want color.NRGBA
	}{{"west square (H1)", cx - px400, h1}, {"east square (H3)", cx + px400, h3}} {
		if got := mean(img, image.Rect(tc.x-4, cy+31, tc.x+5, cy+40)); !near(got, tc.want, 18) {
			t.Errorf("%s filled %v, want the class's fill %v", tc.name, got, tc.want)
		}
	}
	// The legend panel (924,76)-(1256,836) shows both classes' fills.
	legend := image.Rect(924, 76, 1256, 836)
	for _, want := range []color.NRGBA{h1, h3} {
		if !holds(img, legend, want) {
			t.Errorf("the legend has no swatch of %v", want)
		}
	}
}

// over is c at the maps' class fill opacity (0x73) over bg.
func over(c, bg color.NRGBA) color.NRGBA {
	a := float64(0x73) / 255
	mix := func(f, b uint8) uint8 { return uint8(float64(f)*a + float64(b)*(1-a) + 0.5) }
	return color.NRGBA{R: mix(c.R, bg.R), G: mix(c.G, bg.G), B: mix(c.B, bg.B), A: 0xff}
}

func mean(img image.Image, r image.Rectangle) color.NRGBA {
	var sr, sg, sb, n uint32
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			sr, sg, sb, n = sr+uint32(c.R), sg+uint32(c.G), sb+uint32(c.B), n+1
		}
	}
	return color.NRGBA{R: uint8(sr / n), G: uint8(sg / n), B: uint8(sb / n), A: 0xff}
}

func near(a, b color.NRGBA, tol int) bool {
	d := func(x, y uint8) bool { return max(int(x)-int(y), int(y)-int(x)) <= tol }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B)
}

// holds reports whether r has a 6 x 4 block every pixel of which is
// near c (a swatch, not a mix of text and background).
func holds(img image.Image, r image.Rectangle, c color.NRGBA) bool {
	for y := r.Min.Y; y+4 <= r.Max.Y; y++ {
	block:
		for x := r.Min.X; x+6 <= r.Max.X; x++ {
			for by := y; by < y+4; by++ {
				for bx := x; bx < x+6; bx++ {
					if !near(color.NRGBAModel.Convert(img.At(bx, by)).(color.NRGBA), c, 16) {
						continue block
					}
				}
			}
			return true
		}
	}
	return false
}
