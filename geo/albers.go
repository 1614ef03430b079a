package geo

import "math"

// albers is the Albers equal-area conic projection on an ellipsoid
// (J. P. Snyder, "Map Projections: A Working Manual", USGS PP 1395 (1987),
// pp. 101-102, the formulas of PROJ's aea). Immutable once built: safe for
// concurrent use.
type albers struct {
	a, e, e2   float64
	lon0       float64 // central meridian, degrees
	n, c, rho0 float64
	qp         float64 // q at the pole, bounds the inverse
	x0, y0     float64
}

// australianAlbers is EPSG:3577 (GDA94) and EPSG:9473 (GDA2020): GRS80,
// standard parallels 18 S and 36 S, latitude of origin 0, central meridian
// 132 E, no false easting or northing.
var australianAlbers = newAlbers(grs80A, grs80F, 0, 132, -18, -36)

func newAlbers(a, f, lat0, lon0, lat1, lat2 float64) *albers {
	e2 := f * (2 - f)
	p := &albers{a: a, e: math.Sqrt(e2), e2: e2, lon0: lon0}
	m1, q1 := p.m(lat1*deg), p.q(lat1*deg)
	m2, q2 := p.m(lat2*deg), p.q(lat2*deg)
	p.n = (m1*m1 - m2*m2) / (q2 - q1)
	p.c = m1*m1 + p.n*q1
	p.rho0 = a * math.Sqrt(p.c-p.n*p.q(lat0*deg)) / p.n
	p.qp = p.q(math.Pi / 2)
	return p
}

func (p *albers) m(phi float64) float64 {
	s, c := math.Sincos(phi)
	return c / math.Sqrt(1-p.e2*s*s)
}

func (p *albers) q(phi float64) float64 {
	s := math.Sin(phi)
	es := p.e * s
	return (1 - p.e2) * (s/(1-es*es) - math.Log((1-es)/(1+es))/(2*p.e))
}

// forward projects longitude, latitude in degrees to x, y in metres.
func (p *albers) forward(lon, lat float64) (x, y float64) {
	rho := p.a * math.Sqrt(p.c-p.n*p.q(lat*deg)) / p.n
	theta := p.n * angDiff(p.lon0, lon) * deg
	s, c := math.Sincos(theta)
	return p.x0 + rho*s, p.y0 + p.rho0 - rho*c
}

// inverse is the inverse of forward; ok is false for x, y outside the
// projection's image.
func (p *albers) inverse(x, y float64) (lon, lat float64, ok bool) {
	x -= p.x0
	dy := p.rho0 - (y - p.y0)
	rho := math.Hypot(x, dy)
	if p.n < 0 {
		rho, x, dy = -rho, -x, -dy
	}
	theta := math.Atan2(x, dy)
	q := (p.c - rho*rho*p.n*p.n/(p.a*p.a)) / p.n
	if math.Abs(q) > math.Abs(p.qp)+1e-12 {
		return 0, 0, false
	}
	phi, ok := p.phi(q)
	if !ok {
		return 0, 0, false
	}
	lon = p.lon0 + theta/p.n/deg
	if lon > 180 || lon < -180 {
		return 0, 0, false
	}
	return lon, phi / deg, true
}

// phi inverts q by Snyder's iteration (eq. 3-16).
func (p *albers) phi(q float64) (float64, bool) {
	if math.Abs(math.Abs(q)-math.Abs(p.qp)) < 1e-12 {
		return math.Copysign(math.Pi/2, q), true
	}
	phi := math.Asin(math.Max(-1, math.Min(1, q/2)))
	var d float64
	for i := 0; i < 30; i++ {
		s, c := math.Sincos(phi)
		es := p.e * s
		om := 1 - es*es
		d = om * om / (2 * c) * (q/(1-p.e2) - s/om + math.Log((1-es)/(1+es))/(2*p.e))
		phi += d
		if math.Abs(d) < 1e-14 {
			return phi, true
		}
	}
	// Rounding can leave the last step oscillating near 1e-16 rad.
	return phi, math.Abs(d) < 1e-11
}
