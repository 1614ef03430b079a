// Package report renders what a person reads: the 1280 x 900 site-section
// map image (and, later, the site report PDF). It is pure: inputs to bytes.
// It knows no ledger, store or HTTP; callers gather the site, the layers'
// features (through the engine, the same exact membership as queries) and
// the context, and hand them over.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/geo/austates"
)

// MapVersion names the map renderer: a change to what it draws changes it,
// and with it every map's ETag.
const MapVersion = "map-4"

// Map image size in pixels (the contract's fixed 1280 x 900).
const (
	MapWidth  = 1280
	MapHeight = 900
)

// MaxRenderRadiusM caps the search distance a map draws: at 2 km the panel
// shows about 5 m a pixel, where a parcel, a bore or a small site is still
// legible; wider sections are drawn to 2 km and say so.
const MaxRenderRadiusM = 2000

// Outcome says what became of a layer's search.
type Outcome int

const (
	// Searched: Features hold every feature within RadiusM (possibly none).
	Searched Outcome = iota
	// OutsideCoverage: the search area lies outside the layer's coverage;
	// nothing was searched.
	OutsideCoverage
	// TooMany: more features than a result may hold; none drawn.
	TooMany
	// NoRelease: the layer has no published release.
	NoRelease
)

// Layer is one layer of the section as drawn.
type Layer struct {
	ID, Name string
	// RadiusM is the distance the layer was searched to.
	RadiusM float64
	Outcome Outcome
	// Coverage of the search area: "complete", "partial", "none" or "unknown".
	Coverage string
	// Features within RadiusM (CRS84): Point, MultiPoint, LineString,
	// MultiLineString, Polygon or MultiPolygon.
	Features []orb.Geometry
	// Attribution lines of the layer's sources, e.g. "NSW EPA (CC-BY-4.0)".
	Attribution []string
	// Keys, when set, hold a map key per feature (parallel to Features;
	// 0: none): the report's numbers that tie a table row to its mark.
	Keys []int
	// ClassNames, when set, are the classes of the layer's class field (a
	// polygon layer's probability or hazard class) and Classes, parallel to
	// Features, each feature's index into them (-1: none): polygons are
	// filled by class, and the legend names each class's colour.
	ClassNames []string
	Classes    []int
	// ClassField is the class field's printed name (a map image's legend
	// heads its classes with it).
	ClassField string
	// Minor, parallel to Keys: a key printed only where it fits clear of
	// every other label and mark (a record of the appendix, beyond the
	// detail distance); the others are placed whatever it takes.
	Minor []bool
}

// Map is everything a map image shows.
type Map struct {
	// Title is the site's name, or its id when it has none.
	Title string
	// Section is the section's name.
	Section string
	// Date is the render date; only its UTC day is printed.
	Date time.Time
	// Site is the saved site geometry (CRS84).
	Site orb.Geometry
	// Layers in legend order (at most a few dozen are legible).
	Layers []Layer
	// Parcels are cadastral outlines near the site (Polygon or MultiPolygon).
	Parcels []orb.Geometry
	// Print draws the map for the report PDF: the map panel fills the
	// image and its text is large enough to read at A4 width (7 pt or
	// more); the title, legend and attribution are left to the page, which
	// prints them as text.
	Print bool
	// Rings, when set, are the distances ringed instead of the layers'
	// radii (at most MaxRenderRadiusM each).
	Rings []float64
	// TextScale is a print map's text size against the screen map's (0:
	// 1.5, for a map the A4 body's width); a map placed narrower needs
	// more to print 7 pt or larger.
	TextScale float64
	// Basemap, when set, draws streets, water and places under the map;
	// without one the map says it has none.
	Basemap Basemap
}

// ErrInvalidMap reports inputs that cannot be drawn.
var ErrInvalidMap = errors.New("report: invalid map input")

// Layout (canvas pixels).
var (
	mapPanel    = image.Rect(24, 76, 904, 836)
	legendPanel = image.Rect(924, 76, 1256, 836)
)

// Colours: a light land and sea underneath; layers in a qualitative
// palette (Okabe-Ito and Tableau hues that stay apart for most colour
// vision and in greyscale through their marker shapes); the site in red.
var (
	landColour    = color.NRGBA{R: 0xf6, G: 0xf4, B: 0xee, A: 0xff}
	borderColour  = color.NRGBA{R: 0x6e, G: 0x6e, B: 0x6e, A: 0xff}
	coastColour   = color.NRGBA{R: 0x7f, G: 0xa3, B: 0xbd, A: 0xff}
	parcelColour  = color.NRGBA{R: 0xc4, G: 0xbb, B: 0xa8, A: 0xff}
	ringColour    = color.NRGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff}
	siteColour    = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	textColour    = color.NRGBA{R: 0x22, G: 0x22, B: 0x22, A: 0xff}
	mutedColour   = color.NRGBA{R: 0x5a, G: 0x5a, B: 0x5a, A: 0xff}
	warnColour    = color.NRGBA{R: 0x9c, G: 0x3d, B: 0x00, A: 0xff}
	palette       = []color.NRGBA{{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255}, {86, 180, 233, 255}, {140, 86, 75, 255}, {127, 127, 127, 255}, {23, 190, 207, 255}, {188, 189, 34, 255}, {148, 103, 189, 255}}
	stateLabelCol = color.NRGBA{R: 0x6a, G: 0x6a, B: 0x6a, A: 0xff}
)

type marker int

const (
	circle marker = iota
	square
	triangle
	diamond
)

type style struct {
	colour color.NRGBA
	shape  marker
}

func layerStyle(i int) style {
	return style{colour: palette[i%len(palette)], shape: marker((i + i/len(palette)) % 4)}
}

