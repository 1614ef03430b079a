package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/paulmach/orb"

	"siteenv/tiles"
)

// Heavy polygons: layers shaped as states publish flood planning and
// bushfire prone land, whose polygons hold thousands to hundreds of
// thousands of vertices (the synthetic layers of layers.go hold tens).
//
// Two layers over a region of about 120 x 120 km of northern NSW:
//
//   - HeavyFloodLayer: 180 meandering river corridors of 1,000-60,000
//     vertices (log-uniform), 15-250 m wide, vertices 1-3 m apart along
//     the banks (so a corridor runs 1-45 km);
//   - HeavyBushfireLayer: 197 star-shaped patches of 2,000-60,000 vertices
//     (log-uniform), 300 m-3 km across, and three of 250,000 vertices,
//     4-8 km across.
//
// About 380 polygons and 6-7 million vertices. Every polygon is simple
// (validated by the tests): a corridor's centreline turns no tighter than
// 240 m, more than its half width, and never turns back (heading within
// 60 degrees of its general direction); a patch's vertices lie at strictly
// increasing angles about its centre. Coordinates are not rounded: at a few
// centimetres between vertices, rounding to 1 cm could fold a ring.
//
// HeavySites draws the query mix the issue describes: 60% points, 40% small
// lots, near the polygons, radius log-uniform 10 m-5 km, one or both
// layers. Everything is a function of the seed.

// Heavy layer ids.
const (
	HeavyFloodLayer    = "heavy_flood_planning"
	HeavyBushfireLayer = "heavy_bushfire_prone"
)

// HeavyLayers lists the heavy layers' ids.
var HeavyLayers = []string{HeavyBushfireLayer, HeavyFloodLayer}

const (
	heavyRivers      = 180
	heavyPatches     = 197
	heavyGiants      = 3
	heavyGiantVerts  = 250_000
	heavyRegionM     = 120_000.0
	heavyStream      = 0x6876 // PCG stream ("hv")
	heavyCentreLon   = 153.0
	heavyCentreLat   = -28.9
	heavySiteMaxFar  = 2500.0 // metres: sites sit up to this far from a vertex
	heavyPointShare  = 0.6
	heavyMinRadiusM  = 10.0
	heavyMaxRadiusM  = 5000.0
	heavyBothLayersP = 0.5
)

// heavyFrame maps metres about the region's centre to CRS84 without
// rounding.
type heavyFrame struct{ lon0, lat0, kx, ky float64 }

func newHeavyFrame() heavyFrame {
	return heavyFrame{lon0: heavyCentreLon, lat0: heavyCentreLat,
		kx: 1 / (mPerDegLonEq * math.Cos(heavyCentreLat*math.Pi/180)), ky: 1 / mPerDegLat}
}

func (f heavyFrame) at(x, y float64) orb.Point {
	return orb.Point{f.lon0 + x*f.kx, f.lat0 + y*f.ky}
}

// logUniform draws from lo..hi, log-uniformly.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return lo * math.Exp(r.Float64()*math.Log(hi/lo))
}

// HeavyFeatureCount is the number of features of a heavy layer (0 for
// another id).
func HeavyFeatureCount(layerID string) int {
	switch layerID {
	case HeavyFloodLayer:
		return heavyRivers
	case HeavyBushfireLayer:
		return heavyPatches + heavyGiants
	}
	return 0
}

