package report

import (
	"image"
	"image/color"
	"math"
	"slices"
	"strconv"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// printScale is how much larger the print map's text is than the screen
// map's: the image spans the A4 body (180 mm), about 7.1 px a millimetre,
// so the 12 px screen text would print at under 5 pt; 1.5 times makes the
// smallest 18 px, about 7.2 pt.
const printScale = 1.5

// printPanel is the print map's panel: the whole image but a hairline.
var printPanel = image.Rect(2, 2, MapWidth-2, MapHeight-2)

// ringLayers makes a layer per ring distance (ringRadii reads radii from
// layers).
func ringLayers(rings []float64) []Layer {
	out := make([]Layer, 0, len(rings))
	for _, r := range rings {
		out = append(out, Layer{RadiusM: r})
	}
	return out
}

// drawPrint draws m for the PDF: the panel alone, keys on the listed
// features, ring labels placed clear of the keys.
func drawPrint(m Map, radii []float64) *image.RGBA { return layoutPrint(m, radii).c.img }

// layoutPrint draws m for the PDF and keeps what it placed.
func layoutPrint(m Map, radii []float64) *drawer {
	f := newFrame(m.Site, radii[0], printPanel)
	c := newCanvas(MapWidth, MapHeight)
	scale := printScale
	if m.TextScale > 0 {
		scale = m.TextScale
	}
	fc := newFaces(scale)
	defer fc.close()
	d := &drawer{c: c, f: f, fc: fc, m: m, panel: printPanel}
	fillRect(c, image.Rect(0, 0, MapWidth, MapHeight), color.White)
	d.basemap()
	d.parcels()
	counts := d.layers()
	if len(m.Layers) > 0 || len(m.Rings) > 0 {
		d.veil(radii[0])
	}
	// The furniture's corners and the basemap note are taken before any
	// label is placed: ring labels and keys stay clear of them.
	d.reserved = []image.Rectangle{
		image.Rect(printPanel.Max.X-64, printPanel.Min.Y, printPanel.Max.X, printPanel.Min.Y+64),
		image.Rect(printPanel.Min.X, printPanel.Max.Y-56, printPanel.Min.X+340, printPanel.Max.Y)}
	if _, _, _, box, ok := d.basemapNote(); ok {
		d.reserved = append(d.reserved, box)
	}
	d.taken = append(d.taken, d.reserved...)
	d.rings(radii)
	d.site()
	d.furniture()
	d.noBasemap()
	// Keys keep clear of the site itself.
	sb := d.siteBox()
	d.taken = append(d.taken, sb)
	d.keys()
	d.drawRingLabels()
	if len(m.Layers) > 0 {
		total := 0
		for _, n := range counts {
			total += n.found
		}
		if total == 0 {
			d.noteBox([]string{"No features of this section's layers lie within the distance drawn."}, d.panel.Min.X+12, d.panel.Dx()-120,
				func(h int) int { return d.panel.Max.Y - 70 - h })
		}
	}
	return d
}

type ringLabel struct {
	text string
	x, y int
}

// ringLabel queues a ring's label (asked for at x, y: centred on the
// ring's northernmost point) and takes its box: where it would cover a
// mark or another label, it moves round the ring, then outwards. Where no
// place is clear the label is left off (the page's legend or caption
// names every ring's distance) rather than cover a mark.
func (d *drawer) ringLabel(text string, x, y, w int) {
	asc := d.fc.label.Metrics().Ascent.Ceil()
	box := func(x, y int) image.Rectangle { return image.Rect(x-4, y-asc-8, x+w+4, y+10) }
	y += asc
	cy := float64(y - asc/2)
	// The ring's centre and radius in pixels, from the site's box.
	sb := d.siteBox()
	ox, oy := float64(sb.Min.X+sb.Max.X)/2, float64(sb.Min.Y+sb.Max.Y)/2
	r := oy - cy
	// Round the ring first, then (a small ring crowded by its
	// neighbours' labels) farther out along the same directions.
	h := float64(asc + 18)
	for out := 0.0; out < 4; out++ {
		for _, deg := range []float64{0, 35, -35, 70, -70, 110, -110, 145, -145, 180} {
			a := deg * math.Pi / 180
			nx, ny := ox+(r+out*h)*math.Sin(a), oy-(r+out*h)*math.Cos(a)
			bx, by := int(nx)-w/2, int(ny)+asc/2
			if b := box(bx, by); b.In(d.panel) && !d.overlaps(b) {
				d.ringLabels = append(d.ringLabels, ringLabel{text, bx, by})
				d.taken = append(d.taken, b)
				d.ringBoxes = append(d.ringBoxes, b)
				return
			}
		}
	}
}

// siteBox is the site's extent in pixels, padded a little.
func (d *drawer) siteBox() image.Rectangle {
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for p := range geo.Points(d.m.Site) {
		x, y := d.f.px(p)
		minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
	}
	return image.Rect(int(minX)-6, int(minY)-6, int(maxX)+7, int(maxY)+7)
}

type keyMark struct {
	key    int
	x, y   float64
	colour color.NRGBA
}

// keys labels each keyed feature drawn on the map with its number, in a
// box beside its mark: the first of rings of places around the mark that
// overlaps no other label, ring label, furniture or mark, with a leader
// when it stands off. A minor key (a record of the appendix) takes only
// the near places; where none is free its record is keyed in its table
// alone. Nothing is ever printed over a mark or another label.
func (d *drawer) keys() {
	type keyMark struct {
		key    int
		minor  bool
		x, y   float64
		colour color.NRGBA
	}
	var marks []keyMark
	for i, l := range d.m.Layers {
		if l.Outcome != Searched {
			continue
		}
		st := layerStyle(i)
		for j, g := range l.Features {
			if j >= len(l.Keys) || l.Keys[j] <= 0 || g == nil {
				continue
			}
			x, y, ok := d.anchor(g)
			if !ok {
				continue
			}
			marks = append(marks, keyMark{l.Keys[j], j < len(l.Minor) && l.Minor[j], x, y, st.colour})
			// Every other mark of a MultiPoint carries its record's key too,
			// where it fits.
			if mp, ok := g.(orb.MultiPoint); ok {
				for _, p := range mp {
					if !d.f.inside(p) {
						continue
					}
					if px, py := d.f.px(p); px != x || py != y {
						marks = append(marks, keyMark{l.Keys[j], true, px, py, st.colour})
					}
				}
			}
		}
	}
	// Major keys first, each in key order: they get the nearest places.
	slices.SortFunc(marks, func(a, b keyMark) int {
		if a.minor != b.minor {
			if a.minor {
				return 1
			}
			return -1
		}
		return a.key - b.key
	})
	face := d.fc.label
	asc := face.Metrics().Ascent.Ceil()
	h := asc + 8
	for _, mk := range marks {
		text := strconv.Itoa(mk.key)
		w := textWidth(face, text) + 10
		var box image.Rectangle
		placed := false
		dists := []float64{10, 22, 38, 58, 84, 120, 170, 240}
		if mk.minor {
			dists = dists[:3]
		}
		for _, dist := range dists {
			for k := 0; k < 16; k++ {
				a := float64(k) * math.Pi / 8
				cx, cy := mk.x+math.Cos(a)*(dist+float64(w)/2), mk.y-math.Sin(a)*(dist+float64(h)/2)
				b := image.Rect(int(cx)-w/2, int(cy)-h/2, int(cx)-w/2+w, int(cy)-h/2+h)
				if !b.In(d.panel.Inset(4)) || d.overlaps(b) {
					continue
				}
				box, placed = b, true
				break
			}
			if placed {
				break
			}
		}
		if !placed {
			continue
		}
		d.taken = append(d.taken, box)
		d.keyBoxes = append(d.keyBoxes, box)
		// Leader from the mark to the box's nearest point.
		bx := math.Max(float64(box.Min.X), math.Min(mk.x, float64(box.Max.X)))
		by := math.Max(float64(box.Min.Y), math.Min(mk.y, float64(box.Max.Y)))
		if math.Hypot(bx-mk.x, by-mk.y) > 6 {
			lp := newPath()
			lp.addStroke([]float64{mk.x, mk.y, bx, by}, 1.6)
			d.c.fill(lp, textColour, d.panel)
		}
		fillRect(d.c, box, color.White)
		edge := newPath()
		edge.addStroke(append(rectXY(box), float64(box.Min.X), float64(box.Min.Y)), 2.4)
		d.c.fill(edge, mk.colour, d.panel)
		d.c.text(face, text, box.Min.X+5, box.Min.Y+4+asc, textColour)
	}
}

// overlaps: b would cover a taken box or a mark.
func (d *drawer) overlaps(b image.Rectangle) bool {
	for _, t := range d.taken {
		if b.Overlaps(t) {
			return true
		}
	}
	for _, t := range d.marks {
		if b.Overlaps(t) {
			return true
		}
	}
	return false
}

// anchor is where a feature's key points: for points the mark nearest
// the site's centre, else the vertex or edge point nearest it, in pixels;
// false when it falls outside the panel.
func (d *drawer) anchor(g orb.Geometry) (float64, float64, bool) {
	cx, cy := d.f.cx, d.f.cy
	best, bx, by := math.Inf(1), 0.0, 0.0
	consider := func(x, y float64) {
		if !(image.Point{int(x), int(y)}).In(d.panel) {
			return
		}
		if dd := (x-cx)*(x-cx) + (y-cy)*(y-cy); dd < best {
			best, bx, by = dd, x, y
		}
	}
	seg := func(xy []float64) {
		if len(xy) == 2 {
			consider(xy[0], xy[1])
			return
		}
		for i := 0; i+3 < len(xy); i += 2 {
			ax, ay, ex, ey := xy[i], xy[i+1], xy[i+2], xy[i+3]
			dx, dy := ex-ax, ey-ay
			t := 0.0
			if l2 := dx*dx + dy*dy; l2 > 0 {
				t = math.Max(0, math.Min(1, ((cx-ax)*dx+(cy-ay)*dy)/l2))
			}
			consider(ax+t*dx, ay+t*dy)
		}
	}
	switch g := g.(type) {
	case orb.Point, orb.MultiPoint:
		for p := range geo.Points(g) {
			if d.f.inside(p) {
				consider(d.f.px(p))
			}
		}
	case orb.LineString, orb.MultiLineString:
		for _, l := range linesOf(g) {
			for _, xy := range d.f.lines(l) {
				seg(xy)
			}
		}
	default:
		// A polygon over the site is keyed at the site, not at its far edge.
		if geo.PolygonalContains(g, d.f.local.Center()) {
			x, y := d.f.px(d.f.local.Center())
			return x, y, (image.Point{int(x), int(y)}).In(d.panel)
		}
		for _, poly := range polygonsOf(g) {
			for _, r := range d.f.polygon(poly) {
				seg(append(r, r[0], r[1]))
			}
		}
	}
	return bx, by, !math.IsInf(best, 1)
}
