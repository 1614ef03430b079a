package report

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"sync"

	"golang.org/x/image/vector"
)

// path is a set of closed sub-paths in pixel coordinates of the canvas,
// filled as a union: every sub-path is added with a positive orientation so
// that overlapping shapes (stroke pieces, markers, buffer discs) add up and
// clamp instead of cancelling. Polygon holes are the one exception: they
// are added with the opposite orientation of their shell (addPolygon).
//
// The rasteriser's cost is the area it covers, so a path tracks its bounds
// and is rasterised over those alone.
type path struct {
	// sink, when set, receives the path whenever it grows past
	// maxPathPoints, so a layer of 100,000 features never holds all its
	// pixel geometry at once (see canvas.layerFill).
	sink func(*path)
	pts  []float32 // x, y pairs
	// scratch for the vertices of a disc
	scratch []float64
	ends    []int // end index (in pts) of each sub-path
	minX    float32
	minY    float32
	maxX    float32
	maxY    float32
	empty   bool
}

func newPath() *path { return &path{empty: true} }

func (p *path) reset() {
	p.pts, p.ends, p.empty = p.pts[:0], p.ends[:0], true
}

func (p *path) grow(x, y float32) {
	if p.empty {
		p.minX, p.minY, p.maxX, p.maxY, p.empty = x, y, x, y, false
		return
	}
	p.minX, p.minY = min(p.minX, x), min(p.minY, y)
	p.maxX, p.maxY = max(p.maxX, x), max(p.maxY, y)
}

// addRing adds a closed ring of points (x, y); positive orients it so that
// its signed area is positive (negative: negative).
func (p *path) addRing(xy []float64, positive bool) {
	n := len(xy) / 2
	if n < 3 {
		return
	}
	reverse := (signedArea(xy) > 0) != positive
	for i := 0; i < n; i++ {
		j := i
		if reverse {
			j = n - 1 - i
		}
		x, y := float32(xy[2*j]), float32(xy[2*j+1])
		p.pts = append(p.pts, x, y)
		p.grow(x, y)
	}
	p.ends = append(p.ends, len(p.pts))
	if p.sink != nil && len(p.pts) > maxPathPoints {
		p.sink(p)
		p.reset()
	}
}

// maxPathPoints bounds a sinking path's buffer (2 x 4 bytes a point).
const maxPathPoints = 1 << 18

// addPolygon adds a shell and its holes (rings of x, y pairs).
func (p *path) addPolygon(rings [][]float64) {
	for i, r := range rings {
		p.addRing(r, i == 0)
	}
}

func signedArea(xy []float64) float64 {
	n := len(xy) / 2
	var a float64
	for i := 0; i < n; i++ {
		j := (i + 1) % n
		a += xy[2*i]*xy[2*j+1] - xy[2*j]*xy[2*i+1]
	}
	return a / 2
}

// addDisc adds a circle of radius r about (x, y) as a polygon whose chords
// stay within a tenth of a pixel of the circle.
func (p *path) addDisc(x, y, r float64) {
	unit := unitCircle(discSegments(r))
	xy := p.scratch[:0]
	for i := 0; i < len(unit); i += 2 {
		xy = append(xy, x+r*unit[i], y+r*unit[i+1])
	}
	p.scratch = xy
	p.addRing(xy, true)
}

// unitCircles caches the vertices of unit circles by segment count (a
// dense point layer draws the same few marker sizes 100,000 times).
var unitCircles sync.Map // int -> []float64

func unitCircle(n int) []float64 {
	if v, ok := unitCircles.Load(n); ok {
		return v.([]float64)
	}
	xy := make([]float64, 0, 2*n)
	for i := 0; i < n; i++ {
		a := 2 * math.Pi * float64(i) / float64(n)
		xy = append(xy, math.Cos(a), math.Sin(a))
	}
	v, _ := unitCircles.LoadOrStore(n, xy)
	return v.([]float64)
}

func discSegments(r float64) int {
	if r <= 1.5 {
		return 6
	}
	n := int(math.Ceil(math.Pi / math.Acos(max(1-0.1/r, -1))))
	return min(max(n, 8), 720)
}

// addSegment adds the rectangle of half-width hw around segment a-b (a
// stroke piece without caps).
func (p *path) addSegment(ax, ay, bx, by, hw float64) {
	dx, dy := bx-ax, by-ay
	l := math.Hypot(dx, dy)
	if l == 0 {
		return
	}
	nx, ny := -dy/l*hw, dx/l*hw
	p.addRing([]float64{ax + nx, ay + ny, bx + nx, by + ny, bx - nx, by - ny, ax - nx, ay - ny}, true)
}

// addStroke adds a polyline of width w with round joins and caps. A closed
// ring repeats its first point last.
func (p *path) addStroke(xy []float64, w float64) {
	hw := w / 2
	n := len(xy) / 2
	for i := 0; i+1 < n; i++ {
		p.addSegment(xy[2*i], xy[2*i+1], xy[2*i+2], xy[2*i+3], hw)
	}
	if w < 2.5 {
		// Joins of thin lines are about a pixel: the segments alone read
		// as one line, at a fraction of the discs' cost.
		return
	}
	for i := 0; i < n; i++ {
		p.addDisc(xy[2*i], xy[2*i+1], hw)
	}
}

// canvas is the image being drawn with one reusable rasteriser and mask.
type canvas struct {
	img  *image.RGBA
	z    vector.Rasterizer
	mbuf []byte
}

func newCanvas(w, h int) *canvas {
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, w, h))}
	draw.Draw(c.img, c.img.Bounds(), image.White, image.Point{}, draw.Src)
	return c
}