// HeavyFeatures yields the features of a heavy layer, one at a time (a
// giant patch is 4 MB of positions; the layer is never held whole).
func HeavyFeatures(seed int64, layerID string, yield func(tiles.Feature) error) error {
	f := newHeavyFrame()
	switch layerID {
	case HeavyFloodLayer:
		r := rand.New(rand.NewPCG(uint64(seed), heavyStream+1))
		for i := range heavyRivers {
			n := int(logUniform(r, 1000, 60_000))
			ring := corridor(r, f, n)
			if err := yield(heavyFeature(fmt.Sprintf("flood-%04d", i), ring, "flood planning area", n)); err != nil {
				return err
			}
		}
		return nil
	case HeavyBushfireLayer:
		r := rand.New(rand.NewPCG(uint64(seed), heavyStream+2))
		for i := range heavyPatches + heavyGiants {
			var n int
			var across float64
			if i < heavyGiants {
				n, across = heavyGiantVerts, 4000+4000*r.Float64()
			} else {
				n, across = int(logUniform(r, 2000, 60_000)), logUniform(r, 300, 3000)
			}
			cx, cy := (r.Float64()-0.5)*heavyRegionM*0.9, (r.Float64()-0.5)*heavyRegionM*0.9
			ring := patch(r, f, cx, cy, across/2, n)
			cat := "vegetation category 1"
			if i%3 == 1 {
				cat = "vegetation buffer"
			}
			if err := yield(heavyFeature(fmt.Sprintf("bushfire-%04d", i), ring, cat, n)); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("synth: %q is not a heavy layer", layerID)
}

func heavyFeature(id string, ring orb.Ring, category string, n int) tiles.Feature {
	return tiles.Feature{ID: id, Geometry: orb.Polygon{ring},
		Properties: map[string]any{"category": category, "vertices": int64(n)}}
}

// corridor is a river corridor of about n vertices: a meandering
// centreline whose banks are offset by a slowly varying half width.
func corridor(r *rand.Rand, f heavyFrame, n int) orb.Ring {
	side := max(n/2, 3)
	step := 1 + 2*r.Float64()
	width := logUniform(r, 15, 250)
	heading := r.Float64() * 2 * math.Pi
	x, y := (r.Float64()-0.5)*heavyRegionM*0.8, (r.Float64()-0.5)*heavyRegionM*0.8
	// Meanders: heading = general + amp sin(2 pi s / wave); the curvature
	// radius wave / (2 pi amp) stays at least 240 m (> 125 m, the largest
	// half width), so the banks never fold.
	amp := 0.3 + 0.75*r.Float64()
	wave := math.Max(1500, 2*math.Pi*amp*240) * (1 + 2*r.Float64())
	phase := r.Float64() * 2 * math.Pi
	wPhase, wWave := r.Float64()*2*math.Pi, 2000+3000*r.Float64()
	left := make([]orb.Point, side)
	right := make([]orb.Point, side)
	s := 0.0
	for i := range side {
		h := heading + amp*math.Sin(2*math.Pi*s/wave+phase)
		// Half width varies by +-30% along the river, slowly.
		hw := width / 2 * (1 + 0.3*math.Sin(2*math.Pi*s/wWave+wPhase))
		sin, cos := math.Sincos(h)
		left[i] = f.at(x-sin*hw, y+cos*hw)
		right[i] = f.at(x+sin*hw, y-cos*hw)
		x, y, s = x+cos*step, y+sin*step, s+step
	}
	ring := make(orb.Ring, 0, 2*side+1)
	ring = append(ring, right...)
	for i := side - 1; i >= 0; i-- {
		ring = append(ring, left[i])
	}
	return append(ring, ring[0])
}

// patch is a star-shaped ring of n vertices about (cx, cy): strictly
// increasing angles, radius radius*(0.35..1) from a few harmonics (lobes
// and spurs following gullies) and a rough edge: a mean-reverting random
// walk whose steps are about twice the spacing of the vertices, so the
// boundary is a few times longer than the smooth outline, as a traced
// vegetation edge is (not a comb of independent radii, whose length would
// grow with the vertex count).
func patch(r *rand.Rand, f heavyFrame, cx, cy, radius float64, n int) orb.Ring {
	var amp, phase [7]float64
	harm := [7]float64{2, 3, 5, 11, 23, 47, 97}
	budget := 0.49
	for k := range amp {
		amp[k] = budget * (0.3 + 0.4*r.Float64())
		budget -= amp[k]
		phase[k] = r.Float64() * 2 * math.Pi
	}
	start := r.Float64() * 2 * math.Pi
	step := 2 * 2 * math.Pi / float64(n) // of the radius: about twice the spacing
	rough := 0.0
	ring := make(orb.Ring, 0, n+1)
	for i := range n {
		t := start + (float64(i)+0.3*(r.Float64()-0.5))*2*math.Pi/float64(n)
		v := 0.0
		for k := range amp {
			v += amp[k] * math.Sin(harm[k]*t+phase[k])
		}
		rough = math.Max(-0.01, math.Min(0.01, 0.995*rough+step*r.NormFloat64()))
		v += rough
		// v lies within -0.5..0.5: rr within 0.36..0.99 of radius.
		rr := radius * (0.675 + 0.62*v)
		ring = append(ring, f.at(cx+rr*math.Cos(t), cy+rr*math.Sin(t)))
	}
	return append(ring, ring[0])
}

// HeavySite is one query of the heavy mix.
type HeavySite struct {
	Geometry orb.Geometry // a Point or a small lot (Polygon)
	RadiusM  float64
	Layers   []string // one or both heavy layers
}

// HeavySites draws n sites near the heavy polygons: each picks a vertex of
// a random polygon and moves up to 2.5 km away from it (so some sites fall
// inside polygons, some in their boxes but outside, some clear of them).
func HeavySites(seed int64, n int) ([]HeavySite, error) {
	// Anchor vertices: a few per polygon, from both layers.
	var anchors []orb.Point
	ar := rand.New(rand.NewPCG(uint64(seed), heavyStream+3))
	for _, id := range HeavyLayers {
		err := HeavyFeatures(seed, id, func(ft tiles.Feature) error {
			ring := ft.Geometry.(orb.Polygon)[0]
			for range 4 {
				anchors = append(anchors, ring[ar.IntN(len(ring)-1)])
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	r := rand.New(rand.NewPCG(uint64(seed), heavyStream+4))
	sites := make([]HeavySite, n)
	for i := range sites {
		a := anchors[r.IntN(len(anchors))]
		d := heavySiteMaxFar * r.Float64() * r.Float64() // nearer more often
		dir := r.Float64() * 2 * math.Pi
		lf := heavyFrame{lon0: a[0], lat0: a[1], kx: 1 / (mPerDegLonEq * math.Cos(a[1]*math.Pi/180)), ky: 1 / mPerDegLat}
		x, y := d*math.Cos(dir), d*math.Sin(dir)
		var g orb.Geometry
		if r.Float64() < heavyPointShare {
			g = lf.at(x, y)
		} else {
			// A small lot: a rotated rectangle of 15-60 m by 20-80 m.
			w, h := 15+45*r.Float64(), 20+60*r.Float64()
			rot := r.Float64() * math.Pi
			sin, cos := math.Sincos(rot)
			ring := make(orb.Ring, 0, 5)
			for _, c := range [][2]float64{{-1, -1}, {1, -1}, {1, 1}, {-1, 1}, {-1, -1}} {
				u, v := c[0]*w/2, c[1]*h/2
				ring = append(ring, lf.at(x+u*cos-v*sin, y+u*sin+v*cos))
			}
			g = orb.Polygon{ring}
		}
		layers := []string{HeavyLayers[r.IntN(2)]}
		if r.Float64() < heavyBothLayersP {
			layers = HeavyLayers
		}
		sites[i] = HeavySite{Geometry: g, RadiusM: logUniform(r, heavyMinRadiusM, heavyMaxRadiusM), Layers: layers}
	}
	return sites, nil
}
