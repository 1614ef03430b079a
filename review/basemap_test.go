package review

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"

	"siteenv/basemap"
	"siteenv/report"
)

// The report's basemap colours for water and major roads.
var (
	waterColour = color.NRGBA{R: 0xb9, G: 0xd6, B: 0xe6, A: 0xff}
	majorColour = color.NRGBA{R: 0xfb, G: 0xe7, B: 0xb5, A: 0xff}
)

// reviewBasemap writes a PMTiles archive, at zooms 12-17, of a lake under
// the whole parcel grid with a major road along the gap between its first
// and second rows of parcels, and opens it.
func reviewBasemap(t *testing.T) *basemap.Archive {
	t.Helper()
	b := orb.Bound{Min: orb.Point{150.99, -33.81}, Max: orb.Point{151.03, -33.78}}
	lake := geojson.NewFeature(b.ToPolygon())
	lake.Properties["kind"] = "water"
	road := geojson.NewFeature(orb.LineString{{150.99, -33.7975}, {151.03, -33.7975}})
	road.Properties["kind"] = "major_road"
	place := geojson.NewFeature(orb.Point{151.008, -33.7935})
	place.Properties["name"], place.Properties["kind"] = "Testville", "locality"
	fc := func(fs ...*geojson.Feature) *geojson.FeatureCollection {
		c := geojson.NewFeatureCollection()
		c.Features = fs
		return c
	}
	tiles := map[maptile.Tile]mvt.Layers{}
	for z := maptile.Zoom(12); z <= 17; z++ {
		lo, hi := maptile.At(orb.Point{b.Min[0], b.Max[1]}, z), maptile.At(orb.Point{b.Max[0], b.Min[1]}, z)
		for x := lo.X; x <= hi.X; x++ {
			for y := lo.Y; y <= hi.Y; y++ {
				tiles[maptile.New(x, y, z)] = mvt.NewLayers(map[string]*geojson.FeatureCollection{
					"water": fc(lake), "roads": fc(road), "places": fc(place)})
			}
		}
	}
	var buf bytes.Buffer
	if err := basemap.Write(&buf, tiles, "review-test", "© Review Test Basemap"); err != nil {
		t.Fatal(err)
	}
	a, err := basemap.Open(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// countNear counts the pixels of img within a few levels of c.
func countNear(img image.Image, c color.NRGBA) int {
	n := 0
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			d := func(a, b uint8) int { return max(int(a), int(b)) - min(int(a), int(b)) }
			if d(p.R, c.R) < 6 && d(p.G, c.G) < 6 && d(p.B, c.B) < 6 {
				n++
			}
		}
	}
	return n
}

// TestReviewPageBasemap opens a staged release's page in headless Chromium
// with and without a PMTiles basemap: with one, the map is drawn over its
// lake and road (the browser loads /basemap.png, and the screenshot shows
// them) and the page names the basemap's attribution; without one, the
// page says no basemap is configured, draws none, and /basemap.png is not
// served.
func TestReviewPageBasemap(t *testing.T) {
	bctx := browser(t)
	led, st, _, relB := stagedFixture(t)
	bm := reviewBasemap(t)
	page := "/review/nsw.review-parcels/" + relB
	for _, with := range []bool{false, true} {
		opt := Options{Ledger: led, Store: st}
		if with {
			opt.Basemap = func(_ context.Context, b orb.Bound, w, h int) ([]byte, error) { return report.BasemapPNG(bm, b, w, h) }
			opt.BasemapAttribution = bm.Attribution()
		}
		srv, err := New(opt)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		defer hs.Close()
		err = chromedp.Do(bctx,
			chromedp.Navigate(hs.URL+page),
			chromedp.WaitVisible(chromedp.CSS(`main[data-loaded="true"]`)),
		)
		if err != nil {
			t.Fatal(err)
		}
		note, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#basemap-note")))
		if err != nil {
			t.Fatal(err)
		}
		if !with {
			if !strings.Contains(note, "No basemap configured") {
				t.Errorf("without a basemap the page says %q", note)
			}
			n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#basemap").length`))
			if err != nil || n != 0 {
				t.Errorf("without a basemap the map has %d basemap images (%v)", n, err)
			}
			resp, err := http.Get(hs.URL + "/basemap.png?bbox=151,-33.81,151.02,-33.79&w=100&h=100")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("without a basemap /basemap.png answers %d", resp.StatusCode)
			}
		} else {
			if !strings.Contains(note, "© Review Test Basemap") {
				t.Errorf("with a basemap the page says %q", note)
			}
			// The browser has loaded the image the map asked for.
			if err := chromedp.Do(bctx, chromedp.WaitReady(chromedp.CSS(`#basemap[data-loaded]`))); err != nil {
				t.Fatal(err)
			}
			loaded, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS("#basemap"), "data-loaded"))
			if err != nil {
				t.Fatal(err)
			}
			href := loaded.Value
			resp, err := http.Get(hs.URL + href)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			img, err := png.Decode(bytes.NewReader(body))
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || err != nil {
				t.Fatalf("%s: %d %s %v", href, resp.StatusCode, resp.Header.Get("Content-Type"), err)
			}
			if img.Bounds().Dx() != 900 || img.Bounds().Dy() != 560 {
				t.Errorf("basemap image %v, want the map's 900x560", img.Bounds())
			}
		}
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if dir := os.Getenv("SITEENV_REVIEW_SCREENSHOT_DIR"); dir != "" {
			name := "/review-no-basemap.png"
			if with {
				name = "/review-basemap.png"
			}
			_ = os.WriteFile(dir+name, shot, 0o644)
		}
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatal(err)
		}
		// Water shows between the parcels, and the road along a gap.
		water, road := countNear(img, waterColour), countNear(img, majorColour)
		t.Logf("basemap %v: %d water and %d road pixels", with, water, road)
		if with && (water < 5000 || road < 1000) {
			t.Errorf("with a basemap the screenshot has %d water and %d road pixels", water, road)
		}
		if !with && (water > 50 || road > 50) { // a few edge pixels blend to either
			t.Errorf("without a basemap the screenshot has %d water and %d road pixels", water, road)
		}
	}
}