// bounds is the pixel rectangle p covers, clipped.
func (p *path) bounds(clip image.Rectangle) image.Rectangle {
	if p.empty {
		return image.Rectangle{}
	}
	return image.Rect(int(math.Floor(float64(p.minX)))-1, int(math.Floor(float64(p.minY)))-1,
		int(math.Ceil(float64(p.maxX)))+1, int(math.Ceil(float64(p.maxY)))+1).Intersect(clip)
}

// raster rasterises p over r into a mask the size of r (valid until the
// next call). The rasteriser's Alpha fast path (SIMD accumulation straight
// into the mask) needs the mask and the rasteriser to share bounds, so the
// mask is at the origin and r.Min is subtracted from the coordinates.
func (c *canvas) raster(p *path, r image.Rectangle) *image.Alpha {
	w, h := r.Dx(), r.Dy()
	if cap(c.mbuf) < w*h {
		c.mbuf = make([]byte, w*h)
	}
	m := &image.Alpha{Pix: c.mbuf[:w*h], Stride: w, Rect: image.Rect(0, 0, w, h)}
	ox, oy := float32(r.Min.X), float32(r.Min.Y)
	c.z.Reset(w, h)
	c.z.DrawOp = draw.Src
	start := 0
	for _, end := range p.ends {
		c.z.MoveTo(p.pts[start]-ox, p.pts[start+1]-oy)
		for i := start + 2; i < end; i += 2 {
			c.z.LineTo(p.pts[i]-ox, p.pts[i+1]-oy)
		}
		c.z.ClosePath()
		start = end
	}
	c.z.Draw(m, m.Rect, image.Opaque, image.Point{})
	return m
}

// fill draws p in colour col, clipped to clip.
func (c *canvas) fill(p *path, col color.Color, clip image.Rectangle) {
	r := p.bounds(clip)
	if r.Empty() {
		return
	}
	c.compose(c.raster(p, r), r.Min, col)
}

// compose paints col through mask m placed at 'at', visiting only the
// pixels the mask covers (a layer's markers cover a sliver of the panel).
func (c *canvas) compose(m *image.Alpha, at image.Point, col color.Color) {
	sr, sg, sb, sa := col.RGBA()
	w, h := m.Rect.Dx(), m.Rect.Dy()
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+w]
		base := c.img.PixOffset(at.X, at.Y+y)
		for x, a8 := range row {
			if a8 == 0 {
				continue
			}
			i := base + 4*x
			pix := c.img.Pix[i : i+4 : i+4]
			ma := uint32(a8) * 0x101
			if ma == 0xffff && sa == 0xffff {
				pix[0], pix[1], pix[2], pix[3] = uint8(sr>>8), uint8(sg>>8), uint8(sb>>8), 0xff
				continue
			}
			a := 0xffff - sa*ma/0xffff
			pix[0] = uint8((uint32(pix[0])*0x101*a + sr*ma) / 0xffff >> 8)
			pix[1] = uint8((uint32(pix[1])*0x101*a + sg*ma) / 0xffff >> 8)
			pix[2] = uint8((uint32(pix[2])*0x101*a + sb*ma) / 0xffff >> 8)
			pix[3] = uint8((uint32(pix[3])*0x101*a + sa*ma) / 0xffff >> 8)
		}
	}
}

// layerFill is a fill whose path may be drawn in parts: each part's
// coverage is merged (max) into one mask over clip, painted once at the
// end, so overlapping translucent features blend once as a union, however
// the parts fall.
type layerFill struct {
	c    *canvas
	clip image.Rectangle
	acc  *image.Alpha
	p    *path
}

func (c *canvas) newLayerFill(clip image.Rectangle) *layerFill {
	lf := &layerFill{c: c, clip: clip, p: newPath()}
	lf.p.sink = lf.merge
	return lf
}

func (lf *layerFill) merge(p *path) {
	r := p.bounds(lf.clip)
	if r.Empty() {
		return
	}
	if lf.acc == nil {
		lf.acc = image.NewAlpha(lf.clip)
	}
	m := lf.c.raster(p, r)
	for y := 0; y < r.Dy(); y++ {
		src := m.Pix[y*m.Stride : y*m.Stride+r.Dx()]
		dst := lf.acc.Pix[lf.acc.PixOffset(r.Min.X, r.Min.Y+y):]
		for x, v := range src {
			if v > dst[x] {
				dst[x] = v
			}
		}
	}
}

// paint draws what was added in col.
func (lf *layerFill) paint(col color.Color) {
	if lf.acc == nil {
		// Never spilled: one ordinary fill.
		lf.c.fill(lf.p, col, lf.clip)
		return
	}
	lf.merge(lf.p)
	lf.p.reset()
	lf.c.compose(lf.acc, lf.clip.Min, col)
}

// mask rasterises p into a new alpha mask covering r (p's coordinates are
// canvas pixels).
func (c *canvas) mask(p *path, r image.Rectangle) *image.Alpha {
	m := image.NewAlpha(r)
	pr := p.bounds(r)
	if pr.Empty() {
		return m
	}
	src := c.raster(p, pr)
	for y := 0; y < pr.Dy(); y++ {
		copy(m.Pix[m.PixOffset(pr.Min.X, pr.Min.Y+y):], src.Pix[y*src.Stride:y*src.Stride+pr.Dx()])
	}
	return m
}

// paintMask composes col through m.
func (c *canvas) paintMask(m *image.Alpha, col color.Color) {
	c.compose(m, m.Rect.Min, col)
}

// rgba is a colour with alpha a (0..1) over its straight components.
func rgba(r, g, b uint8, a float64) color.NRGBA {
	return color.NRGBA{R: r, G: g, B: b, A: uint8(math.Round(a * 255))}
}
