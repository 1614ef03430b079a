package report

import (
	"image/color"
	"math"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
)

// Basemap is a vector-tile basemap in the Protomaps layer schema
// (basemap.Archive): the streets, water, land use and place names drawn
// under a map's records. Safe for concurrent use.
type Basemap interface {
	// Layers returns the decoded tiles at zoom z covering b (lon/lat).
	Layers(b orb.Bound, z int) ([]mvt.Layers, error)
	// Attribution is what the archive asks to be printed with the map.
	Attribution() string
	// Version identifies the archive's content (a map image's ETag
	// hashes it).
	Version() string
}

var (
	bmPark     = color.NRGBA{R: 0xdd, G: 0xea, B: 0xcf, A: 0xff}
	bmWater    = color.NRGBA{R: 0xb9, G: 0xd6, B: 0xe6, A: 0xff}
	bmRoadEdge = color.NRGBA{R: 0xa9, G: 0xa2, B: 0x94, A: 0xff}
	bmRoad     = color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	bmMajor    = color.NRGBA{R: 0xfb, G: 0xe7, B: 0xb5, A: 0xff}
	bmLabel    = color.NRGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
)

// vectorBasemap draws m.Basemap's land use, water, roads and place names
// on the ground, and says whether it drew (false: none configured, none of
// its tiles covers the map, or they could not be read; the map then says
// which, so a blank ground is never read as open land nor an unreadable
// archive as a missing one). The archive's reader logs its errors
// (cmd/siteenv wraps it).
func (d *drawer) vectorBasemap() bool {
	if d.m.Basemap == nil {
		return false
	}
	z := zoomFor(1/d.f.scale, d.f.local.Center()[1])
	tiles, err := d.m.Basemap.Layers(d.f.ll, z)
	switch {
	case err != nil:
		d.basemapMissing = "Basemap could not be read"
		return false
	case len(tiles) == 0:
		d.basemapMissing = "The basemap has no tiles here"
		return false
	}
	byLayer := func(name string, fn func(f *mvt.Layer)) {
		for _, ls := range tiles {
			for _, l := range ls {
				if l.Name == name {
					fn(l)
				}
			}
		}
	}
	park := d.c.newLayerFill(d.panel)
	byLayer("landuse", func(l *mvt.Layer) {
		for _, f := range l.Features {
			d.addPolygons(park.p, f.Geometry, nil)
		}
	})
	park.paint(bmPark)
	water := d.c.newLayerFill(d.panel)
	byLayer("water", func(l *mvt.Layer) {
		for _, f := range l.Features {
			switch f.Geometry.(type) {
			case orb.Polygon, orb.MultiPolygon:
				d.addPolygons(water.p, f.Geometry, nil)
			case orb.LineString, orb.MultiLineString:
				d.addLines(water.p, f.Geometry, 2.2)
			}
		}
	})
	water.paint(bmWater)
	// Roads: a casing, then the road, wider for the major ones.
	width := func(f *geojson.Feature) float64 {
		switch f.Properties["kind"] {
		case "highway":
			return 7
		case "major_road":
			return 5.5
		case "path":
			return 1.5
		}
		return 4
	}
	edge, road, major := d.c.newLayerFill(d.panel), d.c.newLayerFill(d.panel), d.c.newLayerFill(d.panel)
	byLayer("roads", func(l *mvt.Layer) {
		for _, f := range l.Features {
			w := width(f)
			d.addLines(edge.p, f.Geometry, w+2)
			if k := f.Properties["kind"]; k == "highway" || k == "major_road" {
				d.addLines(major.p, f.Geometry, w)
			} else {
				d.addLines(road.p, f.Geometry, w)
			}
		}
	})
	edge.paint(bmRoadEdge)
	road.paint(bmRoad)
	major.paint(bmMajor)
	// Place names, at their points, once each.
	seen := map[string]bool{}
	byLayer("places", func(l *mvt.Layer) {
		for _, f := range l.Features {
			name, _ := f.Properties["name"].(string)
			p, ok := f.Geometry.(orb.Point)
			if name == "" || !ok || seen[name] || !d.f.inside(p) {
				continue
			}
			seen[name] = true
			x, y := d.f.px(p)
			w := textWidth(d.fc.small, name)
			d.c.haloText(d.fc.small, name, int(x)-w/2, int(y), bmLabel)
		}
	})
	d.basemapDrawn = true
	return true
}

// zoomFor is the basemap zoom whose tiles carry a map's detail at
// metresPerPixel (512-pixel tiles, as Protomaps styles read them).
func zoomFor(metresPerPixel, lat float64) int {
	z := math.Log2(40075016.686 * math.Cos(lat*math.Pi/180) / 512 / metresPerPixel)
	return max(0, min(15, int(math.Round(z))))
}
