package geo

import "math"

// helmert is a 7-parameter similarity transformation of geocentric
// cartesian coordinates, X' = T + (1 + s) R X, with R the small-angle
// rotation matrix as PROJ's helmert applies it by default (without
// +exact). Immutable: safe for concurrent use.
type helmert struct {
	tx, ty, tz float64 // metres
	rx, ry, rz float64 // radians, coordinate frame convention
	s          float64 // scale difference (ppm * 1e-6)
}

const arcsec = deg / 3600

// gda94ToGDA2020 is EPSG:8048, "GDA94 to GDA2020 (1)", the transformation
// PROJ uses from EPSG:4283 to EPSG:7844 when the conformal grid is not
// installed: tX 61.55 mm, tY -10.87 mm, tZ -40.19 mm, rX -39.4924 mas,
// rY -32.7221 mas, rZ -32.8979 mas, dS -9.994 ppb, in the coordinate frame
// rotation convention (EPSG method 9607; PROJ +convention=coordinate_frame).
var gda94ToGDA2020 = helmert{
	tx: 0.06155, ty: -0.01087, tz: -0.04019,
	rx: -0.0394924 * arcsec, ry: -0.0327221 * arcsec, rz: -0.0328979 * arcsec,
	s: -0.009994e-6,
}

// forward applies the transformation.
func (h *helmert) forward(x, y, z float64) (float64, float64, float64) {
	k := 1 + h.s
	// Coordinate frame: R = [[1, rz, -ry], [-rz, 1, rx], [ry, -rx, 1]].
	return h.tx + k*(x+h.rz*y-h.ry*z),
		h.ty + k*(-h.rz*x+y+h.rx*z),
		h.tz + k*(h.ry*x-h.rx*y+z)
}

// inverse undoes forward as PROJ does: the transposed rotation applied to
// (X' - T) / (1 + s).
func (h *helmert) inverse(x, y, z float64) (float64, float64, float64) {
	k := 1 + h.s
	x, y, z = (x-h.tx)/k, (y-h.ty)/k, (z-h.tz)/k
	return x - h.rz*y + h.ry*z,
		h.rz*x + y - h.rx*z,
		-h.ry*x + h.rx*y + z
}

// GDA94ToGDA2020 moves a GDA94 longitude, latitude (degrees, ellipsoidal
// height taken as 0 and dropped after, as PROJ does for 2D input) to
// GDA2020 by EPSG:8048. Both datums use GRS80. Safe for concurrent use.
func GDA94ToGDA2020(lon, lat float64) (float64, float64) {
	x, y, z := geodeticToCartesian(lon, lat, 0)
	x, y, z = gda94ToGDA2020.forward(x, y, z)
	lon, lat, _ = cartesianToGeodetic(x, y, z)
	return lon, lat
}

// GDA2020ToGDA94 is the inverse of GDA94ToGDA2020.
func GDA2020ToGDA94(lon, lat float64) (float64, float64) {
	x, y, z := geodeticToCartesian(lon, lat, 0)
	x, y, z = gda94ToGDA2020.inverse(x, y, z)
	lon, lat, _ = cartesianToGeodetic(x, y, z)
	return lon, lat
}

// geodeticToCartesian converts GRS80 longitude, latitude (degrees) and
// ellipsoidal height (metres) to geocentric X, Y, Z.
func geodeticToCartesian(lon, lat, h float64) (x, y, z float64) {
	const e2 = grs80F * (2 - grs80F)
	sphi, cphi := math.Sincos(lat * deg)
	slam, clam := math.Sincos(lon * deg)
	n := grs80A / math.Sqrt(1-e2*sphi*sphi)
	return (n + h) * cphi * clam, (n + h) * cphi * slam, (n*(1-e2) + h) * sphi
}

// cartesianToGeodetic is the inverse of geodeticToCartesian, by fixed-point
// iteration on the latitude (converges to full precision in a few steps
// for points near the ellipsoid's surface).
func cartesianToGeodetic(x, y, z float64) (lon, lat, h float64) {
	const e2 = grs80F * (2 - grs80F)
	p := math.Hypot(x, y)
	lon = math.Atan2(y, x)
	phi := math.Atan2(z, p*(1-e2))
	var n float64
	for i := 0; i < 10; i++ {
		s := math.Sin(phi)
		n = grs80A / math.Sqrt(1-e2*s*s)
		h = p/math.Cos(phi) - n
		next := math.Atan2(z, p*(1-e2*n/(n+h)))
		if math.Abs(next-phi) < 1e-15 {
			phi = next
			break
		}
		phi = next
	}
	return lon / deg, phi / deg, h
}
