package geo

import (
	"math"
	"math/cmplx"
)

// GRS80, the ellipsoid of GDA2020, and the MGA grid constants.
const (
	grs80A           = 6378137.0
	grs80F           = 1 / 298.257222101
	mgaK0            = 0.9996
	mgaFalseEasting  = 500000.0
	mgaFalseNorthing = 10000000.0
)

const deg = math.Pi / 180

// tmSeries holds the constants of a transverse Mercator projection on one
// ellipsoid, in Karney's formulation (C. F. F. Karney, "Transverse Mercator
// with an accuracy of a few nanometers", J. Geodesy 85 (2011) 475-485, the
// method of GeographicLib's TransverseMercator and of PROJ's etmerc/utm):
// Krüger's series in the third flattening n, carried to order n^6, summed
// with Clenshaw's method on complex arguments. Immutable once built.
type tmSeries struct {
	e   float64    // eccentricity
	e2m float64    // 1 - e^2
	k0A float64    // central scale factor times the rectifying radius A
	alp [6]float64 // alpha_1..6: conformal sphere -> Gauss-Krüger (forward)
	bet [6]float64 // beta_1..6: Gauss-Krüger -> conformal sphere (inverse)
}

// mgaTM is the projection underlying every MGA zone; only the central
// meridian changes from zone to zone. Read-only after package init.
var mgaTM = newTMSeries(grs80A, grs80F, mgaK0)

func newTMSeries(a, f, k0 float64) *tmSeries {
	n := f / (2 - f)
	n2 := n * n
	n3 := n2 * n
	n4 := n3 * n
	n5 := n4 * n
	n6 := n5 * n
	t := &tmSeries{
		e:   math.Sqrt(f * (2 - f)),
		e2m: (1 - f) * (1 - f),
		// A = a/(1+n) (1 + n^2/4 + n^4/64 + n^6/256)
		k0A: k0 * a / (1 + n) * (1 + n2/4 + n4/64 + n6/256),
	}
	t.alp = [6]float64{
		n/2 - 2*n2/3 + 5*n3/16 + 41*n4/180 - 127*n5/288 + 7891*n6/37800,
		13*n2/48 - 3*n3/5 + 557*n4/1440 + 281*n5/630 - 1983433*n6/1935360,
		61*n3/240 - 103*n4/140 + 15061*n5/26880 + 167603*n6/181440,
		49561*n4/161280 - 179*n5/168 + 6601661*n6/7257600,
		34729*n5/80640 - 3418889*n6/1995840,
		212378941 * n6 / 319334400,
	}
	t.bet = [6]float64{
		n/2 - 2*n2/3 + 37*n3/96 - n4/360 - 81*n5/512 + 96199*n6/604800,
		n2/48 + n3/15 - 437*n4/1440 + 46*n5/105 - 1118711*n6/3870720,
		17*n3/480 - 37*n4/840 - 209*n5/4480 + 5569*n6/90720,
		4397*n4/161280 - 11*n5/504 - 830251*n6/7257600,
		4583*n5/161280 - 108847*n6/3991680,
		20648693 * n6 / 638668800,
	}
	return t
}

// mgaCentralMeridian returns the central meridian of MGA zone z in degrees.
func mgaCentralMeridian(zone int) float64 { return float64(6*zone - 183) }

// MGAForward projects longitude, latitude (degrees, GDA2020) to easting,
// northing (metres) in GDA2020 MGA zone `zone`: transverse Mercator on
// GRS80, scale 0.9996 on the central meridian 6*zone-183, false easting
// 500,000 m, false northing 10,000,000 m. Any zone number is accepted
// (the formula only needs its central meridian); the result is accurate to
// a few nanometres within 30 degrees of longitude of the central meridian
// and meaningless beyond 90. No range checks: see FromCRS84 for a checked
// conversion. Safe for concurrent use.
func MGAForward(zone int, lon, lat float64) (easting, northing float64) {
	return mgaTM.forward(angDiff(mgaCentralMeridian(zone), lon), lat)
}

// MGAInverse is the inverse of MGAForward: easting, northing in metres to
// longitude, latitude in degrees, longitude in [-180, 180]. No range
// checks: see ToCRS84 for a checked conversion. Safe for concurrent use.
func MGAInverse(zone int, easting, northing float64) (lon, lat float64) {
	dlon, lat := mgaTM.inverse(easting, northing)
	lon = mgaCentralMeridian(zone) + dlon
	if lon > 180 {
		lon -= 360
	} else if lon < -180 {
		lon += 360
	}
	return lon, lat
}

// forward takes the longitude from the central meridian and the latitude,
// both in degrees.
func (t *tmSeries) forward(dlon, lat float64) (x, y float64) {
	sphi, cphi := math.Sincos(lat * deg)
	slam, clam := math.Sincos(dlon * deg)
	taup := taupf(sphi/cphi, t.e)
	// Conformal (Gauss-Schreiber) coordinates on the sphere.
	xip := math.Atan2(taup, clam)
	etap := math.Asinh(slam / math.Hypot(taup, clam))
	z := complex(xip, etap)
	z += clenshawSin(&t.alp, 2*z)
	return mgaFalseEasting + t.k0A*imag(z), mgaFalseNorthing + t.k0A*real(z)
}

// inverse returns the longitude from the central meridian and the latitude,
// in degrees.
func (t *tmSeries) inverse(x, y float64) (dlon, lat float64) {
	z := complex((y-mgaFalseNorthing)/t.k0A, (x-mgaFalseEasting)/t.k0A)
	z -= clenshawSin(&t.bet, 2*z)
	xip, etap := real(z), imag(z)
	s := math.Sinh(etap)
	sxip, cxip := math.Sincos(xip)
	r := math.Hypot(s, cxip)
	if r == 0 { // a pole
		return 0, math.Copysign(90, xip)
	}
	tau := tauf(sxip/r, t.e, t.e2m)
	return math.Atan2(s, cxip) / deg, math.Atan(tau) / deg
}

// clenshawSin returns sum_{j=1..6} c[j-1] sin(j*theta) for complex theta by
// Clenshaw's recurrence.
func clenshawSin(c *[6]float64, theta complex128) complex128 {
	s, co := cmplx.Sin(theta), cmplx.Cos(theta)
	a := 2 * co
	var b1, b2 complex128
	for j := 5; j >= 0; j-- {
		b1, b2 = a*b1-b2+complex(c[j], 0), b1
	}
	return b1 * s
}

// taupf returns tan(chi) for tau = tan(phi): chi the conformal latitude.
func taupf(tau, e float64) float64 {
	tau1 := math.Hypot(1, tau)
	sig := math.Sinh(e * math.Atanh(e*tau/tau1))
	return math.Hypot(1, sig)*tau - sig*tau1
}

// tauf inverts taupf by Newton's method (Karney 2011, eqs. 19-21); two or
// three iterations reach full double precision.
func tauf(taup, e, e2m float64) float64 {
	const maxIter = 8
	tol := math.Sqrt(0x1p-52) * 0.1 * math.Max(1, math.Abs(taup))
	tau := taup / e2m
	for i := 0; i < maxIter; i++ {
		taupa := taupf(tau, e)
		dtau := (taup - taupa) * (1 + e2m*tau*tau) /
			(e2m * math.Hypot(1, tau) * math.Hypot(1, taupa))
		tau += dtau
		if !(math.Abs(dtau) >= tol) {
			break
		}
	}
	return tau
}
