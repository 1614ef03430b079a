package geo

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/paulmach/orb"
)

// MakeValid returns a valid (by Validate) Polygon or MultiPolygon covering
// what the polygonal geometry g covers by the even-odd rule, as PostGIS
// ST_MakeValid does by default (method "linework"): the rings' linework is
// noded at every intersection, the planar faces it bounds are built, and a
// face is kept when a point inside it is enclosed by an odd number of the
// input's rings. A bowtie becomes two triangles meeting at a point; two
// overlapping polygons of a MultiPolygon keep their symmetric difference,
// as in PostGIS. Positions are in the plane of x, y (longitude, latitude),
// as for Validate. ok is false when g is not polygonal or nothing of
// positive area is left (PostGIS would return lines or points), or when
// floating point defeats the noding and the result would not be valid
// (rare: crossings nanometres apart). Safe for concurrent use.
func MakeValid(g orb.Geometry) (out orb.Geometry, ok bool) {
	var polys []orb.Polygon
	switch g := g.(type) {
	case orb.Polygon:
		polys = []orb.Polygon{g}
	case orb.MultiPolygon:
		polys = g
	default:
		return nil, false
	}
	var segs []mvSeg
	for _, p := range polys {
		for _, r := range p {
			for i := 0; i+1 < len(r); i++ {
				if r[i] != r[i+1] && finitePoint(r[i]) && finitePoint(r[i+1]) {
					segs = append(segs, mvSeg{r[i], r[i+1]})
				}
			}
			// An unclosed ring is closed, as PostGIS does.
			if n := len(r); n > 1 && r[0] != r[n-1] && finitePoint(r[0]) && finitePoint(r[n-1]) {
				segs = append(segs, mvSeg{r[n-1], r[0]})
			}
		}
	}
	edges := nodeSegments(segs)
	bnd := boundaryEdges(edges)
	shells, holes := traceRings(bnd)
	if len(shells) == 0 {
		return nil, false
	}
	out = assemble(shells, holes)
	// Floating point can still defeat the noding (crossings nanometres
	// apart): a result Validate refuses is no repair.
	if Validate(out, 0) != nil {
		return nil, false
	}
	return out, true
}

func finitePoint(p orb.Point) bool {
	return !math.IsNaN(p[0]) && !math.IsInf(p[0], 0) && !math.IsNaN(p[1]) && !math.IsInf(p[1], 0)
}

type mvSeg struct{ a, b orb.Point }

// mvEdge is an undirected noded edge (a < b lexicographically) and how many
// input segments cover it.
type mvEdge struct {
	a, b orb.Point
	n    int
}

// nodeSegments splits every segment at every point where another touches,
// crosses or overlaps it, and merges identical pieces, counting them. A
// crossing point is computed once and shared by both segments, so the
// pieces meet exactly. Crossing points are rounded to floating point, so a
// piece may then cross another that the exact point would not: noding is
// repeated on the pieces (their counts kept) until nothing splits, at most
// maxNodingPasses times.
func nodeSegments(segs []mvSeg) []mvEdge {
	edges := make([]mvEdge, 0, len(segs))
	for _, s := range segs {
		a, b := s.a, s.b
		if lessPoint(b, a) {
			a, b = b, a
		}
		edges = append(edges, mvEdge{a, b, 1})
	}
	sn := newSnapper()
	for _, e := range edges {
		sn.add(e.a)
		sn.add(e.b)
	}
	for range maxNodingPasses {
		var split bool
		if edges, split = nodeOnce(edges, sn); !split {
			break
		}
	}
	return edges
}

const maxNodingPasses = 8

// snapDeg is how close (degrees, about 0.1 mm) a computed crossing point
// must be to a vertex, or to another crossing point, to become it: nearly
// parallel segments otherwise make clusters of crossing points a few ULPs
// apart whose pieces cross again.
const snapDeg = 1e-9

// snapper finds the vertex within snapDeg of a point, on a grid of cells
// snapDeg wide.
type snapper struct{ cells map[[2]int64][]orb.Point }

func newSnapper() *snapper { return &snapper{cells: map[[2]int64][]orb.Point{}} }

func snapCell(p orb.Point) [2]int64 {
	return [2]int64{int64(math.Floor(p[0] / snapDeg)), int64(math.Floor(p[1] / snapDeg))}
}

func (sn *snapper) add(p orb.Point) {
	c := snapCell(p)
	for _, q := range sn.cells[c] {
		if q == p {
			return
		}
	}
	sn.cells[c] = append(sn.cells[c], p)
}

