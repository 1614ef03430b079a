package synth

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/geo/austates"
	"siteenv/ingest"
	"siteenv/tiles"
)

// Layers returns the layer definitions (layer.json), ordered by layer id.
// Each call returns fresh values the caller may modify.
func (g *Generator) Layers() []*ingest.LayerDef {
	out := make([]*ingest.LayerDef, len(g.layers))
	for i, l := range g.layers {
		out[i] = g.layerDef(l)
	}
	return out
}

// Layer returns the definition of one layer.
func (g *Generator) Layer(layerID string) (*ingest.LayerDef, bool) {
	l := g.byID[layerID]
	if l == nil {
		return nil, false
	}
	return g.layerDef(l), true
}

func (g *Generator) layerDef(l *layerSpec) *ingest.LayerDef {
	fs := make(map[string]json.RawMessage, len(l.Fields))
	units := map[string]*string{}
	for _, f := range l.Fields {
		fs[f.Name] = f.fragment()
		switch f.Unit {
		case "":
		case "-":
			units[f.Name] = nil
		default:
			units[f.Name] = sp(f.Unit)
		}
	}
	d := &ingest.LayerDef{
		LayerID:       l.ID,
		SectionKey:    l.Section,
		Name:          l.Name,
		Description:   sp(l.Description),
		SchemaVersion: l.SchemaVersion,
		FieldSchema:   fs,
		Units:         units,
		RadiusMaxM:    l.RadiusMaxM,
		Jurisdictions: append([]string(nil), l.Jurisdictions...),
		GeometryTypes: append([]string(nil), l.GeomTypes...),
	}
	for _, s := range sections {
		if s.Key == l.Section {
			d.SectionName = s.Name
		}
	}
	for _, s := range l.Sources {
		c := s
		for _, p := range []**string{&c.Scope, &c.SourceURL, &c.SourcePublishedAt, &c.SourceEffectiveAt, &c.RetrievedAt} {
			if *p != nil {
				*p = sp(**p)
			}
		}
		d.Sources = append(d.Sources, c)
	}
	if cov, ok := g.coverage[l.Coverage]; ok && l.Coverage != "" {
		d.Coverage = geojson.NewGeometry(orb.Polygon{append(orb.Ring(nil), cov[0]...)})
	}
	if s, err := tiles.ParseFieldSchema(fs); err == nil {
		d.Schema = s
	}
	return d
}

// Features streams the features of one layer in a fixed order. Feature ids
// are PREFIX-NNNNNNNN, unique in the layer; properties hold every field of
// the layer's field_schema (nil only for nullable fields) as string, int64,
// float64 or bool, dates as "YYYY-MM-DD" and date-times as RFC 3339 UTC
// strings. Each feature's values are new: yield may keep them. An error
// from yield stops the stream and is returned.
func (g *Generator) Features(layerID string, yield func(tiles.Feature) error) error {
	l := g.byID[layerID]
	if l == nil {
		return fmt.Errorf("synth: unknown layer %q", layerID)
	}
	r := newRand(g.seed, "layer/"+l.ID)
	pk := newPicker(len(g.locs), func(i int) float64 {
		if !l.eligible(&g.locs[i]) {
			return 0
		}
		return l.Place.weight(&g.locs[i])
	})
	if pk.empty() {
		return fmt.Errorf("synth: layer %s has no locality to place features around", l.ID)
	}
	cov := g.coverage[l.Coverage]
	if l.Coverage == "" {
		cov = g.coverage["AUS"]
	}
	n := g.counts[l.ID]
	for i := int64(1); i <= n; i++ {
		c := fctx{r: r, loc: &g.locs[pk.pick(r)], index: i}
		geom := g.geometry(l, &c, cov[0])
		props := make(map[string]any, len(l.Fields))
		l.Props(&c, props)
		if err := yield(tiles.Feature{ID: featureID(l.Prefix, i), Geometry: geom, Properties: props}); err != nil {
			return err
		}
	}
	return nil
}

func featureID(prefix string, i int64) string {
	s := strconv.FormatInt(i, 10)
	b := make([]byte, 0, len(prefix)+1+max(8, len(s)))
	b = append(b, prefix...)
	b = append(b, '-')
	for k := len(s); k < 8; k++ {
		b = append(b, '0')
	}
	return string(append(b, s...))
}

