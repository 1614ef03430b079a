package engine

import (
	"math"

	"github.com/paulmach/orb"
	"github.com/tidwall/geodesic"

	"siteenv/geo"
)

// Feature and site edges are geodesics (as for PostGIS geography), not
// straight lines in longitude, latitude. This file holds the few facts about
// the ellipsoid the engine needs beyond geo: conservative boxes in
// degrees, how far a geodesic strays from the straight line between its ends
// in degrees, and points along a geodesic. geo exposes distances and the
// local projection but not the direct problem, so interpolation uses the
// same Karney implementation (github.com/tidwall/geodesic) directly.

const (
	deg = math.Pi / 180
	// earthA is the WGS 84 / GRS80 equatorial radius; a*cos(lat) bounds the
	// radius of a parallel from below (N >= a).
	earthA = 6378137.0
	// earthMMin is the smallest meridional radius of curvature, a(1-e^2),
	// at the equator: metres per radian of latitude are at least this.
	earthMMin = 6335439.327
	// earthR2Min is the smallest product of the principal radii of
	// curvature, a^2(1-e^2), used for curvature error bounds.
	earthR2Min = earthA * earthA * (1 - 0.0066943799901413165)
)

// padBox expands b (degrees) by m metres on every side, conservatively:
// every point within geodesic distance m of a point of b lies inside.
func padBox(b orb.Bound, m float64) orb.Bound {
	m = m*1.001 + 0.05
	dlat := m / earthMMin / deg
	latMax := math.Max(math.Abs(b.Min[1]), math.Abs(b.Max[1])) + dlat
	dlon := 360.0
	if latMax < 89.5 {
		dlon = m / (earthA * math.Cos(latMax*deg)) / deg
	}
	return orb.Bound{
		Min: orb.Point{b.Min[0] - dlon, b.Min[1] - dlat},
		Max: orb.Point{b.Max[0] + dlon, b.Max[1] + dlat},
	}
}

// padDeg expands b by d degrees on every side.
func padDeg(b orb.Bound, d float64) orb.Bound {
	return orb.Bound{Min: orb.Point{b.Min[0] - d, b.Min[1] - d}, Max: orb.Point{b.Max[0] + d, b.Max[1] + d}}
}

// bulgeDeg bounds, in degrees of longitude or latitude, how far the
// geodesic from a to b strays from the straight line between them in
// longitude, latitude. The straight line in degrees has geodesic curvature
// of about tan(lat) sin(azimuth) / R, and departs further from a rhumb line
// as latitude changes; together the departure is under
// dlon (dlon + 2 dlat) / 8 radians of arc (angles in radians). The bound is
// twice that, in degrees of longitude at the edge's most poleward latitude
// (so it also bounds degrees of latitude). The tests check it against
// geodesics up to 5 degrees long. Edges across the antimeridian are not
// supported.
func bulgeDeg(a, b orb.Point) float64 {
	return bulgeWith(a, b, bulgeScale(math.Max(math.Abs(a[1]), math.Abs(b[1]))))
}

// bulgeScale is the factor bulgeWith needs for edges whose latitudes stay
// within lat of the equator (1 / (cos(lat) * deg)), so that callers testing
// many edges of one geometry compute the cosine once.
func bulgeScale(lat float64) float64 {
	return 1 / (math.Cos(math.Min(lat, 89)*deg) * deg)
}

// boundScale is bulgeScale for the edges of a geometry with box b.
func boundScale(b orb.Bound) float64 {
	return bulgeScale(math.Max(math.Abs(b.Min[1]), math.Abs(b.Max[1])))
}

// bulgeWith is bulgeDeg with a precomputed bulgeScale.
func bulgeWith(a, b orb.Point, scale float64) float64 {
	dl := math.Abs(a[0]-b[0]) * deg
	if dl == 0 {
		return 1e-9 // meridians are straight
	}
	dp := math.Abs(a[1]-b[1]) * deg
	return dl*(dl+2*dp)/4*scale + 1e-9
}

// edgeBox is the box of the geodesic from a to b (conservative), scale
// being a bulgeScale valid for the edge.
func edgeBox(a, b orb.Point, scale float64) orb.Bound {
	m := bulgeWith(a, b, scale)
	return orb.Bound{
		Min: orb.Point{math.Min(a[0], b[0]) - m, math.Min(a[1], b[1]) - m},
		Max: orb.Point{math.Max(a[0], b[0]) + m, math.Max(a[1], b[1]) + m},
	}
}

