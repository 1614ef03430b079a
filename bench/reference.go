package bench

import (
	"math"

	"github.com/paulmach/orb"
	"github.com/tidwall/geodesic"

	"siteenv/geo"
)

// The reference decides who is right when the engine and PostGIS disagree:
// the geodesic distance between a site and a feature, edges taken as
// geodesics on WGS 84, by brute force from geo.Distance (Karney) and
// geodesic lines. It shares nothing with the engine's projection or with
// PostGIS's sphere-then-spheroid approximation, and it is slow (golden
// section searches along edges), so it only runs on mismatches.

const (
	// boundaryTolerance: features this close to the radius may be answered
	// either way (the contract's 1 cm).
	boundaryTolerance = 0.01
	// pieceLength: geodesic edges are cut into pieces at most this long
	// (metres) before a planar test in longitude, latitude; a 10 m piece's
	// chord departs from the geodesic by well under a micrometre.
	pieceLength = 10.0
	maxDepth    = 48
)

// reference is the reference's answer for one site and feature.
type reference struct {
	// D is the distance in metres, 0 when they intersect.
	D float64
	// Depth, when D is 0, says how robust the intersection is: the
	// distance the boundaries would have to move to undo it (a lower
	// estimate). Meaningless when D > 0.
	Depth float64
}

// within reports whether the feature is within r, and whether the answer
// is within boundaryTolerance of changing (then either answer is right).
func (ref reference) within(r float64) (in, boundary bool) {
	if ref.D > 0 {
		return ref.D <= r, math.Abs(ref.D-r) <= boundaryTolerance
	}
	return true, r <= boundaryTolerance && ref.Depth <= boundaryTolerance
}

// shape is a geometry taken apart for the reference.
type shape struct {
	pts   []orb.Point
	segs  [][2]orb.Point
	polys []orb.Polygon
	comps []orb.Point // one position of every component
}

func shapeOf(g orb.Geometry) *shape {
	s := &shape{}
	s.add(g)
	return s
}

func (s *shape) add(g orb.Geometry) {
	line := func(ls []orb.Point) {
		for i := 1; i < len(ls); i++ {
			if ls[i] != ls[i-1] {
				s.segs = append(s.segs, [2]orb.Point{ls[i-1], ls[i]})
			}
		}
	}
	switch g := g.(type) {
	case orb.Point:
		s.pts = append(s.pts, g)
		s.comps = append(s.comps, g)
	case orb.MultiPoint:
		for _, p := range g {
			s.add(p)
		}
	case orb.LineString:
		s.comps = append(s.comps, g[0])
		line(g)
	case orb.MultiLineString:
		for _, l := range g {
			s.add(l)
		}
	case orb.Polygon:
		s.polys = append(s.polys, g)
		s.comps = append(s.comps, g[0][0])
		for _, r := range g {
			line(r)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			s.add(p)
		}
	}
}

// referenceDistance measures feature against site.
func referenceDistance(site, feature orb.Geometry) reference {
	a, b := shapeOf(site), shapeOf(feature)
	db, crossDepth, cross := boundaryDistance(a, b)
	depth := -1.0
	if cross {
		depth = crossDepth
	}
	// Without crossing boundaries a component lies wholly inside or
	// outside a polygon, so one position of each decides containment.
	if containsAny(a.polys, b.comps) || containsAny(b.polys, a.comps) {
		depth = max(depth, db)
	}
	if depth >= 0 {
		return reference{D: 0, Depth: depth}
	}
	return reference{D: db}
}

func containsAny(polys []orb.Polygon, pts []orb.Point) bool {
	for _, poly := range polys {
		for _, p := range pts {
			if polygonContains(poly, p) {
				return true
			}
		}
	}
	return false
}