// geometry draws the feature's geometry and records its size in c.
func (g *Generator) geometry(l *layerSpec, c *fctx, cov orb.Ring) orb.Geometry {
	gs := &l.Geom
	r := c.r
	home := orb.Point{c.loc.Lon, c.loc.Lat}
	dx, dy := r.NormFloat64()*gs.Spread, r.NormFloat64()*gs.Spread
	if d := math.Hypot(dx, dy); d > gs.MaxSpread {
		dx, dy = dx*gs.MaxSpread/d, dy*gs.MaxSpread/d
	}
	centre := offset(home, dx, dy)
	if !inConvex(cov, centre) {
		centre = home
	}
	// A layer of one state keeps its features in that state: near a border
	// (or around the ACT, inside NSW's outline) a drawn centre can fall
	// across it, and then stays at its locality. Offshore ("") is left to
	// the coverage test above.
	if st := l.state(); st != "" {
		if at := austates.StateAt(centre); at != "" && at != st {
			centre = home
		}
	}
	c.at = centre
	switch gs.Kind {
	case "point":
		return orb.Point{roundCoord(centre[0]), roundCoord(centre[1])}
	case "multipoint":
		n := intBetween(r, gs.PMin, gs.PMax)
		mp := make(orb.MultiPoint, n)
		spread := between(r, 200, 1500)
		for i := range mp {
			p := offset(centre, r.NormFloat64()*spread, r.NormFloat64()*spread)
			mp[i] = orb.Point{roundCoord(p[0]), roundCoord(p[1])}
		}
		c.parts = n
		return mp
	case "polygon":
		return g.polygon(l, c, centre)
	case "line":
		return g.line(l, c, centre)
	}
	panic("synth: unknown geometry kind " + gs.Kind) // fixed in layerSpecs
}

func (g *Generator) polygon(l *layerSpec, c *fctx, centre orb.Point) orb.Geometry {
	gs := &l.Geom
	r := c.r
	fr := newFrame(centre[0], centre[1], 0)
	radius := math.Exp(between(r, math.Log(gs.RMin), math.Log(gs.RMax)))
	onlyMulti := len(l.GeomTypes) == 1 && l.GeomTypes[0] == "MultiPolygon"
	parts := 1
	if onlyMulti {
		parts = intBetween(r, 1, 4)
	} else if chance(r, gs.MultiP) {
		parts = intBetween(r, 2, 4)
	}
	theta := r.Float64() * 2 * math.Pi
	pos, prevR := 0.0, 0.0
	mp := make(orb.MultiPolygon, 0, parts)
	area := 0.0
	for j := 0; j < parts; j++ {
		rj := radius
		if j > 0 {
			rj = radius * between(r, 0.35, 1)
			// Parts on a line, each beyond the reach (1.7 r) of the last.
			pos += 1.7*prevR + 1.7*rj + 0.2*radius
		}
		prevR = rj
		cx, cy := pos*math.Cos(theta), pos*math.Sin(theta)
		n := intBetween(r, gs.VMin, gs.VMax)
		ring, a, minR := starRing(r, fr, cx, cy, rj, n, gs.Rough, false)
		poly := orb.Polygon{ring}
		if chance(r, gs.HoleP) {
			// A hole well inside: its reach (1.7 × 0.3 minR, plus its
			// offset) stays under the outer ring's nearest edge (> 0.95 minR).
			hr := minR * between(r, 0.12, 0.3)
			ox, oy := minR*0.1*(r.Float64()-0.5), minR*0.1*(r.Float64()-0.5)
			hole, ha, _ := starRing(r, fr, cx+ox, cy+oy, hr, max(6, n/2), gs.Rough, true)
			poly = append(poly, hole)
			a -= ha
		}
		area += a
		mp = append(mp, poly)
	}
	c.areaHa = area / 10000
	c.parts = parts
	if parts == 1 && !onlyMulti {
		return mp[0]
	}
	return mp
}

func (g *Generator) line(l *layerSpec, c *fctx, start orb.Point) orb.Geometry {
	gs := &l.Geom
	r := c.r
	keep := func(q orb.Point) bool { return inConvex(g.australia, q) }
	heading := r.Float64() * 2 * math.Pi
	step, n := gs.Step*between(r, 0.6, 1.6), intBetween(r, gs.NMin, gs.NMax)
	if chance(r, gs.LongP) {
		step, n = between(r, 1000, 2000), intBetween(r, 150, 500)
	}
	ls, length := meander(r, start, heading, step, n, keep)
	if len(ls) < 2 {
		ls, length = meander(r, start, heading+math.Pi, step, n, keep)
	}
	if len(ls) < 2 {
		q := offset(start, 50*math.Cos(heading), 50*math.Sin(heading))
		ls, length = orb.LineString{ls[0], {roundCoord(q[0]), roundCoord(q[1])}}, 50
	}
	c.parts = 1
	var geom orb.Geometry = ls
	if chance(r, gs.MultiP) && len(ls) >= 4 {
		// An anabranch: a second channel beside the main one.
		k := r.IntN(len(ls) / 2)
		side := between(r, 150, 600)
		if chance(r, 0.5) {
			side = -side
		}
		s := offset(ls[k], side*math.Cos(heading+math.Pi/2), side*math.Sin(heading+math.Pi/2))
		ls2, l2 := meander(r, s, heading+0.3*(r.Float64()-0.5), step, max(2, len(ls)/2), keep)
		if len(ls2) >= 2 {
			geom = orb.MultiLineString{ls, ls2}
			length += l2
			c.parts = 2
		}
	}
	c.lengthKm = length / 1000
	return geom
}