// geodesicPoints appends to out the n-1 points dividing the geodesic from
// a to b into n equal pieces (a and b themselves excluded).
func geodesicPoints(out []orb.Point, a, b orb.Point, n int) []orb.Point {
	line := geodesic.WGS84.InverseLine(a[1], a[0], b[1], b[0], geodesic.Latitude|geodesic.Longitude|geodesic.DistanceIn)
	s := line.S13()
	for i := 1; i < n; i++ {
		var lat, lon float64
		line.Position(s*float64(i)/float64(n), &lat, &lon, nil)
		out = append(out, orb.Point{lon, lat})
	}
	return out
}

// cutGeodesic sets out to the positions cutting the geodesic from a to b
// into the fewest equal pieces of at most maxLen metres, a and b included.
func cutGeodesic(out []orb.Point, a, b orb.Point, maxLen float64) []orb.Point {
	n := max(1, int(math.Ceil(geo.Distance(a, b)/maxLen)))
	out = append(out[:0], a)
	if n > 1 {
		out = geodesicPoints(out, a, b, n)
	}
	return append(out, b)
}

// sagitta bounds how far the image of the geodesic between projected
// points a and b strays from the chord a-b in a site-centred azimuthal
// equidistant projection: h*d^2/(12 R^2), h the distance from the centre to
// the chord's line and d its length (the difference between the azimuthal
// equidistant and gnomonic radial scales is r^3/(3R^2)), doubled for
// safety.
func sagitta(a, b orb.Point) float64 {
	d := hypot(a, b)
	if d == 0 {
		return 0
	}
	h := math.Abs(cross(a, b)) / d
	return 2 * h * d * d / (12 * earthR2Min)
}

// chordFits reports sagitta(a, b) <= chordTolerance without its square
// root: with h = |cross|/d the sagitta is |cross| d / (6 R^2), and both
// sides of the comparison are squared. Nearly every edge fits.
func chordFits(a, b orb.Point) bool {
	c := cross(a, b) / (6 * earthR2Min)
	return c*c*dist2(a, b) <= chordTolerance*chordTolerance
}

// degMetric bounds geodesic distances from below in degrees. Within the
// latitudes lo..hi, a path's length is the integral of
// sqrt(M^2 dlat^2 + (N cos lat)^2 dlon^2) (M and N the ellipsoid's radii of
// curvature), so with ky <= M and kx <= N cos lat over the band, and by
// Minkowski's inequality, every path between two points of the band that
// stays in it, the geodesic included, is at least
// sqrt((kx dlon)^2 + (ky dlat)^2) long (degrees). M grows with |lat|
// and N cos lat shrinks, so the bounds are taken at the band's latitudes
// nearest to and farthest from the equator.
type degMetric struct {
	kx, ky float64 // metres per degree of longitude, latitude (0: no bound)
	lo, hi float64 // the band's latitudes
}

const (
	// degMetricBand widens a search box's latitudes into the band of its
	// degMetric.
	degMetricBand = 0.05
	// degMetricInner keeps the features degMetric bounds this far inside
	// the band: geodesics between points of the band (within tens of
	// kilometres of each other) stray from it by far less.
	degMetricInner = 0.01
	// lowerMargin (metres) covers, in partDistance's test, the difference
	// between planar distances in the site's projection and geodesic ones
	// (under a millimetre within the fitted square) and the chords standing
	// for geodesic edges.
	lowerMargin = 1.0
	earthE2     = 0.0066943799901413165
)

func newDegMetric(sb orb.Bound) degMetric {
	lo, hi := sb.Min[1]-degMetricBand, sb.Max[1]+degMetricBand
	far := math.Max(math.Abs(lo), math.Abs(hi))
	if far >= 89 {
		return degMetric{}
	}
	var near float64
	switch {
	case lo > 0:
		near = lo
	case hi < 0:
		near = -hi
	}
	sn, sf := math.Sin(near*deg), math.Sin(far*deg)
	m := earthA * (1 - earthE2) / math.Pow(1-earthE2*sn*sn, 1.5)
	n := earthA / math.Sqrt(1-earthE2*sf*sf)
	// The factors shave off more than rounding could add.
	return degMetric{kx: n * math.Cos(far*deg) * deg * (1 - 1e-9), ky: m * deg * (1 - 1e-9), lo: lo, hi: hi}
}

// holds reports whether b lies far enough inside the band for the bound.
func (dm *degMetric) holds(b orb.Bound) bool {
	return dm.kx > 0 && b.Min[1] >= dm.lo+degMetricInner && b.Max[1] <= dm.hi-degMetricInner
}