// RenderMap draws m as a 1280 x 900 JPEG. The same inputs give the same
// bytes: fonts and context are embedded, nothing iterates a map, and the
// date is the only clock.
func RenderMap(m Map) ([]byte, error) {
	img, err := DrawMap(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(512 << 10)
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		return nil, fmt.Errorf("report: encode map: %w", err)
	}
	return buf.Bytes(), nil
}

// DrawMap draws m on a new image (RenderMap encodes it).
func DrawMap(m Map) (*image.RGBA, error) {
	if m.Site == nil || m.Site.Dimensions() < 0 {
		return nil, fmt.Errorf("%w: no site geometry", ErrInvalidMap)
	}
	if err := geo.Validate(m.Site, 0); err != nil {
		return nil, fmt.Errorf("%w: site: %w", ErrInvalidMap, err)
	}
	radii := ringRadii(m.Layers)
	if len(m.Rings) > 0 {
		radii = ringRadii(ringLayers(m.Rings))
	}
	if m.Print {
		return drawPrint(m, radii), nil
	}
	return layoutScreen(m, radii).c.img, nil
}

// layoutScreen draws m as the map image and keeps what it placed.
func layoutScreen(m Map, radii []float64) *drawer {
	f := newFrame(m.Site, radii[0], mapPanel)
	c := newCanvas(MapWidth, MapHeight)
	fc := newFaces(1)
	defer fc.close()

	d := &drawer{c: c, f: f, fc: fc, m: m, panel: mapPanel}
	d.basemap()
	d.parcels()
	counts := d.layers()
	d.veil(radii[0])
	// Ring labels keep clear of every mark (ringLabel), as on the print map.
	d.rings(radii)
	d.site()
	d.furniture()
	d.noBasemap()
	d.drawRingLabels()
	d.banner(counts)
	d.header(radii[0])
	d.legend(counts, radii)
	d.footer()
	return d
}

// ringRadii lists the distinct search distances, largest first (a map
// with no layer draws a 0 m ring: the site alone).
func ringRadii(layers []Layer) []float64 {
	var rs []float64
	for _, l := range layers {
		r := math.Min(math.Max(l.RadiusM, 0), MaxRenderRadiusM)
		if !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		rs = []float64{0}
	}
	slices.Sort(rs)
	slices.Reverse(rs)
	return rs
}

// newFrame fits the site buffered by radius into the map panel.
func newFrame(site orb.Geometry, radius float64, panel image.Rectangle) *frame {
	b := site.Bound()
	centre := b.Center()
	f := &frame{local: geo.NewLocal(centre)}
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for p := range geo.Points(site) {
		x, y := f.local.Forward(p)
		minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
	}
	// The search area with a margin; at least 300 m across so a point
	// site at radius 0 still shows its street.
	half := max((maxX-minX)/2+radius, (maxY-minY)/2+radius, 150) * 1.08
	w, h := float64(panel.Dx()), float64(panel.Dy())
	f.scale = min(w, h) / (2 * half)
	f.xc, f.yc = (minX+maxX)/2, (minY+maxY)/2
	f.cx, f.cy = float64(panel.Min.X)+w/2, float64(panel.Min.Y)+h/2
	// The panel's extent in longitude and latitude, with a margin, from
	// its corners and edge midpoints.
	hx, hy := w/2/f.scale*1.1, h/2/f.scale*1.1
	f.ll = orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
	for _, sx := range []float64{-1, 0, 1} {
		for _, sy := range []float64{-1, 0, 1} {
			f.ll = f.ll.Extend(f.local.Inverse(f.xc+sx*hx, f.yc+sy*hy))
		}
	}
	return f
}

type drawer struct {
	// panel is the map panel (canvas pixels).
	panel image.Rectangle
	c     *canvas
	f     *frame
	fc    *faces
	m     Map
	p     *path
	// bordersDrawn: a state border crosses the panel (legend entry).
	bordersDrawn bool
	// notesTop is where the notes at the legend's foot begin.
	notesTop int
	// taken are the boxes print labels keep clear of; ringLabels are
	// drawn last (print maps).
	taken      []image.Rectangle
	ringLabels []ringLabel
	// marks are the boxes of the point marks drawn, which no label may
	// cover; keyBoxes the key labels placed (print maps).
	// basemapDrawn: the vector basemap is under the map; else
	// basemapMissing says why when one is configured (no tiles here, or
	// its tiles could not be read).
	basemapDrawn   bool
	basemapMissing string
	marks          []image.Rectangle
	keyBoxes       []image.Rectangle
	ringBoxes      []image.Rectangle
	// reserved are the furniture's and notes' boxes (print maps).
	reserved []image.Rectangle
}

func (d *drawer) path() *path {
	if d.p == nil {
		d.p = newPath()
	}
	d.p.reset()
	return d.p
}

// addGeometryFill adds a polygonal geometry's pixel shapes to p; pieces
// smaller than a pixel or two come back as points to mark.
func (d *drawer) addPolygons(p *path, g orb.Geometry, tiny func(x, y float64)) {
	for _, poly := range polygonsOf(g) {
		rings := d.f.polygon(poly)
		if len(rings) == 0 {
			continue
		}
		if len(rings[0]) == 2 || small(rings[0]) {
			if tiny != nil {
				x, y := centroidOf(rings[0])
				tiny(x, y)
			}
			continue
		}
		p.addPolygon(rings)
	}
}

func small(xy []float64) bool {
	minX, minY, maxX, maxY := xy[0], xy[1], xy[0], xy[1]
	for i := 2; i < len(xy); i += 2 {
		minX, maxX = min(minX, xy[i]), max(maxX, xy[i])
		minY, maxY = min(minY, xy[i+1]), max(maxY, xy[i+1])
	}
	return maxX-minX < 3 && maxY-minY < 3
}

