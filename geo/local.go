package geo

import (
	"math"
	"sync"

	"github.com/paulmach/orb"
)

// Local is a site-centred metric projection for the query engine: the
// azimuthal equidistant projection on the ellipsoid about a centre. A
// point's planar coordinates (x east, y north, metres) have the direction of
// the geodesic from the centre and its exact length, so
//
//   - distances from the centre are geodesic distances;
//   - distances between a point near the centre (within the ~1 km of a
//     site) and a point up to 12 km away match the geodesic distance to
//     well under 0.1 mm;
//   - in general the planar distance d between two points exceeds the
//     geodesic one by about d*h^2/(6 R^2), h the distance from the centre to
//     the line through them, R the Earth's radius: at most ~5.5 mm for two
//     points within 12 km of the centre (d*h^2 peaks at 0.77*r^3). ErrorBound
//     gives a safe bound for any pair.
//
// Recipe for an exact radius test of feature geometry against a site (the
// engine's "within r metres"): project both, compute the planar distance d
// (point, segment or polygon distance in the plane), and with e the
// ErrorBound of the two closest points: d+e <= r is inside, d-e > r is
// outside, and only the rare pairs in between need the exact Distance of the
// two closest points (the planar closest points are within a fraction of a
// millimetre of the true ones, which changes distances only to second order).
//
// Speed: within 16 km of the centre Forward and Inverse evaluate tensor
// Chebyshev fits of the exact projection (error far below a micrometre;
// Forward's in power form, about 12 ns);
// farther out, or within 1 degree of a pole, they solve the geodesic problem
// exactly (slower, still exact). Inverse builds its fit on first use.
//
// A Local is immutable and safe for concurrent use; it is small and meant to
// be passed by value. The zero Local is centred on (0, 0) and always takes
// the exact path.
type Local struct {
	center orb.Point
	t      *localFit
}

// localHalfWidth is the half-width in metres of the square around the
// centre covered by the fitted tables: a site of ~1 km, a 10 km radius and
// a margin.
const localHalfWidth = 16000

// localN is the number of Chebyshev nodes per axis (polynomial degree
// localN-1 in each variable). Over ±16 km the coefficients fall by about a
// factor 400 per degree; with degree 4 the fit agrees with the exact
// projection to a few nanometres (the tests measure it; degree 3 is off by
// micrometres), at 25 geodesic solutions per NewLocal.
const localN = 5

type localFit struct {
	dLat, dLon float64 // half-widths of the fitted box, degrees
	// their reciprocals: Forward multiplies (a division costs several times
	// as much, on every projected position)
	invDLat, invDLon float64

	fx, fy cheb2 // x, y as functions of (dLat/dLat_max, dLon/dLon_max)
	// px, py are fx, fy in powers of u and v, which Forward evaluates by
	// Horner's rule: 48 multiply-adds, no basis values (the Chebyshev form
	// takes about 70 operations).
	px, py poly2

	invOnce    sync.Once
	gLat, gLon cheb2 // dLat, dLon as functions of (x/h, y/h), h = localHalfWidth
	lat0       float64
}

// cheb2 holds the coefficients c[k][l] of sum c[k][l] T_k(u) T_l(v).
type cheb2 [localN][localN]float64

// poly2 holds the coefficients c[i][j] of sum c[i][j] u^i v^j.
type poly2 [localN][localN]float64

// powers returns c in powers of u and v. The coefficients of the Chebyshev
// polynomials are small integers and the fits' terms fall fast, so the
// conversion changes the result by rounding only (about 1e-11 m here).
func (c *cheb2) powers() poly2 {
	// T_k(x) = sum_j m[k][j] x^j, from T_k = 2x T_{k-1} - T_{k-2}.
	var m [localN][localN]float64
	m[0][0], m[1][1] = 1, 1
	for k := 2; k < localN; k++ {
		for j := range localN {
			m[k][j] = -m[k-2][j]
			if j > 0 {
				m[k][j] += 2 * m[k-1][j-1]
			}
		}
	}
	var p poly2
	for i := range localN {
		for j := range localN {
			var s float64
			for k := range localN {
				for l := range localN {
					s += c[k][l] * m[k][i] * m[l][j]
				}
			}
			p[i][j] = s
		}
	}
	return p
}

// horner2 evaluates two polynomials at (u, v).
func horner2(a, b *poly2, u, v float64) (float64, float64) {
	var sa, sb float64
	for i := localN - 1; i >= 0; i-- {
		ra, rb := a[i][localN-1], b[i][localN-1]
		for j := localN - 2; j >= 0; j-- {
			ra = ra*v + a[i][j]
			rb = rb*v + b[i][j]
		}
		sa = sa*u + ra
		sb = sb*u + rb
	}
	return sa, sb
}