// snap returns the known point within snapDeg of p, or p (then known).
func (sn *snapper) snap(p orb.Point) orb.Point {
	c := snapCell(p)
	best, bestD := p, math.Inf(1)
	for dx := int64(-1); dx <= 1; dx++ {
		for dy := int64(-1); dy <= 1; dy++ {
			for _, q := range sn.cells[[2]int64{c[0] + dx, c[1] + dy}] {
				if d := math.Max(math.Abs(q[0]-p[0]), math.Abs(q[1]-p[1])); d <= snapDeg && d < bestD {
					best, bestD = q, d
				}
			}
		}
	}
	if bestD == math.Inf(1) {
		sn.add(p)
	}
	return best
}

// nodeOnce is one noding pass; split reports whether any edge was split.
func nodeOnce(in []mvEdge, sn *snapper) (out []mvEdge, split bool) {
	leaves := make([]box, len(in))
	for i, s := range in {
		leaves[i] = box{
			minX: math.Min(s.a[0], s.b[0]), minY: math.Min(s.a[1], s.b[1]),
			maxX: math.Max(s.a[0], s.b[0]), maxY: math.Max(s.a[1], s.b[1]),
			item: i,
		}
	}
	cuts := make([][]orb.Point, len(in))
	cut := func(i int, p orb.Point) {
		if p != in[i].a && p != in[i].b {
			cuts[i] = append(cuts[i], p)
			split = true
		}
	}
	if len(in) > 0 {
		ix := newSegIndex(leaves)
		var cands []int
		var stack []int32
		for i := range in {
			cands, stack = ix.query(&leaves[i], cands[:0], stack)
			for _, j := range cands {
				if j <= i {
					continue
				}
				s, t := in[i], in[j]
				kind, at := segIntersect(s.a, s.b, t.a, t.b)
				switch kind {
				case hitCross:
					at = sn.snap(at)
					cut(i, at)
					cut(j, at)
				case hitTouch:
					cut(i, at)
					cut(j, at)
				case hitOverlap:
					for _, p := range []orb.Point{t.a, t.b} {
						if between(s.a, s.b, p) {
							cut(i, p)
						}
					}
					for _, p := range []orb.Point{s.a, s.b} {
						if between(t.a, t.b, p) {
							cut(j, p)
						}
					}
				}
			}
		}
	}
	count := map[[2]orb.Point]int{}
	var order [][2]orb.Point
	for i, s := range in {
		pts := append([]orb.Point{s.a, s.b}, cuts[i]...)
		a := s.a
		sort.Slice(pts, func(x, y int) bool { return dist2(a, pts[x]) < dist2(a, pts[y]) })
		for k := 0; k+1 < len(pts); k++ {
			p, q := pts[k], pts[k+1]
			if p == q {
				continue
			}
			if lessPoint(q, p) {
				p, q = q, p
			}
			key := [2]orb.Point{p, q}
			if count[key] == 0 {
				order = append(order, key)
			}
			count[key] += s.n
		}
	}
	out = make([]mvEdge, len(order))
	for i, k := range order {
		out[i] = mvEdge{k[0], k[1], count[k]}
	}
	return out, split
}

func dist2(p, q orb.Point) float64 {
	dx, dy := p[0]-q[0], p[1]-q[1]
	return dx*dx + dy*dy
}

// boundaryEdges keeps the edges covered an odd number of times (the two
// sides of an edge covered an even number of times are alike) and orients
// each with the covered side, the one of odd parity, on its left. The
// parity of a side is the parity of the edges a ray from the edge's
// midpoint into that side crosses.
func boundaryEdges(edges []mvEdge) [][2]orb.Point {
	leaves := make([]box, len(edges))
	for i, e := range edges {
		leaves[i] = box{minX: e.a[0], maxX: e.b[0], minY: math.Min(e.a[1], e.b[1]), maxY: math.Max(e.a[1], e.b[1]), item: i}
	}
	var ix *segIndex
	if len(edges) > 0 {
		ix = newSegIndex(leaves)
	}
	var cands []int
	var stack []int32
	var out [][2]orb.Point
	for i, e := range edges {
		if e.n%2 == 0 {
			continue
		}
		m := orb.Point{(e.a[0] + e.b[0]) / 2, (e.a[1] + e.b[1]) / 2}
		var parity int
		var plusIsLeft bool // the side the ray goes into is left of a->b
		if e.a[1] != e.b[1] {
			// Ray towards +x. Left of a->b is +x when b is below a.
			cands, stack = ix.query(&box{minX: m[0], maxX: math.Inf(1), minY: m[1], maxY: m[1]}, cands[:0], stack)
			for _, j := range cands {
				if j == i {
					continue
				}
				u, v := edges[j].a, edges[j].b
				if (u[1] > m[1]) != (v[1] > m[1]) {
					x := u[0] + (m[1]-u[1])*(v[0]-u[0])/(v[1]-u[1])
					if x > m[0] {
						parity += edges[j].n
					}
				}
			}
			plusIsLeft = e.b[1] < e.a[1]
		} else {
			// Horizontal: ray towards +y. Left of a->b (a.x < b.x) is +y.
			cands, stack = ix.query(&box{minX: m[0], maxX: m[0], minY: m[1], maxY: math.Inf(1)}, cands[:0], stack)
			for _, j := range cands {
				if j == i {
					continue
				}
				u, v := edges[j].a, edges[j].b
				if (u[0] > m[0]) != (v[0] > m[0]) {
					y := u[1] + (m[0]-u[0])*(v[1]-u[1])/(v[0]-u[0])
					if y > m[1] {
						parity += edges[j].n
					}
				}
			}
			plusIsLeft = true
		}
		leftIn := (parity%2 == 1) == plusIsLeft
		if leftIn {
			out = append(out, [2]orb.Point{e.a, e.b})
		} else {
			out = append(out, [2]orb.Point{e.b, e.a})
		}
	}
	return out
}