func centroidOf(xy []float64) (float64, float64) {
	var sx, sy float64
	n := len(xy) / 2
	for i := 0; i < n; i++ {
		sx += xy[2*i]
		sy += xy[2*i+1]
	}
	return sx / float64(n), sy / float64(n)
}

// polygonsOf is a Polygon or MultiPolygon as polygons (nil for others).
func polygonsOf(g orb.Geometry) []orb.Polygon {
	switch g := g.(type) {
	case orb.Polygon:
		return []orb.Polygon{g}
	case orb.MultiPolygon:
		return g
	}
	return nil
}

// linesOf is a LineString or MultiLineString as lines (nil for others).
func linesOf(g orb.Geometry) []orb.LineString {
	switch g := g.(type) {
	case orb.LineString:
		return []orb.LineString{g}
	case orb.MultiLineString:
		return g
	}
	return nil
}

// addOutlines adds the strokes of a polygonal geometry's rings.
func (d *drawer) addOutlines(p *path, g orb.Geometry, w float64) {
	for _, poly := range polygonsOf(g) {
		for _, r := range d.f.polygon(poly) {
			if len(r) < 6 || small(r) {
				continue
			}
			closed := append(r, r[0], r[1])
			p.addStroke(closed, w)
		}
	}
}

func (d *drawer) addLines(p *path, g orb.Geometry, w float64) {
	for _, l := range linesOf(g) {
		for _, xy := range d.f.lines(l) {
			if len(xy) == 2 {
				p.addDisc(xy[0], xy[1], w/2)
				continue
			}
			p.addStroke(xy, w)
		}
	}
}

// addMarker adds a marker shape of radius r about (x, y).
func addMarker(p *path, shape marker, x, y, r float64) {
	switch shape {
	case square:
		r *= 0.88
		p.addRing([]float64{x - r, y - r, x + r, y - r, x + r, y + r, x - r, y + r}, true)
	case triangle:
		r *= 1.2
		p.addRing([]float64{x, y - r, x + r*0.866, y + r*0.5, x - r*0.866, y + r*0.5}, true)
	case diamond:
		r *= 1.2
		p.addRing([]float64{x, y - r, x + r, y, x, y + r, x - r, y}, true)
	default:
		p.addDisc(x, y, r)
	}
}

// basemap draws the coastline and state borders, with state codes.
//
// The outlines are Natural Earth 1:10m: about 2 km between coastline
// vertices, too coarse to colour land and sea at site scale without
// drawing a harbourside site in the water. So the context is lines only: a
// faint coastline and dashed state borders, on one plain ground, and the
// footer says they are generalised.
func (d *drawer) basemap() {
	c, f := d.c, d.f
	draw.Draw(c.img, d.panel, image.NewUniform(landColour), image.Point{}, draw.Src)
	d.vectorBasemap()
	states := austates.Within(f.ll)
	if len(states) == 0 {
		return
	}
	coast := d.path()
	for _, l := range austates.Coastline() {
		d.addLines(coast, l, 1.4)
	}
	c.fill(coast, coastColour, d.panel)
	borders := d.path()
	for _, l := range austates.Borders() {
		for _, xy := range d.f.lines(l) {
			for _, dash := range dashes(xy, 9, 5) {
				borders.addStroke(dash, 1.6)
			}
		}
	}
	d.bordersDrawn = !borders.bounds(d.panel).Empty()
	c.fill(borders, borderColour, d.panel)
	// A state's code where two or more states share the panel, in a
	// corner of the panel that state holds, so a border reads at a glance.
	if len(states) < 2 {
		return
	}
	for _, s := range states {
		for _, corner := range [][2]float64{{0.06, 0.08}, {0.94, 0.08}, {0.06, 0.92}, {0.94, 0.92}, {0.5, 0.08}, {0.5, 0.92}} {
			x := float64(d.panel.Min.X) + corner[0]*float64(d.panel.Dx())
			y := float64(d.panel.Min.Y) + corner[1]*float64(d.panel.Dy())
			p := f.local.Inverse(f.xc+(x-f.cx)/f.scale, f.yc-(y-f.cy)/f.scale)
			if austates.StateAt(p) != s.Code {
				continue
			}
			w := textWidth(d.fc.label, s.Code)
			tx := int(x) - w/2
			tx = min(max(tx, d.panel.Min.X+6), d.panel.Max.X-6-w)
			c.haloText(d.fc.label, s.Code, tx, int(y)+5, stateLabelCol)
			break
		}
	}
}

// dashes cuts a polyline into dashes of on pixels with gaps of off.
func dashes(xy []float64, on, off float64) [][]float64 {
	var out [][]float64
	var cur []float64
	drawing, left := true, on
	for i := 0; i+3 < len(xy); i += 2 {
		ax, ay, bx, by := xy[i], xy[i+1], xy[i+2], xy[i+3]
		seg := math.Hypot(bx-ax, by-ay)
		pos := 0.0
		for seg-pos > 0 {
			step := min(left, seg-pos)
			t0, t1 := pos/seg, (pos+step)/seg
			if drawing {
				if len(cur) == 0 {
					cur = append(cur, ax+(bx-ax)*t0, ay+(by-ay)*t0)
				}
				cur = append(cur, ax+(bx-ax)*t1, ay+(by-ay)*t1)
			}
			pos += step
			left -= step
			if left <= 0 {
				if drawing && len(cur) >= 4 {
					out = append(out, cur)
				}
				cur = nil
				drawing = !drawing
				left = on
				if !drawing {
					left = off
				}
			}
		}
	}
	if drawing && len(cur) >= 4 {
		out = append(out, cur)
	}
	return out
}

