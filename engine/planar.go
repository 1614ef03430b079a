package engine

import (
	"math"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// Planar primitives in a site-centred projection (x east, y north, metres).
// Orientation is geo.Orient, the project's one orientation test (exact;
// its floating-point filter decides all but nearly degenerate turns, so it
// costs about what a plain cross product does).

func sub(a, b orb.Point) orb.Point { return orb.Point{a[0] - b[0], a[1] - b[1]} }

func cross(a, b orb.Point) float64 { return a[0]*b[1] - a[1]*b[0] }

// hypot is the distance between a and b (coordinates are metres, far from
// overflow, so math.Hypot's scaling is not needed).
func hypot(a, b orb.Point) float64 {
	dx, dy := a[0]-b[0], a[1]-b[1]
	return math.Sqrt(dx*dx + dy*dy)
}

// dist2 is hypot squared.
func dist2(a, b orb.Point) float64 {
	dx, dy := a[0]-b[0], a[1]-b[1]
	return dx*dx + dy*dy
}

// closestOnSeg returns the point of segment a-b closest to p.
func closestOnSeg(p, a, b orb.Point) orb.Point {
	dx, dy := b[0]-a[0], b[1]-a[1]
	l2 := dx*dx + dy*dy
	if l2 == 0 {
		return a
	}
	t := ((p[0]-a[0])*dx + (p[1]-a[1])*dy) / l2
	switch {
	case t <= 0:
		return a
	case t >= 1:
		return b
	}
	return orb.Point{a[0] + t*dx, a[1] + t*dy}
}

// onSeg reports whether p, collinear with a and b, lies within their box.
func onSeg(a, b, p orb.Point) bool {
	return math.Min(a[0], b[0]) <= p[0] && p[0] <= math.Max(a[0], b[0]) &&
		math.Min(a[1], b[1]) <= p[1] && p[1] <= math.Max(a[1], b[1])
}

// segSeg returns the closest points p on a-b and q on c-d and their
// distance; p == q and 0 when the segments meet.
func segSeg(a, b, c, d orb.Point) (p, q orb.Point, dist float64) {
	o1, o2 := geo.Orient(a, b, c), geo.Orient(a, b, d)
	o3, o4 := geo.Orient(c, d, a), geo.Orient(c, d, b)
	if o1*o2 < 0 && o3*o4 < 0 {
		// Proper crossing.
		r, s := sub(b, a), sub(d, c)
		t := cross(sub(c, a), s) / cross(r, s)
		x := orb.Point{a[0] + t*r[0], a[1] + t*r[1]}
		return x, x, 0
	}
	switch {
	case o1 == 0 && onSeg(a, b, c):
		return c, c, 0
	case o2 == 0 && onSeg(a, b, d):
		return d, d, 0
	case o3 == 0 && onSeg(c, d, a):
		return a, a, 0
	case o4 == 0 && onSeg(c, d, b):
		return b, b, 0
	}
	// Compared squared: one square root, for the answer.
	p, q = closestOnSeg(c, a, b), c
	d2 := dist2(p, q)
	if p2 := closestOnSeg(d, a, b); dist2(p2, d) < d2 {
		p, q, d2 = p2, d, dist2(p2, d)
	}
	if q2 := closestOnSeg(a, c, d); dist2(a, q2) < d2 {
		p, q, d2 = a, q2, dist2(a, q2)
	}
	if q2 := closestOnSeg(b, c, d); dist2(b, q2) < d2 {
		p, q, d2 = b, q2, dist2(b, q2)
	}
	return p, q, math.Sqrt(d2)
}

// pbox is a planar box.
type pbox struct{ minX, minY, maxX, maxY float64 }

func emptyPBox() pbox {
	return pbox{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
}

func (b *pbox) extend(p orb.Point) {
	b.minX = math.Min(b.minX, p[0])
	b.minY = math.Min(b.minY, p[1])
	b.maxX = math.Max(b.maxX, p[0])
	b.maxY = math.Max(b.maxY, p[1])
}

func (b *pbox) union(o pbox) {
	b.minX = math.Min(b.minX, o.minX)
	b.minY = math.Min(b.minY, o.minY)
	b.maxX = math.Max(b.maxX, o.maxX)
	b.maxY = math.Max(b.maxY, o.maxY)
}

// dist is the distance between two boxes (0 when they meet): a lower bound
// on the distance between anything inside them.
func (b *pbox) dist(o *pbox) float64 {
	dx := math.Max(0, math.Max(b.minX-o.maxX, o.minX-b.maxX))
	dy := math.Max(0, math.Max(b.minY-o.maxY, o.minY-b.maxY))
	return math.Hypot(dx, dy)
}

func segPBox(a, b orb.Point) pbox {
	return pbox{math.Min(a[0], b[0]), math.Min(a[1], b[1]), math.Max(a[0], b[0]), math.Max(a[1], b[1])}
}
