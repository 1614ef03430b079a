package geo

import (
	"math"

	"github.com/paulmach/orb"
	"github.com/tidwall/geodesic"
)

// The geodesic computations use github.com/tidwall/geodesic, a port of
// GeographicLib's geodesic routines (C. F. F. Karney, "Algorithms for
// geodesics", J. Geodesy 87 (2013) 43-55), on the WGS 84 ellipsoid. GDA2020
// is defined on GRS80, whose flattening differs from WGS 84's by about 1 part
// in 10^10 (the semi-major axes are equal): distances differ by less than
// 0.1 mm per 1,000 km and areas by a similarly negligible fraction, so the
// two are treated as one ellipsoid here.
//
// geodesic.WGS84 is only read by Inverse and PolygonInit, so everything in
// this file is safe for concurrent use.
var ellipsoid = geodesic.WGS84

// Distance returns the geodesic distance in metres between two positions
// given as longitude, latitude in degrees (Karney's solution of the inverse
// problem, accurate to about 15 nanometres). Safe for concurrent use.
func Distance(a, b orb.Point) float64 {
	var s12 float64
	ellipsoid.Inverse(a[1], a[0], b[1], b[0], &s12, nil, nil)
	return s12
}

// Area returns the geodesic area in square metres of g, positions in
// longitude, latitude degrees, edges taken as geodesics. Each ring counts
// with the absolute value of its area, so ring orientation does not matter:
// a Polygon is its exterior ring less its holes (never below 0), a
// MultiPolygon or Collection the sum of its members, a Bound or a lone Ring
// the polygon they outline. Points and lines have area 0. Rings need not
// repeat their first position at the end. Safe for concurrent use.
func Area(g orb.Geometry) float64 {
	switch g := g.(type) {
	case orb.Polygon:
		return polygonArea(g)
	case orb.MultiPolygon:
		var sum float64
		for _, p := range g {
			sum += polygonArea(p)
		}
		return sum
	case orb.Ring:
		return ringArea(g)
	case orb.Bound:
		return ringArea(g.ToRing())
	case orb.Collection:
		var sum float64
		for _, h := range g {
			sum += Area(h)
		}
		return sum
	}
	return 0
}

func polygonArea(p orb.Polygon) float64 {
	if len(p) == 0 {
		return 0
	}
	a := ringArea(p[0])
	for _, h := range p[1:] {
		a -= ringArea(h)
	}
	return math.Max(a, 0)
}

// ringArea returns the absolute geodesic area of a ring. The area of a
// ring is the smaller of the two regions it bounds (signed computation,
// then the absolute value), which is the intended one for anything smaller
// than a hemisphere.
func ringArea(r orb.Ring) float64 {
	n := len(r)
	if n > 1 && r[0] == r[n-1] {
		n--
	}
	if n < 3 {
		return 0
	}
	poly := ellipsoid.PolygonInit(false)
	for _, p := range r[:n] {
		poly.AddPoint(p[1], p[0])
	}
	var area float64
	poly.Compute(false, true, &area, nil)
	return math.Abs(area)
}