func fillRect(c *canvas, r image.Rectangle, col color.Color) {
	p := newPath()
	p.addRing([]float64{float64(r.Min.X), float64(r.Min.Y), float64(r.Max.X), float64(r.Min.Y), float64(r.Max.X), float64(r.Max.Y), float64(r.Min.X), float64(r.Max.Y)}, true)
	c.fill(p, col, r)
}

func (d *drawer) parcels() {
	if len(d.m.Parcels) == 0 {
		return
	}
	p := d.path()
	for _, g := range d.m.Parcels {
		d.addOutlines(p, g, 1)
	}
	d.c.fill(p, parcelColour, d.panel)
}

// layerCount is what a layer drew.
type layerCount struct {
	found int // features within the radius
}

// layers draws every searched layer's features: polygons first (filled
// translucent, then outlined), lines over them, points on top, each group
// in legend order so a point is never hidden under a fill.
func (d *drawer) layers() []layerCount {
	counts := make([]layerCount, len(d.m.Layers))
	for i, l := range d.m.Layers {
		if l.Outcome == Searched {
			counts[i].found = len(l.Features)
		}
	}
	for pass := 0; pass < 3; pass++ {
		for i, l := range d.m.Layers {
			if l.Outcome != Searched || len(l.Features) == 0 {
				continue
			}
			st := layerStyle(i)
			switch pass {
			case 0:
				d.polygonLayer(l, st)
			case 1:
				d.lineLayer(l, st)
			case 2:
				d.pointLayer(l, st)
			}
		}
	}
	return counts
}

// ClassColour is the fill of class i of a classed polygon layer: a
// categorical palette (classes imply no order the map could know).
func ClassColour(i int) color.NRGBA {
	if i < 0 {
		return color.NRGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	}
	return classPalette[i%len(classPalette)]
}

var classPalette = []color.NRGBA{
	{R: 0xd7, G: 0x30, B: 0x27, A: 0xff}, {R: 0xfc, G: 0x8d, B: 0x59, A: 0xff}, {R: 0xfe, G: 0xe0, B: 0x90, A: 0xff},
	{R: 0x91, G: 0xbf, B: 0xdb, A: 0xff}, {R: 0x45, G: 0x75, B: 0xb4, A: 0xff}, {R: 0x1a, G: 0x98, B: 0x50, A: 0xff},
	{R: 0x76, G: 0x2a, B: 0x83, A: 0xff},
}

// classedPolygons fills each class of a classed polygon layer in its own
// colour (at 45%), with the layer's outline.
func (d *drawer) classedPolygons(l Layer, st style) {
	var tiny []float64
	for k := -1; k < len(l.ClassNames); k++ {
		fill := d.c.newLayerFill(d.panel)
		for i, g := range l.Features {
			if i < len(l.Classes) && l.Classes[i] == k {
				d.addPolygons(fill.p, g, func(x, y float64) { tiny = append(tiny, x, y) })
			}
		}
		c := ClassColour(k)
		c.A = 0x73
		fill.paint(c)
	}
	out := d.c.newLayerFill(d.panel)
	for _, g := range l.Features {
		d.addOutlines(out.p, g, 1.3)
	}
	out.paint(st.colour)
	d.markers(tiny, st, 2.5)
}

func (d *drawer) polygonLayer(l Layer, st style) {
	if len(l.ClassNames) > 0 && len(l.Classes) == len(l.Features) {
		d.classedPolygons(l, st)
		return
	}
	var tiny []float64
	fill := d.c.newLayerFill(d.panel)
	n := 0
	for _, g := range l.Features {
		switch g.(type) {
		case orb.Polygon, orb.MultiPolygon:
			n++
			d.addPolygons(fill.p, g, func(x, y float64) { tiny = append(tiny, x, y) })
		}
	}
	if n == 0 {
		return
	}
	fillCol := st.colour
	fillCol.A = 0x4d // 30%
	fill.paint(fillCol)
	out := d.c.newLayerFill(d.panel)
	for _, g := range l.Features {
		d.addOutlines(out.p, g, 1.3)
	}
	out.paint(st.colour)
	// Polygons too small to see as areas are marked, so none vanishes.
	d.markers(tiny, st, 2.5)
}

func (d *drawer) lineLayer(l Layer, st style) {
	lf := d.c.newLayerFill(d.panel)
	for _, g := range l.Features {
		d.addLines(lf.p, g, 1.8)
	}
	lf.paint(st.colour)
}

func (d *drawer) pointLayer(l Layer, st style) {
	var xy []float64
	for _, g := range l.Features {
		switch g := g.(type) {
		case orb.Point:
			if d.f.inside(g) {
				x, y := d.f.px(g)
				xy = append(xy, x, y)
			}
		case orb.MultiPoint:
			for _, p := range g {
				if d.f.inside(p) {
					x, y := d.f.px(p)
					xy = append(xy, x, y)
				}
			}
		}
	}
	d.markers(xy, st, 4.5)
}

// markers draws a marker at each (x, y), white-edged; markers falling on
// the same pixel are drawn once.
func (d *drawer) markers(xy []float64, st style, r float64) {
	if len(xy) == 0 {
		return
	}
	w := d.panel.Dx()
	seen := make([]uint64, (w*d.panel.Dy()+63)/64)
	edge, body := d.c.newLayerFill(d.panel), d.c.newLayerFill(d.panel)
	for i := 0; i < len(xy); i += 2 {
		x, y := xy[i], xy[i+1]
		px, py := int(math.Round(x))-d.panel.Min.X, int(math.Round(y))-d.panel.Min.Y
		if px < 0 || py < 0 || px >= w || py >= d.panel.Dy() {
			continue
		}
		k := py*w + px
		if seen[k/64]&(1<<(k%64)) != 0 {
			continue
		}
		seen[k/64] |= 1 << (k % 64)
		m := int(math.Ceil(r + 1.2))
		d.marks = append(d.marks, image.Rect(int(x)-m, int(y)-m, int(x)+m+1, int(y)+m+1))
		addMarker(edge.p, st.shape, x, y, r+1.2)
		addMarker(body.p, st.shape, x, y, r)
	}
	edge.paint(color.White)
	body.paint(st.colour)
}

