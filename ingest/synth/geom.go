package synth

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/paulmach/orb"
)

// coordScale rounds generated coordinates to 1e-7 degrees (about 1 cm).
const coordScale = 1e7

func roundCoord(v float64) float64 { return math.Round(v*coordScale) / coordScale }

// frame is a local plane around an origin: x east and y north in metres,
// optionally rotated by an angle. The map to degrees is affine with a
// positive determinant, so it keeps orientation: a counter-clockwise ring
// in metres is counter-clockwise in degrees.
type frame struct {
	lon0, lat0 float64
	kx, ky     float64 // degrees per metre east, north
	cos, sin   float64 // rotation
}

func newFrame(lon, lat, angle float64) frame {
	return frame{
		lon0: lon, lat0: lat,
		kx:  1 / (mPerDegLonEq * math.Cos(lat*math.Pi/180)),
		ky:  1 / mPerDegLat,
		cos: math.Cos(angle), sin: math.Sin(angle),
	}
}

// at converts local metres to a rounded CRS84 position.
func (f frame) at(x, y float64) orb.Point {
	e := x*f.cos - y*f.sin
	n := x*f.sin + y*f.cos
	return orb.Point{roundCoord(f.lon0 + e*f.kx), roundCoord(f.lat0 + n*f.ky)}
}

// metres returns the local offset of p from the frame's origin, unrotated
// (east, north).
func (f frame) metres(p orb.Point) (float64, float64) {
	return (p[0] - f.lon0) / f.kx, (p[1] - f.lat0) / f.ky
}

// offset moves p by (east, north) metres.
func offset(p orb.Point, east, north float64) orb.Point {
	return orb.Point{p[0] + east/(mPerDegLonEq*math.Cos(p[1]*math.Pi/180)), p[1] + north/mPerDegLat}
}

// starRing is a simple closed ring around centre (metres in frame f): its
// vertices lie at strictly increasing angles with radius r(θ) =
// radius·(1 + Σ smooth harmonics + small noise), always between 0.3 and 1.7
// times radius, so the ring is star-shaped about the centre and never
// touches itself. It returns the ring counter-clockwise (or clockwise when
// cw), its area in square metres and its smallest vertex radius.
func starRing(r *rand.Rand, f frame, cx, cy, radius float64, n int, roughness float64, cw bool) (orb.Ring, float64, float64) {
	var amp [4]float64
	var phase [4]float64
	budget := 0.6 * roughness
	for k := range amp {
		amp[k] = budget * r.Float64() * 0.5
		budget -= amp[k]
		phase[k] = r.Float64() * 2 * math.Pi
	}
	harm := [4]float64{1, 2, 3, 5}
	start := r.Float64() * 2 * math.Pi
	ring := make(orb.Ring, n+1)
	xs := make([]float64, n)
	ys := make([]float64, n)
	minR := math.Inf(1)
	for i := 0; i < n; i++ {
		// Jitter the angles a little but keep them strictly increasing.
		t := start + (float64(i)+0.35*(r.Float64()-0.5))*2*math.Pi/float64(n)
		rr := 1.0
		for k := range amp {
			rr += amp[k] * math.Sin(harm[k]*t+phase[k])
		}
		rr += 0.08 * roughness * (r.Float64() - 0.5)
		rr *= radius
		minR = math.Min(minR, rr)
		xs[i], ys[i] = cx+rr*math.Cos(t), cy+rr*math.Sin(t)
	}
	area := 0.0
	for i := 0; i < n; i++ {
		j := (i + 1) % n
		area += xs[i]*ys[j] - xs[j]*ys[i]
	}
	for i := 0; i < n; i++ {
		k := i
		if cw {
			k = n - 1 - i
		}
		ring[i] = f.at(xs[k], ys[k])
	}
	ring[n] = ring[0]
	return ring, math.Abs(area) / 2, minR
}