// NewLocal returns the site-centred projection about center (longitude,
// latitude in degrees). It costs 25 geodesic solutions (tens of
// microseconds); Inverse's tables cost as much again on first use.
func NewLocal(center orb.Point) Local {
	l := Local{center: center}
	lat0 := center[1]
	if math.Abs(lat0) > 89 || !finite(lat0) || !finite(center[0]) {
		return l
	}
	// Radii of curvature at the centre (WGS 84) to size the box in degrees.
	a, f := ellipsoid.Radius(), ellipsoid.Flattening()
	e2 := f * (2 - f)
	s := math.Sin(lat0 * deg)
	w := math.Sqrt(1 - e2*s*s)
	m := a * (1 - e2) / (w * w * w)
	n := a / w
	t := &localFit{
		dLat: localHalfWidth / m / deg,
		dLon: localHalfWidth / (n * math.Cos(lat0*deg)) / deg,
		lat0: lat0,
	}
	t.invDLat, t.invDLon = 1/t.dLat, 1/t.dLon
	// Fitted about longitude 0, so that the tables depend on the latitude
	// alone, bit for bit (see At).
	l0 := Local{center: orb.Point{0, lat0}}
	var vx, vy [localN][localN]float64
	nodes := chebNodes()
	for i, u := range nodes {
		for j, v := range nodes {
			vx[i][j], vy[i][j] = l0.exactForward(orb.Point{v * t.dLon, lat0 + u*t.dLat})
		}
	}
	t.fx, t.fy = chebFit(&vx), chebFit(&vy)
	t.px, t.py = t.fx.powers(), t.fy.powers()
	l.t = t
	return l
}

// At returns the projection about (lon, the same latitude) without a new
// fit: the ellipsoid is symmetric about its axis, so the fitted tables
// depend only on the centre's latitude and are shared.
func (l Local) At(lon float64) Local {
	return Local{center: orb.Point{lon, l.center[1]}, t: l.t}
}

// Center returns the centre of the projection.
func (l Local) Center() orb.Point { return l.center }

// Forward projects p (longitude, latitude in degrees) to x east, y north
// in metres from the centre.
func (l Local) Forward(p orb.Point) (x, y float64) {
	if t := l.t; t != nil {
		dlon := p[0] - l.center[0]
		if dlon > 180 {
			dlon -= 360
		} else if dlon < -180 {
			dlon += 360
		}
		u, v := (p[1]-l.center[1])*t.invDLat, dlon*t.invDLon
		if math.Abs(u) <= 1 && math.Abs(v) <= 1 {
			return horner2(&t.px, &t.py, u, v)
		}
	}
	return l.exactForward(p)
}

// Fitted reports whether Forward evaluates p with the fitted tables (p is
// within about 16 km of the centre) rather than solving the geodesic
// problem.
func (l Local) Fitted(p orb.Point) bool {
	t := l.t
	if t == nil {
		return false
	}
	dlon := p[0] - l.center[0]
	if dlon > 180 {
		dlon -= 360
	} else if dlon < -180 {
		dlon += 360
	}
	return math.Abs(p[1]-l.center[1]) <= t.dLat && math.Abs(dlon) <= t.dLon
}

// FittedBound reports whether every point of b is Fitted: the fitted
// region is a box in latitude and longitude, so b's corners decide.
func (l Local) FittedBound(b orb.Bound) bool {
	return l.Fitted(b.Min) && l.Fitted(b.Max)
}

// ForwardPoint is Forward returning an orb.Point{x, y}.
func (l Local) ForwardPoint(p orb.Point) orb.Point {
	x, y := l.Forward(p)
	return orb.Point{x, y}
}

// Inverse returns the longitude, latitude in degrees of planar x, y.
func (l Local) Inverse(x, y float64) orb.Point {
	if t := l.t; t != nil {
		u, v := x/localHalfWidth, y/localHalfWidth
		if math.Abs(u) <= 1 && math.Abs(v) <= 1 {
			t.invOnce.Do(t.fitInverse)
			var tu, tv [localN]float64
			chebBasis(u, &tu)
			chebBasis(v, &tv)
			dlat, dlon := eval2(&t.gLat, &t.gLon, &tu, &tv)
			lon := l.center[0] + dlon
			if lon > 180 {
				lon -= 360
			} else if lon < -180 {
				lon += 360
			}
			return orb.Point{lon, l.center[1] + dlat}
		}
	}
	return l.exactInverse(x, y)
}