// siteShape adds the site buffered by r pixels: the union of the site
// itself (for a polygon), a rectangle along each edge and a disc at each
// vertex (the union is what the rasteriser's clamped coverage computes).
func (d *drawer) siteShape(p *path, r float64) {
	polys, lines := polygonsOf(d.m.Site), linesOf(d.m.Site)
	var pts []orb.Point
	switch g := d.m.Site.(type) {
	case orb.Point:
		pts = []orb.Point{g}
	case orb.MultiPoint:
		pts = g
	}
	for _, pt := range pts {
		x, y := d.f.px(pt)
		if r > 0 {
			p.addDisc(x, y, r)
		}
	}
	edges := func(xy []float64) {
		n := len(xy) / 2
		for i := 0; i+1 < n; i++ {
			p.addSegment(xy[2*i], xy[2*i+1], xy[2*i+2], xy[2*i+3], r)
		}
		for i := 0; i < n; i++ {
			p.addDisc(xy[2*i], xy[2*i+1], r)
		}
	}
	for _, l := range lines {
		if r > 0 {
			edges(d.f.project(l, nil))
		}
	}
	for _, poly := range polys {
		var rings [][]float64
		for _, ring := range poly {
			rings = append(rings, d.f.project(ring, nil))
		}
		p.addPolygon(rings)
		if r > 0 {
			for _, xy := range rings {
				edges(xy)
			}
		}
	}
}

// veil lightens everything outside the search area: it was not searched,
// and features there are not drawn.
func (d *drawer) veil(radius float64) {
	p := d.path()
	d.siteShape(p, radius*d.f.scale)
	inside := d.c.mask(p, d.panel)
	for i := range inside.Pix {
		inside.Pix[i] = 255 - inside.Pix[i]
	}
	d.c.paintMask(inside, rgba(255, 255, 255, 0.55))
}

// rings draws the boundary of each search distance, labelled at its
// northernmost point.
func (d *drawer) rings(radii []float64) {
	const w = 1.6
	var top orb.Point // the site's northernmost vertex
	first := true
	for p := range geo.Points(d.m.Site) {
		if first || p[1] > top[1] {
			top, first = p, false
		}
	}
	tx, ty := d.f.px(top)
	for _, r := range radii {
		if r <= 0 {
			continue
		}
		rp := r * d.f.scale
		outer := d.path()
		d.siteShape(outer, rp+w/2)
		a := d.c.mask(outer, d.panel)
		inner := d.path()
		d.siteShape(inner, max(rp-w/2, 0))
		b := d.c.mask(inner, d.panel)
		for i := range a.Pix {
			a.Pix[i] = uint8(uint32(a.Pix[i]) * (255 - uint32(b.Pix[i])) / 255)
		}
		d.c.paintMask(a, ringColour)
		label := Distance(r)
		lw := textWidth(d.fc.label, label)
		d.ringLabel(label, int(tx)-lw/2, int(ty-rp)+8, lw)
	}
}

// drawRingLabels draws the ring labels ringLabel placed, over the marks
// they keep clear of.
func (d *drawer) drawRingLabels() {
	for _, rl := range d.ringLabels {
		d.c.haloText(d.fc.label, rl.text, rl.x, rl.y, ringColour)
	}
}

// site draws the saved site on top of everything.
func (d *drawer) site() {
	switch g := d.m.Site.(type) {
	case orb.Polygon, orb.MultiPolygon:
		fill := d.path()
		d.siteShape(fill, 0)
		d.c.fill(fill, rgba(0xd6, 0x27, 0x28, 0.18), d.panel)
		casing := d.path()
		d.addOutlines(casing, g, 5)
		d.c.fill(casing, color.White, d.panel)
		line := d.path()
		d.addOutlines(line, g, 2.6)
		d.c.fill(line, siteColour, d.panel)
	case orb.LineString, orb.MultiLineString:
		casing := d.path()
		d.addLines(casing, g, 6)
		d.c.fill(casing, color.White, d.panel)
		line := d.path()
		d.addLines(line, g, 3.2)
		d.c.fill(line, siteColour, d.panel)
	default:
		for p := range geo.Points(g) {
			x, y := d.f.px(p)
			drawSiteMarker(d.c, x, y)
		}
	}
}

// drawSiteMarker draws the site's point symbol: a red target ring.
func drawSiteMarker(c *canvas, x, y float64) {
	for _, s := range []struct {
		r   float64
		col color.Color
	}{{9, color.White}, {7.5, siteColour}, {4, color.White}, {2.5, siteColour}} {
		p := newPath()
		p.addDisc(x, y, s.r)
		c.fill(p, s.col, image.Rect(0, 0, MapWidth, MapHeight))
	}
}

// furniture draws the panel border, the north arrow and the scale bar.
// noBasemap states on the map that no basemap is drawn under it, so that
// a blank ground is never read as open land: bottom right, clear of the
// scale bar.
func (d *drawer) noBasemap() {
	text, x, y, box, ok := d.basemapNote()
	if !ok {
		return
	}
	fillRect(d.c, box, rgba(255, 255, 255, 0.85))
	d.c.text(d.fc.small, text, x, y, mutedColour)
	d.taken = append(d.taken, box)
}

