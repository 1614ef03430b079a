package report

import (
	"math"
	"slices"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/clip"

	"siteenv/geo"
)

// frame maps CRS84 to canvas pixels: the site-centred azimuthal equidistant
// projection (geo.Local: true distances from the site, north up at the
// site), scaled to fit the search area into the map panel.
//
// Geometry is clipped in longitude and latitude to a box a little larger
// than the panel before it is projected (a catchment polygon that holds the
// site may reach hundreds of kilometres away), then simplified to the pixel
// grid as it is projected: a vertex closer than minStep pixels to the last
// one kept is dropped, so a 100,000-vertex polygon costs what its outline
// in pixels costs.
type frame struct {
	local geo.Local
	scale float64 // pixels per metre
	// merc: the frame is Web Mercator (mercatorFrame) at mscale pixels
	// per Mercator metre, not geo.Local.
	merc   bool
	mscale float64
	xc, yc float64 // projected metres at the panel's centre
	cx, cy float64 // the panel's centre in canvas pixels
	ll     orb.Bound
	// scratch for clipping (clip works in place)
	tmp []orb.Point
	// scratch rings of polygon (valid until its next call)
	rings [][]float64
}

// minStep is the simplification step in pixels.
const minStep = 0.35

func (f *frame) px(p orb.Point) (float64, float64) {
	if f.merc {
		x, y := mercator(p)
		return f.cx + (x-f.xc)*f.mscale, f.cy - (y-f.yc)*f.mscale
	}
	x, y := f.local.Forward(p)
	return f.cx + (x-f.xc)*f.scale, f.cy - (y-f.yc)*f.scale
}

// project appends the pixel coordinates of pts to out, simplified to the
// grid. A closed ring keeps its closing point.
func (f *frame) project(pts []orb.Point, out []float64) []float64 {
	start := len(out)
	var lx, ly float64
	for i, p := range pts {
		x, y := f.px(p)
		if i > 0 && i < len(pts)-1 && math.Abs(x-lx) < minStep && math.Abs(y-ly) < minStep {
			continue
		}
		if i == len(pts)-1 && len(out) > start && x == lx && y == ly {
			continue
		}
		out = append(out, x, y)
		lx, ly = x, y
	}
	return out
}

// clipRing returns the part of r inside the frame's box (r itself when it
// lies inside; r is never modified).
func (f *frame) clipRing(r orb.Ring) orb.Ring {
	b := r.Bound()
	if f.ll.Contains(b.Min) && f.ll.Contains(b.Max) {
		return r
	}
	if !f.ll.Intersects(b) {
		return nil
	}
	f.tmp = append(f.tmp[:0], r...)
	return clip.Ring(f.ll, orb.Ring(f.tmp))
}

// polygon returns the pixel rings of a polygon inside the frame (nil when
// it lies outside), each ring's x, y pairs. The rings are scratch space,
// valid until the next call.
func (f *frame) polygon(p orb.Polygon) [][]float64 {
	out := f.rings[:0]
	defer func() { f.rings = out[:0] }()
	for i, r := range p {
		c := f.clipRing(r)
		if len(c) < 3 {
			if i == 0 {
				return nil
			}
			continue
		}
		var buf []float64
		if len(out) < cap(out) {
			buf = out[:len(out)+1][len(out)][:0]
		}
		xy := f.project(c, buf)
		if len(xy) < 6 {
			if i == 0 {
				// Smaller than the grid: keep a degenerate shell so the
				// caller can draw it as a marker.
				x, y := f.px(c[0])
				return [][]float64{{x, y}}
			}
			continue
		}
		out = append(out, xy)
	}
	return out
}

// lines returns the pixel polylines of a line string inside the frame.
func (f *frame) lines(ls orb.LineString) [][]float64 {
	b := ls.Bound()
	if f.ll.Contains(b.Min) && f.ll.Contains(b.Max) {
		return [][]float64{f.project(ls, nil)}
	}
	if !f.ll.Intersects(b) {
		return nil
	}
	var out [][]float64
	for _, part := range clip.LineString(f.ll, slices.Clone(ls)) {
		out = append(out, f.project(part, nil))
	}
	return out
}

// inside reports whether the point lies in the frame's box.
func (f *frame) inside(p orb.Point) bool { return f.ll.Contains(p) }
