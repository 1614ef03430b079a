package synth

import (
	"io"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"

	"siteenv/basemap"
	"siteenv/tiles"
)

// Basemap zooms: the demo's maps draw at about 14 (a 2 km section map) to
// 15 (a locality plan); 12 and 13 serve the wider search-area maps.
const (
	basemapMinZoom = 12
	basemapMaxZoom = 15
)

// BasemapAttribution is the demo basemap's attribution.
const BasemapAttribution = "siteenv synthetic demo basemap"

// WriteBasemap writes a PMTiles basemap of the demo's towns in the
// Protomaps layer schema: "roads" (every street its parcels front, main
// roads as major_road), "water" (the surface hydrology layer's watercourses
// near them) and "places" (locality names), so that `make run` draws a
// basemap under its maps. Deterministic for a seed and scale.
func (g *Generator) WriteBasemap(w io.Writer) error {
	type feats struct{ roads, water, places []*geojson.Feature }
	byTile := map[maptile.Tile]*feats{}
	add := func(geom orb.Geometry, pick func(*feats) *[]*geojson.Feature, f *geojson.Feature) {
		b := geom.Bound()
		lo := maptile.At(orb.Point{b.Min[0], b.Max[1]}, basemapMaxZoom)
		hi := maptile.At(orb.Point{b.Max[0], b.Min[1]}, basemapMaxZoom)
		if (hi.X-lo.X+1)*(hi.Y-lo.Y+1) > 16 {
			return // a feature this long belongs to no town's streets
		}
		for x := lo.X; x <= hi.X; x++ {
			for y := lo.Y; y <= hi.Y; y++ {
				for z := maptile.Zoom(basemapMinZoom); z <= basemapMaxZoom; z++ {
					t := maptile.New(x, y, basemapMaxZoom)
					for t.Z > z {
						t = t.Parent()
					}
					fs := byTile[t]
					if fs == nil {
						fs = &feats{}
						byTile[t] = fs
					}
					p := pick(fs)
					if n := len(*p); n == 0 || (*p)[n-1] != f {
						*p = append(*p, f)
					}
				}
			}
		}
	}
	towns := map[maptile.Tile]bool{}
	err := g.lots(func(lt *lot) error {
		if lt.Road == nil {
			return nil
		}
		f := geojson.NewFeature(lt.Road)
		f.Properties["kind"], f.Properties["name"] = "minor_road", lt.RoadName
		if lt.Main {
			f.Properties["kind"] = "major_road"
		}
		add(lt.Road, func(fs *feats) *[]*geojson.Feature { return &fs.roads }, f)
		towns[maptile.At(lt.Road[0], basemapMaxZoom)] = true
		return nil
	})
	if err != nil {
		return err
	}
	for i := range g.locs {
		if g.addrCount[i] == 0 {
			continue
		}
		l := &g.locs[i]
		p := orb.Point{l.Lon, l.Lat}
		f := geojson.NewFeature(p)
		f.Properties["kind"], f.Properties["name"] = "locality", l.Title
		add(p, func(fs *feats) *[]*geojson.Feature { return &fs.places }, f)
	}
	// Watercourses through the towns' tiles.
	if _, ok := g.byID["au-surface-hydrology-lines"]; ok {
		err := g.Features("au-surface-hydrology-lines", func(tf tiles.Feature) error {
			if !towns[maptile.At(tf.Geometry.Bound().Center(), basemapMaxZoom)] {
				return nil
			}
			f := geojson.NewFeature(tf.Geometry)
			f.Properties["kind"] = "stream"
			if name, ok := tf.Properties["name"].(string); ok {
				f.Properties["name"] = name
			}
			add(tf.Geometry, func(fs *feats) *[]*geojson.Feature { return &fs.water }, f)
			return nil
		})
		if err != nil {
			return err
		}
	}
	out := make(map[maptile.Tile]mvt.Layers, len(byTile))
	for t, fs := range byTile {
		var ls mvt.Layers
		for _, l := range []struct {
			name string
			fs   []*geojson.Feature
		}{{"water", fs.water}, {"roads", fs.roads}, {"places", fs.places}} {
			if len(l.fs) > 0 {
				c := geojson.NewFeatureCollection()
				c.Features = l.fs
				ls = append(ls, mvt.NewLayer(l.name, c))
			}
		}
		out[t] = ls
	}
	return basemap.Write(w, out, "siteenv demo", BasemapAttribution)
}