// basemapNote is the basemap note's text, where it is written and its
// box (false: no note), known before it is drawn so labels keep clear.
func (d *drawer) basemapNote() (text string, x, y int, box image.Rectangle, ok bool) {
	text = "No basemap configured: streets, water and place names are not shown"
	if d.basemapMissing != "" {
		text = d.basemapMissing + ": streets, water and place names are not shown"
	}
	if d.basemapDrawn {
		text = "Basemap: " + d.m.Basemap.Attribution()
		if d.m.Basemap.Attribution() == "" {
			return "", 0, 0, image.Rectangle{}, false
		}
	}
	face := d.fc.small
	w := textWidth(face, text)
	asc := face.Metrics().Ascent.Ceil()
	x, y = d.panel.Max.X-w-10, d.panel.Max.Y-10
	return text, x, y, image.Rect(x-5, y-asc-5, x+w+5, y+5), true
}

func (d *drawer) furniture() {
	c := d.c
	// North arrow, top right: the projection is centred on the site, so
	// up is true north there.
	ax, ay := float64(d.panel.Max.X-34), float64(d.panel.Min.Y+18)
	bg := newPath()
	bg.addDisc(ax, ay+20, 22)
	c.fill(bg, rgba(255, 255, 255, 0.85), d.panel)
	left, right := newPath(), newPath()
	left.addRing([]float64{ax, ay + 4, ax - 9, ay + 34, ax, ay + 28}, true)
	right.addRing([]float64{ax, ay + 4, ax + 9, ay + 34, ax, ay + 28}, true)
	c.fill(left, textColour, d.panel)
	edge := newPath()
	edge.addStroke([]float64{ax, ay + 4, ax + 9, ay + 34, ax, ay + 28}, 1.2)
	c.fill(right, color.White, d.panel)
	c.fill(edge, textColour, d.panel)
	nw := textWidth(d.fc.label, "N")
	c.text(d.fc.label, "N", int(ax)-nw/2, int(ay)+1, textColour)

	d.scaleBar()

	border := newPath()
	r := d.panel
	border.addStroke([]float64{float64(r.Min.X), float64(r.Min.Y), float64(r.Max.X), float64(r.Min.Y), float64(r.Max.X), float64(r.Max.Y), float64(r.Min.X), float64(r.Max.Y), float64(r.Min.X), float64(r.Min.Y)}, 1.5)
	c.fill(border, mutedColour, image.Rect(0, 0, MapWidth, MapHeight))
}

// scaleBar draws a bar of a round length near a fifth of the panel, in
// four alternating parts. The projection keeps distances from the site
// true, so the bar is true at the site's latitude.
func (d *drawer) scaleBar() {
	c := d.c
	target := float64(d.panel.Dx()) / 5 / d.f.scale // metres
	length := niceLength(target)
	px := length * d.f.scale
	x0, y0 := float64(d.panel.Min.X+18), float64(d.panel.Max.Y-22)
	label := Distance(length)
	lw := textWidth(d.fc.small, label)
	top := max(24, d.fc.small.Metrics().Ascent.Ceil()+10)
	fillRect(c, image.Rect(int(x0)-10, int(y0)-top, int(x0+px)+lw/2+14, int(y0)+14), rgba(255, 255, 255, 0.85))
	for i := 0; i < 4; i++ {
		col := color.Color(textColour)
		if i%2 == 1 {
			col = color.White
		}
		seg := newPath()
		a := x0 + px*float64(i)/4
		b := x0 + px*float64(i+1)/4
		seg.addRing([]float64{a, y0, b, y0, b, y0 + 6, a, y0 + 6}, true)
		c.fill(seg, col, d.panel)
	}
	out := newPath()
	out.addStroke([]float64{x0, y0, x0 + px, y0, x0 + px, y0 + 6, x0, y0 + 6, x0, y0}, 1)
	c.fill(out, textColour, d.panel)
	c.text(d.fc.small, "0", int(x0)-3, int(y0)-5, textColour)
	c.text(d.fc.small, label, int(x0+px)-lw/2, int(y0)-5, textColour)
}

// niceLength is the largest 1, 2 or 5 x 10^k metres not above m.
func niceLength(m float64) float64 {
	if m <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(m)))
	for _, k := range []float64{5, 2, 1} {
		if k*p <= m {
			return k * p
		}
	}
	return p
}

// Distance writes metres as "750 m", "1 km" or "2.5 km": the one way the
// report and its text write a distance.
func Distance(m float64) string {
	if m < 1000 {
		return strconv.FormatFloat(math.Round(m), 'f', -1, 64) + " m"
	}
	return strconv.FormatFloat(math.Round(m/100)/10, 'f', -1, 64) + " km"
}

// banner states on the map itself what an empty or partial map means, so
// that it can never be read as a clean site.
func (d *drawer) banner(counts []layerCount) {
	var onMap, notes []string
	total, searched, notDrawn, thin := 0, 0, 0, 0
	for i, l := range d.m.Layers {
		switch l.Outcome {
		case Searched:
			searched++
			total += counts[i].found
			if l.Coverage != "complete" {
				thin++
			}
		case OutsideCoverage:
			thin++
		default:
			notDrawn++
		}
	}
	switch {
	case len(d.m.Layers) == 0:
		onMap = append(onMap, "This section has no layers: nothing was searched.")
	case total == 0 && searched > 0:
		onMap = append(onMap, "No features of this section's layers lie within the search distance of the site.")
	case total == 0:
		onMap = append(onMap, "No layer of this section could be searched here: nothing is shown.")
	}
	if thin > 0 {
		notes = append(notes, "Data coverage does not reach all of the search area for some layers: an absence of features there is not evidence of absence.")
	}
	if notDrawn > 0 {
		notes = append(notes, "Some layers are not drawn: see their entries above.")
	}
	d.notesTop = legendPanel.Max.Y
	if len(notes) > 0 {
		// The notes sit at the foot of the legend, clear of the data.
		box := d.noteBox(notes, legendPanel.Min.X, legendPanel.Dx(), func(h int) int { return legendPanel.Max.Y - h })
		d.notesTop = box.Min.Y
	}
	if len(onMap) > 0 {
		// Over an empty map, above the scale bar (the panel's top holds
		// the ring labels).
		d.noteBox(onMap, d.panel.Min.X+12, d.panel.Dx()-120, func(h int) int { return d.panel.Max.Y - 56 - h })
	}
}

