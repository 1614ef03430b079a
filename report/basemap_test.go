package report

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/project"

	"siteenv/basemap"
)

// testBasemap writes a PMTiles archive of one major road running east-west
// through the site, a lake 600 m north and a place name, at zooms 12-15,
// and opens it.
func testBasemap(t *testing.T) *basemap.Archive {
	t.Helper()
	road := geojson.NewFeature(orb.LineString{offset(parramatta, -3000, 0), offset(parramatta, 3000, 0)})
	road.Properties["kind"] = "major_road"
	lake := geojson.NewFeature(orb.Polygon{{offset(parramatta, -300, 450), offset(parramatta, 300, 450), offset(parramatta, 300, 750),
		offset(parramatta, -300, 750), offset(parramatta, -300, 450)}})
	lake.Properties["kind"] = "water"
	place := geojson.NewFeature(offset(parramatta, 0, -400))
	place.Properties["name"], place.Properties["kind"] = "Testville", "locality"
	fc := func(fs ...*geojson.Feature) *geojson.FeatureCollection {
		c := geojson.NewFeatureCollection()
		c.Features = fs
		return c
	}
	tiles := map[maptile.Tile]mvt.Layers{}
	b := orb.Bound{Min: offset(parramatta, -4000, -4000), Max: offset(parramatta, 4000, 4000)}
	for z := maptile.Zoom(12); z <= 15; z++ {
		lo, hi := maptile.At(orb.Point{b.Min[0], b.Max[1]}, z), maptile.At(orb.Point{b.Max[0], b.Min[1]}, z)
		for x := lo.X; x <= hi.X; x++ {
			for y := lo.Y; y <= hi.Y; y++ {
				tiles[maptile.New(x, y, z)] = mvt.NewLayers(map[string]*geojson.FeatureCollection{
					"roads": fc(road), "water": fc(lake), "places": fc(place)})
			}
		}
	}
	var buf bytes.Buffer
	if err := basemap.Write(&buf, tiles, "test", "© Test Basemap contributors"); err != nil {
		t.Fatal(err)
	}
	a, err := basemap.Open(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if a.Attribution() != "© Test Basemap contributors" || a.MaxZoom() != 15 {
		t.Fatalf("attribution %q, max zoom %d", a.Attribution(), a.MaxZoom())
	}
	return a
}

// TestBasemapDrawn: a map image and a report map drawn with a basemap from
// a PMTiles archive show its road and its lake where they are; without
// one, neither is there.
func TestBasemapDrawn(t *testing.T) {
	t.Parallel()
	bm := testBasemap(t)
	m := Map{Title: "Basemap test", Section: "Water", Date: renderDate, Site: parramatta,
		Layers: []Layer{{ID: "bores", Name: "Bores", RadiusM: 1000, Coverage: "complete"}}}
	near := func(img *image.RGBA, f *frame, p orb.Point, want color.NRGBA) bool {
		x, y := f.px(p)
		for dx := -1; dx <= 1; dx++ {
			for dy := -1; dy <= 1; dy++ {
				c := img.RGBAAt(int(x)+dx, int(y)+dy)
				if absDiff(uint32(c.R), uint32(want.R)) < 6 && absDiff(uint32(c.G), uint32(want.G)) < 6 && absDiff(uint32(c.B), uint32(want.B)) < 6 {
					return true
				}
			}
		}
		return false
	}
	roadAt, lakeAt := offset(parramatta, 600, 0), offset(parramatta, 100, 600)
	for _, print := range []bool{false, true} {
		mm := m
		mm.Print = print
		radii := ringRadii(mm.Layers)
		var d *drawer
		if print {
			d = layoutPrint(mm, radii)
		} else {
			img, err := DrawMap(mm)
			if err != nil {
				t.Fatal(err)
			}
			d = &drawer{c: &canvas{img: img}, f: newFrame(mm.Site, radii[0], mapPanel)}
		}
		if near(d.c.img, d.f, roadAt, bmMajor) || near(d.c.img, d.f, lakeAt, bmWater) {
			t.Errorf("print %v: a road or lake drawn without a basemap", print)
		}
		mm.Basemap = bm
		if print {
			d = layoutPrint(mm, radii)
			if !d.basemapDrawn {
				t.Error("the report map says no basemap was drawn")
			}
		} else {
			img, err := DrawMap(mm)
			if err != nil {
				t.Fatal(err)
			}
			d = &drawer{c: &canvas{img: img}, f: newFrame(mm.Site, radii[0], mapPanel)}
		}
		if !near(d.c.img, d.f, roadAt, bmMajor) {
			t.Errorf("print %v: no road drawn 600 m east of the site", print)
		}
		if !near(d.c.img, d.f, lakeAt, bmWater) {
			t.Errorf("print %v: no lake drawn 600 m north of the site", print)
		}
	}
}

// TestBasemapPNG: the browser map's basemap image puts the archive's road
// and lake where Web Mercator (orb/project, not ours) puts them in the
// requested box, labels the archive, and is plain ground without tiles.
func TestBasemapPNG(t *testing.T) {
	t.Parallel()
	bm := testBasemap(t)
	const w, h = 600, 400
	b := orb.Bound{Min: offset(parramatta, -1500, -1000), Max: offset(parramatta, 1500, 1000)}
	img := func(b orb.Bound) image.Image {
		t.Helper()
		out, err := BasemapPNG(bm, b, w, h)
		if err != nil {
			t.Fatal(err)
		}
		m, err := png.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if m.Bounds().Dx() != w || m.Bounds().Dy() != h {
			t.Fatalf("image %v, want %dx%d", m.Bounds(), w, h)
		}
		return m
	}
	m := img(b)
	lo, hi := project.WGS84.ToMercator(b.Min), project.WGS84.ToMercator(b.Max)
	at := func(p orb.Point) color.NRGBA {
		q := project.WGS84.ToMercator(p)
		x, y := (q[0]-lo[0])/(hi[0]-lo[0])*w, (hi[1]-q[1])/(hi[1]-lo[1])*h
		return color.NRGBAModel.Convert(m.At(int(x), int(y))).(color.NRGBA)
	}
	if c := at(offset(parramatta, 900, 0)); c != bmMajor {
		t.Errorf("on the road: %v, want %v", c, bmMajor)
	}
	if c := at(offset(parramatta, 100, 600)); c != bmWater {
		t.Errorf("in the lake: %v, want %v", c, bmWater)
	}
	if c := at(offset(parramatta, 900, 250)); c != landColour {
		t.Errorf("between road and lake: %v, want the ground %v", c, landColour)
	}
	// Far from the archive's tiles: plain ground, no attribution.
	far := img(orb.Bound{Min: offset(albury, -1500, -1000), Max: offset(albury, 1500, 1000)})
	for y := 0; y < h; y += 7 {
		for x := 0; x < w; x += 7 {
			if c := color.NRGBAModel.Convert(far.At(x, y)).(color.NRGBA); c != landColour {
				t.Fatalf("outside the archive (%d,%d) is %v, not plain ground", x, y, c)
			}
		}
	}
	if _, err := BasemapPNG(bm, orb.Bound{Min: parramatta, Max: parramatta}, w, h); err == nil {
		t.Error("an empty box drew an image")
	}
}

// brokenBasemap's tiles cannot be read (err) or none covers anywhere.
type brokenBasemap struct{ err error }

func (b brokenBasemap) Layers(orb.Bound, int) ([]mvt.Layers, error) { return nil, b.err }
func (brokenBasemap) Attribution() string                           { return "© test" }
func (brokenBasemap) Version() string                               { return "broken" }

// TestBasemapNoteSaysWhy: a map without its basemap says why, so a
// configured archive that could not be read, or that has no tiles for the
// site, is not reported as no basemap configured (and a blank ground is
// never read as open land).
func TestBasemapNoteSaysWhy(t *testing.T) {
	t.Parallel()
	m := Map{Title: "Basemap test", Section: "Water", Date: renderDate, Site: parramatta, Print: true,
		Layers: []Layer{{ID: "bores", Name: "Bores", RadiusM: 1000, Coverage: "complete"}}}
	for _, c := range []struct {
		bm   Basemap
		want string
	}{
		{nil, "No basemap configured: streets, water and place names are not shown"},
		{brokenBasemap{errors.New("read tile: input/output error")}, "Basemap could not be read: streets, water and place names are not shown"},
		{brokenBasemap{}, "The basemap has no tiles here: streets, water and place names are not shown"},
		{testBasemap(t), "Basemap: " + testBasemap(t).Attribution()},
	} {
		mm := m
		mm.Basemap = c.bm
		d := layoutPrint(mm, ringRadii(mm.Layers))
		if text, _, _, _, ok := d.basemapNote(); !ok || text != c.want {
			t.Errorf("basemap %T: note %q (%v), want %q", c.bm, text, ok, c.want)
		}
		if _, err := RenderMap(Map{Title: "t", Section: "s", Date: renderDate, Site: parramatta, Basemap: c.bm, Layers: mm.Layers}); err != nil {
			t.Errorf("basemap %T: screen map: %v", c.bm, err)
		}
	}
}
