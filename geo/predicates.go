package geo

import (
	"math"
	"math/big"

	"github.com/paulmach/orb"
)

// Planar predicates in longitude, latitude used by Validate. They are
// exact: a fast floating-point filter (Shewchuk's orient2d error bound A)
// with an exact rational fallback for the rare nearly degenerate cases.

// ccwErrBound is Shewchuk's ccwerrboundA = (3 + 16 eps) eps, eps = 2^-53.
const ccwErrBound = (3.0 + 16.0*0x1p-53) * 0x1p-53

// Orient returns +1 when a, b, c turn counter-clockwise (c left of the
// directed line a->b), -1 when clockwise and 0 when collinear, exactly: the
// one orientation test of the project (planar, in the coordinates given).
func Orient(a, b, c orb.Point) int { return orient(a, b, c) }

func orient(a, b, c orb.Point) int {
	detLeft := (a[0] - c[0]) * (b[1] - c[1])
	detRight := (a[1] - c[1]) * (b[0] - c[0])
	det := detLeft - detRight
	var detSum float64
	switch {
	case detLeft > 0:
		if detRight <= 0 {
			return sign(det)
		}
		detSum = detLeft + detRight
	case detLeft < 0:
		if detRight >= 0 {
			return sign(det)
		}
		detSum = -detLeft - detRight
	default:
		return sign(det)
	}
	if bound := ccwErrBound * detSum; det >= bound || -det >= bound {
		return sign(det)
	}
	return orientExact(a, b, c)
}

func sign(v float64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// orientExact evaluates orient with rational arithmetic: every float64 is
// a rational, so the result is exact.
func orientExact(a, b, c orb.Point) int {
	r := func(v float64) *big.Rat { return new(big.Rat).SetFloat64(v) }
	ax, ay, bx, by, cx, cy := r(a[0]), r(a[1]), r(b[0]), r(b[1]), r(c[0]), r(c[1])
	l := new(big.Rat).Mul(new(big.Rat).Sub(ax, cx), new(big.Rat).Sub(by, cy))
	rr := new(big.Rat).Mul(new(big.Rat).Sub(ay, cy), new(big.Rat).Sub(bx, cx))
	return l.Cmp(rr)
}

// lessPoint orders points lexicographically by longitude, then latitude.
func lessPoint(p, q orb.Point) bool {
	return p[0] < q[0] || (p[0] == q[0] && p[1] < q[1])
}

func comparePoint(p, q orb.Point) int {
	switch {
	case lessPoint(p, q):
		return -1
	case lessPoint(q, p):
		return 1
	}
	return 0
}

// between reports whether p, known to be collinear with a and b, lies on
// the closed segment a-b. Along a line the lexicographic order is monotone.
func between(a, b, p orb.Point) bool {
	if lessPoint(b, a) {
		a, b = b, a
	}
	return !lessPoint(p, a) && !lessPoint(b, p)
}

// segHit classifies how two segments meet.
type segHit int

const (
	hitNone    segHit = iota
	hitTouch          // they share exactly one point, an endpoint of at least one of them
	hitCross          // their interiors cross at one point
	hitOverlap        // they are collinear and share a piece of positive length
)

// segIntersect classifies segments a-b and c-d (each of positive length)
// and returns a point where they meet (approximate for hitCross).
func segIntersect(a, b, c, d orb.Point) (segHit, orb.Point) {
	o1, o2 := orient(a, b, c), orient(a, b, d)
	if o1 != 0 && o1 == o2 {
		return hitNone, orb.Point{}
	}
	o3, o4 := orient(c, d, a), orient(c, d, b)
	if o3 != 0 && o3 == o4 {
		return hitNone, orb.Point{}
	}
	if o1 == 0 && o2 == 0 { // collinear
		lo1, hi1 := a, b
		if lessPoint(hi1, lo1) {
			lo1, hi1 = hi1, lo1
		}
		lo2, hi2 := c, d
		if lessPoint(hi2, lo2) {
			lo2, hi2 = hi2, lo2
		}
		lo, hi := lo1, hi1
		if lessPoint(lo, lo2) {
			lo = lo2
		}
		if lessPoint(hi2, hi) {
			hi = hi2
		}
		switch comparePoint(lo, hi) {
		case -1:
			return hitOverlap, lo
		case 0:
			return hitTouch, lo
		}
		return hitNone, orb.Point{}
	}
	switch {
	case o1 == 0 && between(a, b, c):
		return hitTouch, c
	case o2 == 0 && between(a, b, d):
		return hitTouch, d
	case o3 == 0 && between(c, d, a):
		return hitTouch, a
	case o4 == 0 && between(c, d, b):
		return hitTouch, b
	case o1 != 0 && o2 != 0 && o3 != 0 && o4 != 0:
		// Opposite signs on both: a proper crossing.
		t := cross2(sub(c, a), sub(d, c)) / cross2(sub(b, a), sub(d, c))
		return hitCross, orb.Point{a[0] + t*(b[0]-a[0]), a[1] + t*(b[1]-a[1])}
	}
	return hitNone, orb.Point{}
}

func sub(p, q orb.Point) orb.Point  { return orb.Point{p[0] - q[0], p[1] - q[1]} }
func cross2(p, q orb.Point) float64 { return p[0]*q[1] - p[1]*q[0] }

// pointLocation is where a point lies with respect to a ring.
type pointLocation int

const (
	locOutside pointLocation = iota
	locInside
	locBoundary
)

// locate returns where p lies with respect to the closed ring r (first
// position repeated at the end), exactly, by the winding number.
func locate(p orb.Point, r []orb.Point) pointLocation {
	wn := 0
	for i := 0; i+1 < len(r); i++ {
		u, v := r[i], r[i+1]
		if u[1] <= p[1] {
			if v[1] > p[1] {
				switch o := orient(u, v, p); {
				case o > 0:
					wn++
				case o == 0:
					return locBoundary
				}
			} else if v[1] == p[1] && orient(u, v, p) == 0 && between(u, v, p) {
				return locBoundary
			}
		} else if v[1] <= p[1] {
			switch o := orient(u, v, p); {
			case o < 0:
				wn--
			case o == 0:
				return locBoundary
			}
		}
	}
	if wn != 0 {
		return locInside
	}
	return locOutside
}

// signedArea2 returns twice the planar signed area of the closed ring r in
// square degrees (positive when counter-clockwise), summed about r[0] to
// limit cancellation.
func signedArea2(r []orb.Point) float64 {
	if len(r) < 4 {
		return 0
	}
	o := r[0]
	var s float64
	for i := 1; i+1 < len(r); i++ {
		s += cross2(sub(r[i], o), sub(r[i+1], o))
	}
	return s
}

// ringBounds returns the bounding box of r.
func ringBounds(r []orb.Point) orb.Bound {
	b := orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
	for _, p := range r {
		b.Min[0] = math.Min(b.Min[0], p[0])
		b.Min[1] = math.Min(b.Min[1], p[1])
		b.Max[0] = math.Max(b.Max[0], p[0])
		b.Max[1] = math.Max(b.Max[1], p[1])
	}
	return b
}
