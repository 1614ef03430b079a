package report

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"math"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// BasemapPNG draws bm's land use, water, roads and place names for the box
// b (lon/lat) on a w×h PNG in Web Mercator, with the archive's attribution
// at the bottom right: the ground a browser map (the review page) lays its
// own features over. Outside the archive's tiles the image is plain ground.
func BasemapPNG(bm Basemap, b orb.Bound, w, h int) ([]byte, error) {
	if bm == nil || w <= 0 || h <= 0 || !(b.Min[0] < b.Max[0]) || !(b.Min[1] < b.Max[1]) {
		return nil, fmt.Errorf("%w: basemap image of %v at %dx%d", ErrInvalidMap, b, w, h)
	}
	panel := image.Rect(0, 0, w, h)
	c := newCanvas(w, h)
	draw.Draw(c.img, panel, image.NewUniform(landColour), image.Point{}, draw.Src)
	fc := newFaces(1)
	defer fc.close()
	d := &drawer{c: c, f: mercatorFrame(b, panel), fc: fc, m: Map{Basemap: bm}, panel: panel}
	if d.vectorBasemap() {
		if a := bm.Attribution(); a != "" {
			tw := textWidth(fc.small, a)
			d.c.haloText(fc.small, a, w-tw-6, h-6, mutedColour)
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, c.img); err != nil {
		return nil, fmt.Errorf("report: encode basemap: %w", err)
	}
	return buf.Bytes(), nil
}

// mercatorFrame maps b onto panel in spherical Web Mercator, as the
// browser maps do, scaled by its width. scale stays pixels per ground metre
// at the centre, which is what picks the basemap's zoom.
func mercatorFrame(b orb.Bound, panel image.Rectangle) *frame {
	clampLat := func(lat float64) float64 { return max(-85.05, min(85.05, lat)) }
	b.Min[1], b.Max[1] = clampLat(b.Min[1]), clampLat(b.Max[1])
	x0, y0 := mercator(b.Min)
	x1, y1 := mercator(b.Max)
	centre := b.Center()
	f := &frame{local: geo.NewLocal(centre), merc: true}
	f.mscale = float64(panel.Dx()) / (x1 - x0)
	f.scale = f.mscale / math.Cos(centre[1]*math.Pi/180)
	f.xc, f.yc = (x0+x1)/2, (y0+y1)/2
	f.cx, f.cy = float64(panel.Min.X)+float64(panel.Dx())/2, float64(panel.Min.Y)+float64(panel.Dy())/2
	// Clip a little outside the image so strokes reach its edges.
	mx, my := (b.Max[0]-b.Min[0])*0.05, (b.Max[1]-b.Min[1])*0.05
	f.ll = orb.Bound{Min: orb.Point{b.Min[0] - mx, clampLat(b.Min[1] - my)}, Max: orb.Point{b.Max[0] + mx, clampLat(b.Max[1] + my)}}
	return f
}

// mercator is spherical Web Mercator (EPSG:3857) in metres.
func mercator(p orb.Point) (float64, float64) {
	const r = 6378137.0
	lat := max(-85.05, min(85.05, p[1])) * math.Pi / 180
	return r * p[0] * math.Pi / 180, r * math.Log(math.Tan(math.Pi/4+lat/2))
}
