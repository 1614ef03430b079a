package geo

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// ValidationError reports why a geometry breaks the contract's rules for
// site geometry. It matches ErrInvalidGeometry, and also ErrTooManyVertices
// when that is the reason.
type ValidationError struct {
	// Path locates the problem relative to the geometry object, in the
	// GeoJSON structure: "type", "coordinates", "coordinates[0][3]" (ring 0,
	// position 3 of a Polygon), "coordinates[1][0]" (polygon 1, ring 0 of a
	// MultiPolygon) ...; empty when it concerns the whole input.
	Path string
	// Reason says what is wrong, for people: "ring is not closed",
	// "ring self-intersects at segment 12 and 40", ...
	Reason string

	tooMany bool
}

func (e *ValidationError) Error() string {
	if e.Path == "" {
		return "invalid geometry: " + e.Reason
	}
	return "invalid geometry: " + e.Path + ": " + e.Reason
}

// Unwrap returns ErrInvalidGeometry.
func (e *ValidationError) Unwrap() error { return ErrInvalidGeometry }

// Is reports whether target is ErrTooManyVertices and that is the reason.
func (e *ValidationError) Is(target error) bool {
	return e.tooMany && target == ErrTooManyVertices
}

func invalid(path, format string, args ...any) *ValidationError {
	return &ValidationError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

func tooManyVertices(n, max int) *ValidationError {
	e := invalid("coordinates", "geometry has %d positions, more than the limit of %d", n, max)
	e.tooMany = true
	return e
}

// CoordPath formats the path of a ValidationError: "coordinates[i][j]...".
func CoordPath(idx ...int) string { return coordPath(idx...) }

// coordPath formats "coordinates[i][j]...".
func coordPath(idx ...int) string {
	var b strings.Builder
	b.WriteString("coordinates")
	for _, i := range idx {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(']')
	}
	return b.String()
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// allowedTypes lists the GeoJSON geometry types of site geometry, for
// messages.
const allowedTypes = "Point, MultiPoint, LineString, MultiLineString, Polygon or MultiPolygon"

// Validate checks g against the contract's rules for site geometry and
// returns nil or a *ValidationError:
//
//   - the type is Point, MultiPoint, LineString, MultiLineString, Polygon
//     or MultiPolygon (orb's Ring, Bound and Collection are refused);
//   - at most maxVertices positions in all (closing positions of rings
//     count; maxVertices <= 0 means no limit), checked before anything else;
//   - every position is finite with longitude in -180..180 and latitude in
//     -90..90;
//   - a MultiPoint has at least 1 position; a LineString at least 2, of
//     which 2 distinct; multi-geometries are not empty;
//   - polygons are valid in the OGC Simple Features sense: every ring has at
//     least 4 positions, is closed (the last position repeats the first),
//     encloses a non-zero area and does not intersect or touch itself;
//     rings of a polygon, and of all polygons of a MultiPolygon, do not
//     cross or overlap each other (touching at isolated points is allowed);
//     holes lie inside their exterior ring and not inside another hole;
//     the polygons of a MultiPolygon do not overlap (one may lie in a hole
//     of another). Whether touching holes cut a polygon's interior in two is
//     not checked.
//
// Consecutive repeated positions are allowed and ignored. Validity is
// decided in the plane of longitude, latitude (edges are straight in
// degrees, as for PostGIS geometry), with exact predicates; finding
// intersections costs O(n log n) for n positions. Ring orientation is not
// checked (see Canonical). Safe for concurrent use.
func Validate(g orb.Geometry, maxVertices int) error {
	if g == nil {
		return invalid("", "geometry is missing")
	}
	n, ok := countVertices(g)
	if !ok {
		return invalid("type", "type %s is not allowed; use %s", typeName(g), allowedTypes)
	}
	if maxVertices > 0 && n > maxVertices {
		return tooManyVertices(n, maxVertices)
	}
	var err *ValidationError
	switch g := g.(type) {
	case orb.Point:
		err = checkPosition(g, func() string { return "coordinates" })
	case orb.MultiPoint:
		if len(g) == 0 {
			return invalid("coordinates", "MultiPoint needs at least 1 position")
		}
		for i, p := range g {
			if err = checkPosition(p, pathAt(nil, i)); err != nil {
				break
			}
		}
	case orb.LineString:
		err = CheckLine(g, nil, sitePosition)
	case orb.MultiLineString:
		if len(g) == 0 {
			return invalid("coordinates", "MultiLineString needs at least 1 LineString")
		}
		for i, ls := range g {
			if err = CheckLine(ls, []int{i}, sitePosition); err != nil {
				break
			}
		}
	case orb.Polygon:
		err = checkPolygons([]orb.Polygon{g}, false)
	case orb.MultiPolygon:
		if len(g) == 0 {
			return invalid("coordinates", "MultiPolygon needs at least 1 Polygon")
		}
		err = checkPolygons(g, true)
	}
	if err != nil {
		return err
	}
	return nil
}

// countVertices returns the number of positions of an allowed geometry;
// ok is false for any other type.
func countVertices(g orb.Geometry) (n int, ok bool) {
	switch g := g.(type) {
	case orb.Point:
		return 1, true
	case orb.MultiPoint:
		return len(g), true
	case orb.LineString:
		return len(g), true
	case orb.MultiLineString:
		for _, ls := range g {
			n += len(ls)
		}
		return n, true
	case orb.Polygon:
		for _, r := range g {
			n += len(r)
		}
		return n, true
	case orb.MultiPolygon:
		for _, p := range g {
			for _, r := range p {
				n += len(r)
			}
		}
		return n, true
	}
	return 0, false
}

func typeName(g orb.Geometry) string {
	switch g.(type) {
	case orb.Ring:
		return "Ring"
	case orb.Bound:
		return "Bound"
	case orb.Collection:
		return "GeometryCollection"
	}
	return fmt.Sprintf("%T", g)
}

// checkPosition returns nil or the error for position p; path builds the
// error's path only when needed.
func checkPosition(p orb.Point, path func() string) *ValidationError {
	if reason := sitePosition(p); reason != "" {
		return &ValidationError{Path: path(), Reason: reason}
	}
	return nil
}

// sitePosition is the position rule of site geometry (a PositionRule):
// finite, longitude in -180..180, latitude in -90..90.
func sitePosition(p orb.Point) string {
	switch lon, lat := p[0], p[1]; {
	case math.IsNaN(lon) || math.IsInf(lon, 0):
		return "longitude is not a finite number"
	case math.IsNaN(lat) || math.IsInf(lat, 0):
		return "latitude is not a finite number"
	case lon < -180 || lon > 180:
		return "longitude " + fmtNum(lon) + " out of range -180..180"
	case lat < -90 || lat > 90:
		return "latitude " + fmtNum(lat) + " out of range -90..90"
	}
	return ""
}

// pathAt returns a func formatting coordPath(prefix..., i).
func pathAt(prefix []int, i int) func() string {
	return func() string { return coordPath(append(append([]int(nil), prefix...), i)...) }
}

// PositionRule returns why position p is refused, or "".
type PositionRule func(p orb.Point) string

// CheckLine applies the LineString rule that site geometry (Validate) and
// source rows (ingest, before reprojection) share: at least 2 positions, 2
// of them distinct, each passing rule. prefix is the LineString's index
// within coordinates (nil for a LineString geometry).
func CheckLine(ls orb.LineString, prefix []int, rule PositionRule) *ValidationError {
	if len(ls) < 2 {
		return invalid(coordPath(prefix...), "LineString has %d positions; at least 2 are required", len(ls))
	}
	distinct := false
	for i, p := range ls {
		if reason := rule(p); reason != "" {
			return &ValidationError{Path: pathAt(prefix, i)(), Reason: reason}
		}
		if p != ls[0] {
			distinct = true
		}
	}
	if !distinct {
		return invalid(coordPath(prefix...), "LineString has fewer than 2 distinct positions")
	}
	return nil
}

// vring is one ring prepared for the polygon checks.
type vring struct {
	pts   []orb.Point // consecutive repeats removed; closed (pts[0] == pts[len-1])
	orig  []int       // orig[k] is the index in the input ring of pts[k]
	idx   []int       // polygon index (MultiPolygon only) and ring index
	poly  int         // polygon index
	hole  bool
	bound orb.Bound
}

func (r *vring) path() string { return coordPath(r.idx...) }

// segs returns the number of segments of r.
func (r *vring) segs() int { return len(r.pts) - 1 }

// vertex returns the position at cyclic index i of the open ring.
func (r *vring) vertex(i int) orb.Point {
	n := r.segs()
	return r.pts[((i%n)+n)%n]
}

// segRef names segment k (pts[k] -> pts[k+1]) of ring r.
type segRef struct{ ring, k int }

func checkPolygons(polys []orb.Polygon, multi bool) *ValidationError {
	var rings []*vring
	var shells []int // index in rings of each polygon's exterior ring
	for pi, poly := range polys {
		var prefix []int
		if multi {
			prefix = []int{pi}
		}
		if len(poly) == 0 {
			return invalid(coordPath(prefix...), "Polygon has no rings")
		}
		shells = append(shells, len(rings))
		for ri, ring := range poly {
			idx := append(append([]int(nil), prefix...), ri)
			vr, err := prepareRing(ring, idx)
			if err != nil {
				return err
			}
			vr.poly, vr.hole = pi, ri > 0
			rings = append(rings, vr)
		}
	}
	if err := checkIntersections(rings); err != nil {
		return err
	}
	return checkContainment(rings, shells)
}

// CheckRing applies the ring rule that site geometry (Validate) and source
// rows (ingest, before reprojection) share: at least 4 positions, each
// passing rule, closed, at least 3 distinct positions once consecutive
// repeats are dropped, enclosing an area (not all on one line, exactly).
// idx is the ring's index path within coordinates. It returns the ring
// without its consecutive repeats and, for each of its positions, the
// index in ring it came from.
func CheckRing(ring orb.Ring, idx []int, rule PositionRule) (pts []orb.Point, orig []int, err *ValidationError) {
	path := coordPath(idx...)
	if len(ring) < 4 {
		return nil, nil, invalid(path, "ring has %d positions; at least 4 are required", len(ring))
	}
	for i, p := range ring {
		if reason := rule(p); reason != "" {
			return nil, nil, &ValidationError{Path: pathAt(idx, i)(), Reason: reason}
		}
	}
	if ring[0] != ring[len(ring)-1] {
		return nil, nil, invalid(path, "ring is not closed: its last position must repeat the first")
	}
	pts, orig = make([]orb.Point, 0, len(ring)), make([]int, 0, len(ring))
	for i, p := range ring {
		if i > 0 && p == ring[i-1] {
			continue
		}
		pts = append(pts, p)
		orig = append(orig, i)
	}
	if len(pts) < 4 {
		return nil, nil, invalid(path, "ring has fewer than 3 distinct positions (zero area)")
	}
	if collinear(pts) {
		return nil, nil, invalid(path, "ring has zero area: all its positions are on one line")
	}
	return pts, orig, nil
}

func prepareRing(ring orb.Ring, idx []int) (*vring, *ValidationError) {
	pts, orig, err := CheckRing(ring, idx, sitePosition)
	if err != nil {
		return nil, err
	}
	return &vring{idx: idx, pts: pts, orig: orig, bound: ringBounds(pts)}, nil
}

// checkIntersections finds every pair of segments whose boxes meet with a
// packed R-tree and classifies them. Errors name the first offending pair
// in input order.
func checkIntersections(rings []*vring) *ValidationError {
	total := 0
	for _, r := range rings {
		total += r.segs()
	}
	segs := make([]segRef, 0, total)
	leaves := make([]box, 0, total)
	for ri, r := range rings {
		for k := 0; k < r.segs(); k++ {
			a, b := r.pts[k], r.pts[k+1]
			leaves = append(leaves, box{
				minX: math.Min(a[0], b[0]), minY: math.Min(a[1], b[1]),
				maxX: math.Max(a[0], b[0]), maxY: math.Max(a[1], b[1]),
				item: len(segs),
			})
			segs = append(segs, segRef{ri, k})
		}
	}
	ix := newSegIndex(leaves)
	type touch struct {
		s, t segRef
		at   orb.Point
	}
	var (
		touches []touch
		cands   []int
		stack   []int32
	)
	for s := range segs {
		cands, stack = ix.query(&leaves[s], cands[:0], stack)
		first, firstErr := -1, (*ValidationError)(nil)
		for _, t := range cands {
			if t <= s || (first >= 0 && t > first) {
				continue
			}
			kind, at := classifyPair(rings, segs[s], segs[t])
			switch {
			case kind == hitTouch && segs[s].ring != segs[t].ring:
				touches = append(touches, touch{segs[s], segs[t], at})
			case kind != hitNone:
				first, firstErr = t, pairError(rings, segs[s], segs[t], kind, at)
			}
		}
		if firstErr != nil {
			return firstErr
		}
	}
	for _, tc := range touches {
		if crossesAt(rings[tc.s.ring], tc.s.k, rings[tc.t.ring], tc.t.k, tc.at) {
			a, b := rings[tc.s.ring], rings[tc.t.ring]
			return invalid(a.path(), "ring crosses ring %s at (%s, %s)", b.path(), fmtNum(tc.at[0]), fmtNum(tc.at[1]))
		}
	}
	return nil
}

// classifyPair classifies two segments. For adjacent segments of one ring
// only doubling back counts (reported as hitOverlap); the shared vertex
// does not.
func classifyPair(rings []*vring, s, t segRef) (segHit, orb.Point) {
	r := rings[s.ring]
	if s.ring == t.ring {
		n := r.segs()
		var p, q, nx orb.Point
		switch {
		case t.k == s.k+1:
			p, q, nx = r.pts[s.k], r.pts[s.k+1], r.pts[t.k+1]
		case s.k == 0 && t.k == n-1:
			p, q, nx = r.pts[t.k], r.pts[0], r.pts[1]
		default:
			return segIntersect(r.pts[s.k], r.pts[s.k+1], r.pts[t.k], r.pts[t.k+1])
		}
		if orient(p, q, nx) == 0 && (q[0]-p[0])*(nx[0]-q[0])+(q[1]-p[1])*(nx[1]-q[1]) < 0 {
			return hitOverlap, q
		}
		return hitNone, orb.Point{}
	}
	u := rings[t.ring]
	return segIntersect(r.pts[s.k], r.pts[s.k+1], u.pts[t.k], u.pts[t.k+1])
}

func pairError(rings []*vring, s, t segRef, kind segHit, at orb.Point) *ValidationError {
	a, b := rings[s.ring], rings[t.ring]
	si, ti := a.orig[s.k], b.orig[t.k]
	where := fmt.Sprintf("(%s, %s)", fmtNum(at[0]), fmtNum(at[1]))
	if s.ring == t.ring {
		return invalid(a.path(), "ring self-intersects at segment %d and %d near %s", si, ti, where)
	}
	if kind == hitOverlap {
		return invalid(a.path(), "ring overlaps ring %s along segment %d and its segment %d near %s", b.path(), si, ti, where)
	}
	return invalid(a.path(), "ring crosses ring %s at segment %d and its segment %d near %s", b.path(), si, ti, where)
}

// crossesAt reports whether rings a and b, which touch at point p on
// segment ka of a and kb of b, cross there: b's two edges at p lie on
// different sides of a's two edges at p.
func crossesAt(a *vring, ka int, b *vring, kb int, p orb.Point) bool {
	a1, a2 := edgesAt(a, ka, p)
	b1, b2 := edgesAt(b, kb, p)
	base := math.Atan2(a1[1]-p[1], a1[0]-p[0])
	ang := func(q orb.Point) float64 {
		d := math.Atan2(q[1]-p[1], q[0]-p[0]) - base
		for d < 0 {
			d += 2 * math.Pi
		}
		for d >= 2*math.Pi {
			d -= 2 * math.Pi
		}
		return d
	}
	lim := ang(a2)
	in1, in2 := ang(b1), ang(b2)
	// Directions along a's own edges mean shared edges, reported as
	// overlaps elsewhere; they do not decide a crossing.
	if in1 == 0 || in1 == lim || in2 == 0 || in2 == lim {
		return false
	}
	return (in1 < lim) != (in2 < lim)
}

// edgesAt returns the neighbours of point p along ring r, p lying on
// segment k.
func edgesAt(r *vring, k int, p orb.Point) (orb.Point, orb.Point) {
	switch p {
	case r.pts[k]:
		return r.vertex(k - 1), r.pts[k+1]
	case r.pts[k+1]:
		return r.pts[k], r.vertex(k + 2)
	}
	return r.pts[k], r.pts[k+1]
}

// locateRing returns where ring r lies relative to ring of: decided by the
// first of r's positions, then of its edge midpoints, that is not on of's
// boundary. Without crossings and overlaps (checked before) one such point
// decides for the whole ring.
func locateRing(r, of *vring) pointLocation {
	if !of.bound.Contains(r.bound.Min) || !of.bound.Contains(r.bound.Max) {
		return locOutside
	}
	for _, p := range r.pts[:r.segs()] {
		if loc := locate(p, of.pts); loc != locBoundary {
			return loc
		}
	}
	for k := 0; k < r.segs(); k++ {
		a, b := r.pts[k], r.pts[k+1]
		if loc := locate(orb.Point{(a[0] + b[0]) / 2, (a[1] + b[1]) / 2}, of.pts); loc != locBoundary {
			return loc
		}
	}
	return locBoundary
}

func checkContainment(rings []*vring, shells []int) *ValidationError {
	for pi, si := range shells {
		end := len(rings)
		if pi+1 < len(shells) {
			end = shells[pi+1]
		}
		shell, holes := rings[si], rings[si+1:end]
		for i, h := range holes {
			if locateRing(h, shell) != locInside {
				return invalid(h.path(), "hole is not inside the exterior ring %s", shell.path())
			}
			for j, o := range holes {
				if i != j && locateRing(h, o) == locInside {
					return invalid(h.path(), "hole is inside another hole %s", o.path())
				}
			}
		}
	}
	for qi, sq := range shells {
		q := rings[sq]
		for pi, sp := range shells {
			if pi == qi || locateRing(q, rings[sp]) != locInside {
				continue
			}
			end := len(rings)
			if pi+1 < len(shells) {
				end = shells[pi+1]
			}
			inHole := false
			for _, h := range rings[sp+1 : end] {
				if locateRing(q, h) == locInside {
					inHole = true
					break
				}
			}
			if !inHole {
				return invalid(coordPath(qi), "polygon overlaps polygon %s", coordPath(pi))
			}
		}
	}
	return nil
}

// collinear reports whether all positions of pts lie on one line (exactly):
// a ring enclosing no area. Other rings that enclose none self-intersect.
func collinear(pts []orb.Point) bool {
	a, b := pts[0], pts[1]
	for _, p := range pts[2:] {
		if orient(a, b, p) != 0 {
			return false
		}
	}
	return true
}