// meander is a watercourse: a polyline from start whose heading wanders
// smoothly within 70° of its general direction, so it always advances along
// that direction and never crosses itself. It stops early when keep
// returns false for the next vertex. It returns the line and its length
// in metres.
func meander(r *rand.Rand, start orb.Point, heading, step float64, n int, keep func(orb.Point) bool) (orb.LineString, float64) {
	ls := make(orb.LineString, 0, n)
	p := orb.Point{roundCoord(start[0]), roundCoord(start[1])}
	ls = append(ls, p)
	amp := between(r, 0.3, 1.1)
	freq := between(r, 0.15, 0.6)
	phase := r.Float64() * 2 * math.Pi
	drift := 0.0
	length := 0.0
	kx := 1 / (mPerDegLonEq * math.Cos(start[1]*math.Pi/180))
	for i := 1; i < n; i++ {
		drift = 0.85*drift + 0.25*r.NormFloat64()
		a := amp*math.Sin(freq*float64(i)+phase) + drift
		a = math.Max(-1.2, math.Min(1.2, a)) // ±69°
		s := step * between(r, 0.6, 1.4)
		h := heading + a
		sin, cos := math.Sincos(h)
		q := orb.Point{roundCoord(p[0] + s*cos*kx), roundCoord(p[1] + s*sin/mPerDegLat)}
		if keep != nil && !keep(q) {
			break
		}
		if q == p {
			continue
		}
		ls = append(ls, q)
		p = q
		length += s
	}
	return ls, length
}

// convexHull returns the convex hull of pts as a closed counter-clockwise
// ring (Andrew's monotone chain). pts is reordered.
func convexHull(pts []orb.Point) orb.Ring {
	sort.Slice(pts, func(i, j int) bool {
		if pts[i][0] != pts[j][0] {
			return pts[i][0] < pts[j][0]
		}
		return pts[i][1] < pts[j][1]
	})
	cross := func(o, a, b orb.Point) float64 {
		return (a[0]-o[0])*(b[1]-o[1]) - (a[1]-o[1])*(b[0]-o[0])
	}
	h := make([]orb.Point, 0, 2*len(pts))
	for _, p := range pts {
		for len(h) >= 2 && cross(h[len(h)-2], h[len(h)-1], p) <= 0 {
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	lower := len(h) + 1
	for i := len(pts) - 2; i >= 0; i-- {
		p := pts[i]
		for len(h) >= lower && cross(h[len(h)-2], h[len(h)-1], p) <= 0 {
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	// h ends with its first point repeated: a closed ring.
	return orb.Ring(h)
}

// bufferedHull is the convex hull of pts grown by buffer degrees (the hull
// of 24-gons around each hull vertex), rounded to 1e-5 degrees: a valid,
// counter-clockwise coverage polygon.
func bufferedHull(pts []orb.Point, buffer float64) orb.Polygon {
	h := convexHull(pts)
	grown := make([]orb.Point, 0, 24*len(h))
	for _, p := range h[:len(h)-1] {
		for k := 0; k < 24; k++ {
			a := float64(k) * 2 * math.Pi / 24
			grown = append(grown, orb.Point{p[0] + buffer*math.Cos(a), p[1] + buffer*math.Sin(a)})
		}
	}
	for i := range grown {
		grown[i] = orb.Point{math.Round(grown[i][0]*1e5) / 1e5, math.Round(grown[i][1]*1e5) / 1e5}
	}
	return orb.Polygon{convexHull(grown)}
}

// inConvex reports whether p lies inside (or on) the closed
// counter-clockwise convex ring, in O(log n): a binary search for the
// wedge of the fan from ring[0] that holds p.
func inConvex(ring orb.Ring, p orb.Point) bool {
	n := len(ring) - 1 // distinct vertices
	if n < 3 {
		return false
	}
	cross := func(o, a, b orb.Point) float64 {
		return (a[0]-o[0])*(b[1]-o[1]) - (a[1]-o[1])*(b[0]-o[0])
	}
	v0 := ring[0]
	if cross(v0, ring[1], p) < 0 || cross(v0, ring[n-1], p) > 0 {
		return false
	}
	lo, hi := 1, n-1 // cross(v0, ring[lo], p) >= 0 > cross(v0, ring[hi], p) or hi == n-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if cross(v0, ring[mid], p) >= 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return cross(ring[lo], ring[lo+1], p) >= 0
}