// Distance returns the exact geodesic distance between a and b (longitude,
// latitude): the check for pairs that the planar test cannot decide.
func (l Local) Distance(a, b orb.Point) float64 { return Distance(a, b) }

// ErrorBound returns a bound in metres on the difference between the
// planar distance of projected points p and q (x, y in metres) and the
// geodesic distance of the points they project, valid for points within
// 16 km of the centre (Forward's fitted square): 1.5 * d*h^2/(6 R^2) plus
// 10 micrometres, d the planar distance and h the distance from the centre
// to the line through p and q, with R^2 the smallest product of the
// principal radii of curvature on the ellipsoid. The tests check it against
// exact distances.
func (l Local) ErrorBound(p, q orb.Point) float64 {
	dx, dy := q[0]-p[0], q[1]-p[1]
	d := math.Hypot(dx, dy)
	var h float64
	if d > 0 {
		h = math.Abs(p[0]*dy-p[1]*dx) / d
	} else {
		h = math.Hypot(p[0], p[1])
	}
	return 1.5*d*h*h/(6*minGaussR2) + 10e-6
}

// minGaussR2 is the smallest value of M*N (meridional times prime vertical
// radius of curvature) on the WGS 84 ellipsoid, at the equator: a^2 (1-e^2).
var minGaussR2 = func() float64 {
	a, f := ellipsoid.Radius(), ellipsoid.Flattening()
	return a * a * (1 - f*(2-f))
}()

func (l Local) exactForward(p orb.Point) (x, y float64) {
	var s12, azi1 float64
	ellipsoid.Inverse(l.center[1], l.center[0], p[1], p[0], &s12, &azi1, nil)
	sa, ca := math.Sincos(azi1 * deg)
	return s12 * sa, s12 * ca
}

func (l Local) exactInverse(x, y float64) orb.Point {
	s := math.Hypot(x, y)
	if s == 0 {
		return l.center
	}
	var lat, lon float64
	ellipsoid.Direct(l.center[1], l.center[0], math.Atan2(x, y)/deg, s, &lat, &lon, nil)
	return orb.Point{lon, lat}
}

// fitInverse fits the inverse about longitude 0: the tables depend only on
// the centre's latitude (see At).
func (t *localFit) fitInverse() {
	l := Local{center: orb.Point{0, t.lat0}}
	var vlat, vlon [localN][localN]float64
	nodes := chebNodes()
	for i, u := range nodes {
		for j, v := range nodes {
			p := l.exactInverse(u*localHalfWidth, v*localHalfWidth)
			vlat[i][j] = p[1] - t.lat0
			vlon[i][j] = p[0]
		}
	}
	t.gLat, t.gLon = chebFit(&vlat), chebFit(&vlon)
}

// chebNodes returns the Chebyshev points of the first kind on [-1, 1].
func chebNodes() [localN]float64 {
	var x [localN]float64
	for i := range x {
		x[i] = math.Cos(math.Pi * (float64(i) + 0.5) / localN)
	}
	return x
}

// chebFit returns the coefficients interpolating values v[i][j] given at
// nodes (u_i, v_j) (discrete Chebyshev transform in each variable).
func chebFit(vals *[localN][localN]float64) cheb2 {
	var tk [localN][localN]float64 // tk[k][i] = T_k(x_i)
	for k := 0; k < localN; k++ {
		for i := 0; i < localN; i++ {
			tk[k][i] = math.Cos(math.Pi * float64(k) * (float64(i) + 0.5) / localN)
		}
	}
	var c cheb2
	for k := 0; k < localN; k++ {
		for m := 0; m < localN; m++ {
			var s float64
			for i := 0; i < localN; i++ {
				for j := 0; j < localN; j++ {
					s += vals[i][j] * tk[k][i] * tk[m][j]
				}
			}
			s *= 4.0 / (localN * localN)
			if k == 0 {
				s /= 2
			}
			if m == 0 {
				s /= 2
			}
			c[k][m] = s
		}
	}
	return c
}

// chebBasis fills t with T_0(x) .. T_{localN-1}(x).
func chebBasis(x float64, t *[localN]float64) {
	t[0], t[1] = 1, x
	for k := 2; k < localN; k++ {
		t[k] = 2*x*t[k-1] - t[k-2]
	}
}

// eval2 evaluates two expansions sharing their basis values.
func eval2(a, b *cheb2, tu, tv *[localN]float64) (float64, float64) {
	var sa, sb float64
	for k := 0; k < localN; k++ {
		var ra, rb float64
		for m := 0; m < localN; m++ {
			ra += a[k][m] * tv[m]
			rb += b[k][m] * tv[m]
		}
		sa += ra * tu[k]
		sb += rb * tu[k]
	}
	return sa, sb
}