// traceRings chains directed boundary edges (covered side on the left)
// into closed rings: at each vertex the walk takes the outgoing edge met
// first turning clockwise from the way it came, so that it follows one face
// and rings that meet at a point stay apart. Counter-clockwise rings are
// shells, clockwise ones holes.
func traceRings(edges [][2]orb.Point) (shells, holes []orb.Ring) {
	outOf := map[orb.Point][]int{}
	for i, e := range edges {
		outOf[e[0]] = append(outOf[e[0]], i)
	}
	used := make([]bool, len(edges))
	for start := range edges {
		if used[start] {
			continue
		}
		ring := orb.Ring{edges[start][0]}
		cur := start
		for !used[cur] {
			used[cur] = true
			from, at := edges[cur][0], edges[cur][1]
			ring = append(ring, at)
			back := math.Atan2(from[1]-at[1], from[0]-at[0])
			best, bestTurn := -1, math.Inf(1)
			for _, j := range outOf[at] {
				if used[j] && j != start {
					continue
				}
				to := edges[j][1]
				// Clockwise angle from the way back to the way out, in (0, 2pi].
				turn := back - math.Atan2(to[1]-at[1], to[0]-at[0])
				for turn <= 0 {
					turn += 2 * math.Pi
				}
				for turn > 2*math.Pi {
					turn -= 2 * math.Pi
				}
				if turn < bestTurn {
					best, bestTurn = j, turn
				}
			}
			if best < 0 || best == start {
				break
			}
			cur = best
		}
		if len(ring) < 4 || ring[0] != ring[len(ring)-1] {
			continue // not closed: only when noding failed in floating point
		}
		// A face whose boundary passes a vertex twice (a hole touching its
		// shell, two lobes meeting at a point) is split there: OGC rings do
		// not touch themselves.
		for _, part := range splitRing(ring) {
			part = dropStraightVertices(part)
			if len(part) < 4 {
				continue
			}
			switch a := signedArea2(part); {
			case a > 0:
				shells = append(shells, part)
			case a < 0:
				holes = append(holes, part)
			}
		}
	}
	return shells, holes
}

// assemble puts each hole in the smallest shell holding it and returns a
// Polygon, or a MultiPolygon when there are several shells.
func assemble(shells, holes []orb.Ring) orb.Geometry {
	slices.SortStableFunc(shells, func(a, b orb.Ring) int {
		return -cmp.Compare(math.Abs(signedArea2(a)), math.Abs(signedArea2(b)))
	})
	polys := make([]orb.Polygon, len(shells))
	for i, s := range shells {
		polys[i] = orb.Polygon{s}
	}
	for _, h := range holes {
		owner := -1
		for i := len(shells) - 1; i >= 0; i-- { // smallest first
			if ringInside(h, shells[i]) {
				owner = i
				break
			}
		}
		if owner >= 0 {
			polys[owner] = append(polys[owner], h)
		}
	}
	if len(polys) == 1 {
		return polys[0]
	}
	return orb.MultiPolygon(polys)
}

// ringInside reports whether ring r lies inside ring of, decided by its
// first vertex, or edge midpoint, not on of's boundary.
func ringInside(r, of orb.Ring) bool {
	for _, p := range r {
		if loc := locate(p, of); loc != locBoundary {
			return loc == locInside
		}
	}
	for k := 0; k+1 < len(r); k++ {
		m := orb.Point{(r[k][0] + r[k+1][0]) / 2, (r[k][1] + r[k+1][1]) / 2}
		if loc := locate(m, of); loc != locBoundary {
			return loc == locInside
		}
	}
	return false
}