// noteBox draws lines wrapped to width in a framed box at x, its top from
// the box height; it returns the box.
func (d *drawer) noteBox(lines []string, x, width int, top func(h int) int) image.Rectangle {
	var wrapped []string
	for _, l := range lines {
		wrapped = append(wrapped, wrap(d.fc.body, l, width-24, 4)...)
	}
	h := 12 + 18*len(wrapped)
	y0 := top(h)
	w := 0
	for _, l := range wrapped {
		w = max(w, textWidth(d.fc.body, l))
	}
	box := image.Rect(x, y0, x+w+24, y0+h)
	fillRect(d.c, box, rgba(255, 255, 255, 0.92))
	edge := newPath()
	edge.addStroke(append(rectXY(box), float64(box.Min.X), float64(box.Min.Y)), 1.5)
	d.c.fill(edge, warnColour, image.Rect(0, 0, MapWidth, MapHeight))
	for i, l := range wrapped {
		d.c.text(d.fc.body, l, x+12, y0+20+18*i, warnColour)
	}
	return box
}

func (d *drawer) header(radius float64) {
	title := wrap(d.fc.title, d.m.Title, MapWidth-48, 1)
	if len(title) > 0 {
		d.c.text(d.fc.title, title[0], 24, 34, textColour)
	}
	sub := fmt.Sprintf("%s  ·  within %s of the site  ·  %s", d.m.Section, Distance(radius), d.m.Date.UTC().Format("2 January 2006"))
	if s := wrap(d.fc.subtitle, sub, MapWidth-48, 1); len(s) > 0 {
		d.c.text(d.fc.subtitle, s[0], 24, 60, mutedColour)
	}
}

// legend names each layer with its symbol and what was found.
func (d *drawer) legend(counts []layerCount, radii []float64) {
	c, fc := d.c, d.fc
	x, y := legendPanel.Min.X, legendPanel.Min.Y+14
	c.text(fc.heading, "Legend", x, y, textColour)
	y += 14
	textX := x + 40
	width := legendPanel.Max.X - textX

	// The site and the search distance.
	sw := image.Rect(x, y+4, x+30, y+20)
	switch d.m.Site.(type) {
	case orb.Point, orb.MultiPoint:
		drawSiteMarker(c, float64(sw.Min.X+15), float64(sw.Min.Y+8))
	default:
		p := newPath()
		p.addRing(rectXY(sw), true)
		c.fill(p, rgba(0xd6, 0x27, 0x28, 0.18), legendPanel)
		e := newPath()
		e.addStroke(append(rectXY(sw), float64(sw.Min.X), float64(sw.Min.Y)), 2.6)
		c.fill(e, siteColour, legendPanel)
	}
	c.text(fc.body, "Site", textX, y+17, textColour)
	y += 28
	ring := newPath()
	ring.addStroke([]float64{float64(x), float64(y + 12), float64(x + 30), float64(y + 12)}, 1.6)
	c.fill(ring, ringColour, legendPanel)
	var rs []string
	for _, r := range radii {
		if r > 0 {
			rs = append(rs, Distance(r))
		}
	}
	c.text(fc.body, "Search distance", textX, y+10, textColour)
	dist := "the site itself"
	if len(rs) > 0 {
		dist = strings.Join(rs, ", ") + " from the site"
	}
	c.text(fc.small, dist, textX, y+26, mutedColour)
	y += 44
	if d.bordersDrawn {
		b := newPath()
		for _, dash := range dashes([]float64{float64(x), float64(y + 8), float64(x + 30), float64(y + 8)}, 9, 5) {
			b.addStroke(dash, 1.6)
		}
		c.fill(b, borderColour, legendPanel)
		c.text(fc.body, "State border", textX, y+12, textColour)
		y += 28
	}

	for i, l := range d.m.Layers {
		if y > d.notesTop-50 {
			c.text(fc.small, fmt.Sprintf("… and %d more layers", len(d.m.Layers)-i), textX, y+12, mutedColour)
			break
		}
		st := layerStyle(i)
		d.swatch(l, st, image.Rect(x, y+2, x+30, y+20))
		name := wrap(fc.body, l.Name, width, 2)
		for j, line := range name {
			c.text(fc.body, line, textX, y+14+16*j, textColour)
		}
		y += 16*len(name) + 2
		for _, line := range layerNotes(l, counts[i]) {
			for _, w := range wrap(fc.small, line.text, width, 2) {
				col := mutedColour
				if line.warn {
					col = warnColour
				}
				c.text(fc.small, w, textX, y+12, col)
				y += 15
			}
		}
		y = d.legendClasses(l, textX, y, width)
		y += 12
	}
}