// boundaryDistance is the least distance between the points and edges of a
// and b, leaving out crossing edge pairs; cross reports a crossing, and
// crossDepth the largest, over crossing pairs, of the least distance from
// an end of one edge to the other edge (how far the crossing is from
// becoming a near miss).
func boundaryDistance(a, b *shape) (d, crossDepth float64, cross bool) {
	d = math.Inf(1)
	for _, p := range a.pts {
		for _, q := range b.pts {
			d = min(d, geo.Distance(p, q))
		}
		for _, s := range b.segs {
			d = pointSegment(p, s, d)
		}
	}
	for _, q := range b.pts {
		for _, s := range a.segs {
			d = pointSegment(q, s, d)
		}
	}
	for _, s := range a.segs {
		for _, t := range b.segs {
			if segmentsCross(s, t) {
				cross = true
				e := pointSegment(s[0], t, math.Inf(1))
				e = pointSegment(s[1], t, e)
				e = pointSegment(t[0], s, e)
				e = pointSegment(t[1], s, e)
				crossDepth = max(crossDepth, e)
				continue
			}
			d = pointSegment(s[0], t, d)
			d = pointSegment(s[1], t, d)
			d = pointSegment(t[0], s, d)
			d = pointSegment(t[1], s, d)
		}
	}
	return d, crossDepth, cross
}

// pointSegment returns min(best, distance from p to the geodesic s),
// skipping the exact computation when a cheap lower bound exceeds best.
func pointSegment(p orb.Point, s [2]orb.Point, best float64) float64 {
	if lb := 0.9*approxPointSegment(p, s) - sagitta(s) - 1; lb > best {
		return best
	}
	return min(best, geodesicPointSegment(p, s))
}

// geodesicPointSegment is the least geodesic distance from p to a point of
// the geodesic s, by golden-section search along it (the distance is
// unimodal along an edge this short).
func geodesicPointSegment(p orb.Point, s [2]orb.Point) float64 {
	line := wgs84.InverseLine(s[0][1], s[0][0], s[1][1], s[1][0],
		geodesic.Latitude|geodesic.Longitude|geodesic.Distance|geodesic.DistanceIn)
	at := func(t float64) float64 {
		var lat, lon float64
		line.Position(t, &lat, &lon, nil)
		return geo.Distance(p, orb.Point{lon, lat})
	}
	const g = 0.6180339887498949
	lo, hi := 0.0, line.S13()
	x1, x2 := hi-g*(hi-lo), lo+g*(hi-lo)
	f1, f2 := at(x1), at(x2)
	for i := 0; i < 200 && hi-lo > 1e-7; i++ {
		if f1 <= f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - g*(hi-lo)
			f1 = at(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + g*(hi-lo)
			f2 = at(x2)
		}
	}
	return min(f1, f2, geo.Distance(p, s[0]), geo.Distance(p, s[1]))
}

// metresPerDegree at latitude lat (degrees): longitude, latitude.
func metresPerDegree(lat float64) (kx, ky float64) {
	phi := lat * math.Pi / 180
	return 111412.84*math.Cos(phi) - 93.5*math.Cos(3*phi), 111132.954 - 559.822*math.Cos(2*phi)
}

// approxPointSegment is the planar distance from p to the chord of s in an
// equirectangular frame at p (good to a few per cent nearby).
func approxPointSegment(p orb.Point, s [2]orb.Point) float64 {
	kx, ky := metresPerDegree(p[1])
	ax, ay := (s[0][0]-p[0])*kx, (s[0][1]-p[1])*ky
	bx, by := (s[1][0]-p[0])*kx, (s[1][1]-p[1])*ky
	dx, dy := bx-ax, by-ay
	t := 0.0
	if l2 := dx*dx + dy*dy; l2 > 0 {
		t = math.Max(0, math.Min(1, -(ax*dx+ay*dy)/l2))
	}
	return math.Hypot(ax+t*dx, ay+t*dy)
}

// sagitta bounds, in metres, how far the geodesic s strays from its chord
// in longitude, latitude (meridians converge: curvature about tan(lat)/R).
func sagitta(s [2]orb.Point) float64 {
	kx, ky := metresPerDegree(s[0][1])
	l := math.Hypot((s[1][0]-s[0][0])*kx, (s[1][1]-s[0][1])*ky)
	return segSagitta(l, math.Max(math.Abs(s[0][1]), math.Abs(s[1][1])))
}

func segSagitta(l, absLat float64) float64 {
	return 1.5*l*l*(math.Tan(math.Min(absLat+1, 89)*math.Pi/180)+0.1)/(8*6.3e6) + 1e-9
}