// legendClasses lists a classed polygon layer's classes, each with its
// fill as the map paints it, under the layer's entry; it returns the y
// below them.
func (d *drawer) legendClasses(l Layer, x, y, width int) int {
	if len(l.ClassNames) == 0 || len(l.Classes) != len(l.Features) {
		return y
	}
	c, fc := d.c, d.fc
	if l.ClassField != "" {
		for _, w := range wrap(fc.small, "Filled by "+l.ClassField+":", width, 2) {
			c.text(fc.small, w, x, y+12, mutedColour)
			y += 15
		}
	}
	names := l.ClassNames
	if slices.Contains(l.Classes, -1) {
		names = append(slices.Clip(names), "no class")
	}
	for k, name := range names {
		if y > d.notesTop-30 {
			c.text(fc.small, fmt.Sprintf("… and %d more classes", len(names)-k), x, y+12, mutedColour)
			return y + 15
		}
		if k == len(l.ClassNames) {
			k = -1
		}
		r := image.Rect(x, y+2, x+18, y+13)
		p := newPath()
		p.addRing(rectXY(r), true)
		fill := ClassColour(k)
		fill.A = 0x73
		c.fill(p, landColour, legendPanel)
		c.fill(p, fill, legendPanel)
		e := newPath()
		e.addStroke(append(rectXY(r), float64(r.Min.X), float64(r.Min.Y)), 1)
		c.fill(e, mutedColour, legendPanel)
		for _, w := range wrap(fc.small, name, width-24, 1) {
			c.text(fc.small, w, x+24, y+12, textColour)
		}
		y += 15
	}
	return y
}

func rectXY(r image.Rectangle) []float64 {
	return []float64{float64(r.Min.X), float64(r.Min.Y), float64(r.Max.X), float64(r.Min.Y), float64(r.Max.X), float64(r.Max.Y), float64(r.Min.X), float64(r.Max.Y)}
}

// swatch draws the layer's symbol as it appears on the map: the kind of
// geometry it mostly holds (a polygon when it drew nothing).
func (d *drawer) swatch(l Layer, st style, r image.Rectangle) {
	kind := 2
	for _, g := range l.Features {
		switch g.(type) {
		case orb.Point, orb.MultiPoint:
			kind = 0
		case orb.LineString, orb.MultiLineString:
			kind = 1
		}
		break
	}
	c := d.c
	switch kind {
	case 0:
		edge, body := newPath(), newPath()
		cx, cy := float64(r.Min.X+15), float64(r.Min.Y+9)
		addMarker(edge, st.shape, cx, cy, 5.7)
		addMarker(body, st.shape, cx, cy, 4.5)
		c.fill(edge, color.White, legendPanel)
		c.fill(body, st.colour, legendPanel)
	case 1:
		p := newPath()
		p.addStroke([]float64{float64(r.Min.X), float64(r.Max.Y - 4), float64(r.Min.X + 10), float64(r.Min.Y + 6), float64(r.Min.X + 20), float64(r.Max.Y - 6), float64(r.Max.X), float64(r.Min.Y + 4)}, 1.8)
		c.fill(p, st.colour, legendPanel)
	default:
		fill := st.colour
		fill.A = 0x4d
		p := newPath()
		p.addRing(rectXY(r), true)
		c.fill(p, fill, legendPanel)
		e := newPath()
		e.addStroke(append(rectXY(r), float64(r.Min.X), float64(r.Min.Y)), 1.3)
		c.fill(e, st.colour, legendPanel)
	}
}

type note struct {
	text string
	warn bool
}

// layerNotes says what was found for a layer and how far to trust an
// absence.
func layerNotes(l Layer, n layerCount) []note {
	r := min(max(l.RadiusM, 0), MaxRenderRadiusM)
	within := "within " + Distance(r)
	var out []note

	switch l.Outcome {
	case Searched:
		switch n.found {
		case 0:
			out = append(out, note{"no features " + within, false})
		case 1:
			out = append(out, note{"1 feature " + within, false})
		default:
			out = append(out, note{formatCount(n.found) + " features " + within, false})
		}
		switch l.Coverage {
		case "partial":
			out = append(out, note{"data covers only part of the search area", true})
		case "none":
			out = append(out, note{"data does not cover the search area", true})
		case "unknown":
			out = append(out, note{"data coverage unknown", true})
		}
	case OutsideCoverage:
		out = append(out, note{"not searched: the search area is outside this layer's coverage", true})
	case TooMany:
		out = append(out, note{"not drawn: more than 100,000 features " + within, true})
	case NoRelease:
		out = append(out, note{"not drawn: no data release published yet", true})
	}
	if l.RadiusM > r && l.Outcome == Searched {
		out = append(out, note{"drawn to " + Distance(r) + "; queries reach " + Distance(l.RadiusM), false})
	}
	return out
}

func formatCount(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// footer names the sources of everything drawn.
func (d *drawer) footer() {
	var attr []string
	for _, l := range d.m.Layers {
		for _, a := range l.Attribution {
			if a != "" && !slices.Contains(attr, a) {
				attr = append(attr, a)
			}
		}
	}
	line1 := "Data: " + strings.Join(attr, "; ")
	if len(attr) == 0 {
		line1 = "Data: none drawn"
	}
	ctx := "Coastline and state borders: Natural Earth 1:10m, generalised to about 1 km (public domain)"
	if len(d.m.Parcels) > 0 {
		ctx += "; parcels: cadastral gazetteer"
	}
	line2 := ctx + ". Azimuthal equidistant projection centred on the site; distances are geodesic. siteenv " + MapVersion + "."
	y := 856
	for _, l := range wrap(d.fc.small, line1, MapWidth-48, 2) {
		d.c.text(d.fc.small, l, 24, y, mutedColour)
		y += 15
	}
	for _, l := range wrap(d.fc.small, line2, MapWidth-48, 1) {
		d.c.text(d.fc.small, l, 24, y, mutedColour)
	}
}