// segBox is the box of the geodesic a-b (length l metres), padded by its
// sagitta.
func segBox(a, b orb.Point, l float64) orb.Bound {
	absLat := math.Max(math.Abs(a[1]), math.Abs(b[1]))
	kx, _ := metresPerDegree(absLat)
	pad := segSagitta(l, absLat)/kx + 1e-12
	bd := orb.Bound{Min: a, Max: a}.Extend(b)
	return orb.Bound{Min: orb.Point{bd.Min[0] - pad, bd.Min[1] - pad}, Max: orb.Point{bd.Max[0] + pad, bd.Max[1] + pad}}
}

// geodesicMid is the midpoint of the geodesic a-b.
func geodesicMid(a, b orb.Point) orb.Point {
	line := wgs84.InverseLine(a[1], a[0], b[1], b[0], geodesic.Latitude|geodesic.Longitude|geodesic.Distance|geodesic.DistanceIn)
	var lat, lon float64
	line.Position(line.S13()/2, &lat, &lon, nil)
	return orb.Point{lon, lat}
}

// segmentsCross reports whether the geodesics s and t meet, halving the
// longer one until both are short enough for a planar test.
func segmentsCross(s, t [2]orb.Point) bool {
	return crossRec(s[0], s[1], t[0], t[1], geo.Distance(s[0], s[1]), geo.Distance(t[0], t[1]), 0)
}

func crossRec(a0, a1, b0, b1 orb.Point, la, lb float64, depth int) bool {
	if !segBox(a0, a1, la).Intersects(segBox(b0, b1, lb)) {
		return false
	}
	if (la <= pieceLength && lb <= pieceLength) || depth >= maxDepth {
		return planarIntersect(a0, a1, b0, b1)
	}
	if la >= lb {
		m := geodesicMid(a0, a1)
		return crossRec(a0, m, b0, b1, la/2, lb, depth+1) || crossRec(m, a1, b0, b1, la/2, lb, depth+1)
	}
	m := geodesicMid(b0, b1)
	return crossRec(a0, a1, b0, m, la, lb/2, depth+1) || crossRec(a0, a1, m, b1, la, lb/2, depth+1)
}

// planarIntersect reports whether segments a and b meet (touching counts).
func planarIntersect(a0, a1, b0, b1 orb.Point) bool {
	d1, d2 := geo.Orient(b0, b1, a0), geo.Orient(b0, b1, a1)
	d3, d4 := geo.Orient(a0, a1, b0), geo.Orient(a0, a1, b1)
	if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) {
		return true
	}
	on := func(p, q, r orb.Point) bool { // r on segment p-q, given collinear
		return math.Min(p[0], q[0]) <= r[0] && r[0] <= math.Max(p[0], q[0]) &&
			math.Min(p[1], q[1]) <= r[1] && r[1] <= math.Max(p[1], q[1])
	}
	return (d1 == 0 && on(b0, b1, a0)) || (d2 == 0 && on(b0, b1, a1)) ||
		(d3 == 0 && on(a0, a1, b0)) || (d4 == 0 && on(a0, a1, b1))
}

// polygonContains reports whether p is inside poly, edges being geodesics:
// the parity of crossings of the ray due east of p with every ring.
func polygonContains(poly orb.Polygon, p orb.Point) bool {
	n := 0
	for _, r := range poly {
		for i := 1; i < len(r); i++ {
			if r[i] != r[i-1] {
				n += rayCrossings(p, r[i-1], r[i], geo.Distance(r[i-1], r[i]), 0)
			}
		}
	}
	return n%2 == 1
}

// rayCrossings returns a count of crossings of the geodesic a-b with the
// ray east of p whose parity is exact: pieces that cannot meet the ray
// count 0, pieces wholly east of p count by their ends, the rest are
// halved down to planar pieces (half-open rule on latitude).
func rayCrossings(p, a, b orb.Point, l float64, depth int) int {
	bx := segBox(a, b, l)
	if p[1] < bx.Min[1] || p[1] > bx.Max[1] || bx.Max[0] < p[0] {
		return 0
	}
	if bx.Min[0] > p[0] || l <= pieceLength || depth >= maxDepth {
		if (a[1] > p[1]) == (b[1] > p[1]) {
			return 0
		}
		if bx.Min[0] > p[0] {
			return 1
		}
		x := a[0] + (p[1]-a[1])*(b[0]-a[0])/(b[1]-a[1])
		if x > p[0] {
			return 1
		}
		return 0
	}
	m := geodesicMid(a, b)
	return rayCrossings(p, a, m, l/2, depth+1) + rayCrossings(p, m, b, l/2, depth+1)
}
