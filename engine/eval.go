package engine

import (
	"math"

	"github.com/paulmach/orb"

	"github.com/tidwall/geodesic"

	"siteenv/geo"
)

// Exact membership.
//
// A feature is within r metres of the site when the geodesic distance
// between them (WGS 84, Karney) is at most r, edges of both being
// geodesics, as for PostGIS geography; it is 0 when they intersect (a point
// inside a polygon, crossing lines, a polygon inside another).
//
// Each site part is projected with a site-centred geo.Local (azimuthal
// equidistant, centred within ~1 km of the part, see Engine.local); the
// feature's positions near the part are projected on the fly and the planar
// distance d between the part and the feature is computed with its closest
// pair (p on the site, q on the feature). Following geo.Local's recipe, with
// e = ErrorBound(p, q) (a bound on |d - geodesic distance of p and q|):
//
//	d + e <= r: inside;  d - e > r: outside;
//	otherwise the geodesic distance of the pair (Local.Inverse, then
//	geo.Distance) decides.
//
// Feature edges are geodesics, whose image in the projection bows away from
// the chord by at most sagitta(); an edge bowing more than chordTolerance
// (0.1 mm; edges longer than a few kilometres near the site) is cut along
// the geodesic before measuring. Containment (distance 0 without the
// boundaries meeting) is decided by point-in-polygon tests with geodesic
// edges (pip.go), exact up to floating point.
//
// Residual approximation: decisions within the error band use an exact
// geodesic distance, so what remains is (1) chords standing for geodesic
// feature edges, under 0.1 mm; (2) chords standing for site edges, whose
// sagitta in the site's own projection is at most h*d^2/(12 R^2) for an
// edge of length d at distance h from the centre: under 0.15 mm for any
// site whose positions lie within partRadius (2.5 km) of the centre (a
// longer site is split into parts with edges of at most 2 km: under
// 0.04 mm); (3) the refined pair being the planar closest pair rather than
// the geodesic one, which changes the distance by about e^2/d (nanometres);
// (4) the projection's fit, far below a micrometre; (5) touchTolerance.
// Membership therefore agrees with the geodesic truth for every feature
// farther than about 0.3 mm from the search boundary (the contract asks for
// 1 cm; the tests probe at 1 mm). DistanceM is the planar distance when
// e <= 0.1 mm and the refined geodesic distance otherwise, with the same
// residual. Not supported: geometries crossing the antimeridian.

const (
	// chordTolerance is the largest sagitta at which a geodesic edge is
	// measured as its chord.
	chordTolerance = 1e-4
	// refineAbove: distances whose error bound exceeds this are replaced
	// by the geodesic distance of the closest pair.
	refineAbove = 1e-4
	// maxEdgeCuts bounds the pieces a long edge is cut into.
	maxEdgeCuts = 4096
	// touchTolerance: geometries closer than this (1 micrometre) touch.
	// Floating point cannot place a point exactly on a line between two
	// vertices; within a micrometre it counts as on it, so radius 0 finds
	// the point features lying on a line site and the lines through a
	// point site.
	touchTolerance = 1e-6
)

// evaluator tests features against one site and radius. It holds reusable
// buffers and belongs to one goroutine.
type evaluator struct {
	s     *site
	r     float64
	limit float64     // planar distances beyond this are not tracked
	boxes []orb.Bound // per part: search box (longitude, latitude)
	union orb.Bound   // of boxes
	res   []near
	sub   []orb.Point
	fg    flat
	cands []int32
	z     sizer
	// metrics: per part, lower bounds of metres per degree around its
	// search box (degMetric); noLower turns their use off (tests).
	metrics []degMetric
	noLower bool
	// lowerSkips counts the edges degMetric's bound skipped (tests).
	lowerSkips int
	// walkQueue is edgeWalk's queue (edgeindex.go).
	walkQueue []walkItem
	// wkbScratch holds a packed geometry expanded (packed.go).
	wkbScratch []byte
}

func newEvaluator(s *site, r float64) *evaluator {
	ev := &evaluator{s: s, r: r, limit: r + 0.05}
	ev.boxes = make([]orb.Bound, len(s.parts))
	ev.metrics = make([]degMetric, len(s.parts))
	ev.res = make([]near, len(s.parts))
	for k, pt := range s.parts {
		ev.boxes[k] = padBox(pt.box, r)
		ev.metrics[k] = newDegMetric(ev.boxes[k])
		if k == 0 {
			ev.union = ev.boxes[k]
		} else {
			ev.union = ev.union.Union(ev.boxes[k])
		}
	}
	return ev
}

// fork returns an evaluator for another worker of the same query: the
// site, radius, search boxes and metrics (read only) shared, its own
// scratch buffers.
func (ev *evaluator) fork() *evaluator {
	return &evaluator{s: ev.s, r: ev.r, limit: ev.limit, boxes: ev.boxes, union: ev.union, metrics: ev.metrics,
		noLower: ev.noLower, res: make([]near, len(ev.res))}
}

// point evaluates a feature that is a single point.
func (ev *evaluator) point(v orb.Point) (bool, float64) {
	for k, pt := range ev.s.parts {
		ev.res[k] = near{d: ev.limit}
		if !ev.boxes[k].Contains(v) {
			continue
		}
		q := pt.loc.ForwardPoint(v)
		pt.nearPoint(q, &ev.res[k])
		if ev.res[k].found && ev.res[k].d == 0 {
			return true, 0
		}
	}
	if ev.s.area != nil && ev.s.area.contains(v) {
		return true, 0
	}
	return ev.decide()
}

// feature evaluates the geometry in f.
func (ev *evaluator) feature(f *flat) (bool, float64) { return ev.featureWith(f, nil) }

// heavy evaluates a feature decoded and indexed at shard load.
func (ev *evaluator) heavy(hg *heavyGeom) (bool, float64) { return ev.featureWith(&hg.f, hg) }

// featureWith evaluates f; hg, when not nil, is f's edge index, which
// containment and distances then use instead of every edge.
func (ev *evaluator) featureWith(f *flat, hg *heavyGeom) (bool, float64) {
	var gb orb.Bound
	var m float64
	if hg != nil {
		gb, m = hg.gb, hg.m
	} else {
		gb, m = featureBox(f)
	}
	// Containment first: it decides distance 0 without projecting
	// anything, and large features often hold the site.
	if ev.s.area != nil && f.box.Intersects(ev.s.area.box) {
		for _, i := range f.comps {
			if ev.s.area.contains(f.pts[i]) {
				return true, 0
			}
		}
	}
	if f.hasArea() {
		for _, u := range ev.s.comps {
			if !gb.Contains(u) {
				continue
			}
			if hg != nil && hg.contains(u) || hg == nil && flatContains(f, u) {
				return true, 0
			}
		}
	}
	for k := range ev.s.parts {
		ev.res[k] = near{d: ev.limit}
		if !gb.Intersects(ev.boxes[k]) {
			continue
		}
		if hg != nil {
			ev.partDistanceIndexed(k, hg, &ev.res[k])
		} else {
			ev.partDistance(k, f, m, &ev.res[k])
		}
		if ev.res[k].found && ev.res[k].d == 0 {
			return true, 0
		}
	}
	return ev.decide()
}

// featureBox returns f's box widened by the bulge of its geodesic edges
// and, when that bulge is small, the bulge itself, a bound for every edge
// (bulgeWith grows with both spans, so the largest spans bound any edge);
// m < 0 means edges need their own bounds.
func featureBox(f *flat) (orb.Bound, float64) {
	if len(f.elems) == 1 && f.elems[0].kind == elemPoint {
		return f.box, 0
	}
	scale := boundScale(f.box)
	m := bulgeWith(f.box.Min, f.box.Max, scale)
	if m > maxSharedBulge {
		var dl, dp float64
		for _, e := range f.elems {
			if e.kind == elemPoint {
				continue
			}
			for i := e.start; i+1 < e.end; i++ {
				a, b := f.pts[i], f.pts[i+1]
				if v := math.Abs(a[0] - b[0]); v > dl {
					dl = v
				}
				if v := math.Abs(a[1] - b[1]); v > dp {
					dp = v
				}
			}
		}
		m = bulgeWith(orb.Point{0, 0}, orb.Point{dl, dp}, scale)
	}
	if m <= maxSharedBulge {
		return padDeg(f.box, m), m
	}
	return padDeg(f.box, m), -1
}

// maxSharedBulge (degrees, ~10 m) is the largest box bulge partDistance
// uses for every edge of a geometry instead of bounding each edge: it only
// widens the boxes that prune edges.
const maxSharedBulge = 1e-4

// decide turns the per-part closest pairs into membership and distance.
func (ev *evaluator) decide() (bool, float64) {
	member := false
	best := math.Inf(1)
	for k, pt := range ev.s.parts {
		n := &ev.res[k]
		if !n.found {
			continue
		}
		e := pt.loc.ErrorBound(n.p, n.q)
		var d float64
		switch {
		case n.d-e > ev.r+touchTolerance:
			continue
		case n.d+e <= ev.r:
			d = n.d
			if e > refineAbove {
				d = refine(pt.loc, n)
			}
		default:
			d = refine(pt.loc, n)
		}
		if d <= touchTolerance {
			d = 0
		}
		if d > ev.r {
			continue
		}
		member = true
		best = math.Min(best, d)
	}
	return member, best
}

func refine(l geo.Local, n *near) float64 {
	return geo.Distance(l.Inverse(n.p[0], n.p[1]), l.Inverse(n.q[0], n.q[1]))
}

// partDistance offers to best the distance from part k to the feature's
// positions and edges inside the part's search box; m is f's shared edge
// bulge from featureBox (m < 0: bound each edge).
//
// It first offers the position of f nearest the part (judged cheaply in
// degrees), a true distance, and then skips every position and edge whose
// box lies farther than best.d from the part's box: in the usual case only
// the few edges around the closest point are projected and measured.
func (ev *evaluator) partDistance(k int, f *flat, m float64, best *near) {
	pt := ev.s.parts[k]
	sb := ev.boxes[k]
	scale := boundScale(f.box)

	c := pt.box.Center()
	cosLat := math.Cos(c[1] * deg)
	seed, seedD := int32(-1), math.Inf(1)
	for _, e := range f.elems {
		for i := e.start; i < e.end; i++ {
			v := f.pts[i]
			if !inBox(&sb, v) {
				continue
			}
			dx, dy := (v[0]-c[0])*cosLat, v[1]-c[1]
			if d := dx*dx + dy*dy; d < seedD {
				seed, seedD = i, d
			}
		}
	}
	// Features near the site lie wholly in the projection's fitted square:
	// one test for all their positions.
	fitted := pt.loc.FittedBound(f.box)
	if seed >= 0 && (fitted || pt.loc.Fitted(f.pts[seed])) {
		pt.nearPoint(pt.loc.ForwardPoint(f.pts[seed]), best)
		if best.found && best.d == 0 {
			return
		}
	}
	prune, pruneD := sb, best.d
	if best.found {
		prune = padBox(pt.box, best.d)
	}
	// Edges are also skipped by a lower bound of their geodesic distance
	// from the part (degMetric): a disk of radius best.d around the part
	// where the prune box is a square padded by best.d. A small feature far
	// from a small part lies wholly in the square; the disk keeps only the
	// edges facing the part within metres of the best distance so far.
	dm := &ev.metrics[k]
	lower := m >= 0 && !ev.noLower && dm.holds(f.box)
	pb := &pt.box

	for _, e := range f.elems {
		if e.kind == elemPoint {
			for i := e.start; i < e.end; i++ {
				v := f.pts[i]
				if inBox(&prune, v) {
					pt.nearPoint(pt.loc.ForwardPoint(v), best)
				}
			}
			continue
		}
		prevIdx := int32(-1)
		var prev orb.Point
		// With a shared bulge, each position gets an outcode against the
		// prune box widened by it, and an edge whose ends are both beyond
		// the same side is skipped: one code per position, not a box per
		// edge.
		var wide orb.Bound
		var codeA uint8
		if m >= 0 {
			wide = padDeg(prune, m)
			codeA = outcode(&wide, f.pts[e.start])
		}
		for i := e.start; i+1 < e.end; i++ {
			A, B := f.pts[i], f.pts[i+1]
			if m >= 0 {
				codeB := outcode(&wide, B)
				skip := codeA&codeB != 0
				codeA = codeB
				if skip {
					continue
				}
			} else if !edgeMeets(A, B, bulgeWith(A, B, scale), &prune) {
				continue
			}
			if lower {
				gx, gy := boxGap(A[0], B[0], pb.Min[0], pb.Max[0], m)*dm.kx, boxGap(A[1], B[1], pb.Min[1], pb.Max[1], m)*dm.ky
				if lim := best.d + lowerMargin; gx*gx+gy*gy > lim*lim {
					ev.lowerSkips++
					continue
				}
			}
			if !fitted && (!pt.loc.Fitted(A) || !pt.loc.Fitted(B)) {
				ev.farEdge(pt, A, B, best)
				prevIdx = -1
			} else {
				a := prev
				if prevIdx != i {
					a = pt.loc.ForwardPoint(A)
				}
				b := pt.loc.ForwardPoint(B)
				prevIdx, prev = i+1, b
				ev.edge(pt, A, B, a, b, best)
			}
			if best.found {
				if best.d == 0 {
					return
				}
				if best.d < 0.9*pruneD {
					prune, pruneD = padBox(pt.box, best.d), best.d
					if m >= 0 {
						wide = padDeg(prune, m)
						codeA = outcode(&wide, B)
					}
				}
			}
		}
	}
}

// boxGap is the gap along one axis between the span of a and b widened by
// m and the span lo..hi (0 when they overlap). Plain comparisons: the
// positions are finite, and math.Min and math.Max are calls here.
func boxGap(a, b, lo, hi, m float64) float64 {
	if a > b {
		a, b = b, a
	}
	if g := a - m - hi; g > 0 {
		return g
	}
	if g := lo - b - m; g > 0 {
		return g
	}
	return 0
}

// outcode says on which sides of b point p lies (0: inside).
func outcode(b *orb.Bound, p orb.Point) uint8 {
	var c uint8
	if p[0] < b.Min[0] {
		c |= 1
	} else if p[0] > b.Max[0] {
		c |= 2
	}
	if p[1] < b.Min[1] {
		c |= 4
	} else if p[1] > b.Max[1] {
		c |= 8
	}
	return c
}

// inBox reports whether p lies in b (b not empty).
func inBox(b *orb.Bound, p orb.Point) bool {
	return p[0] >= b.Min[0] && p[0] <= b.Max[0] && p[1] >= b.Min[1] && p[1] <= b.Max[1]
}

// edgeMeets reports whether the box of the edge A-B widened by m degrees
// meets b.
func edgeMeets(A, B orb.Point, m float64, b *orb.Bound) bool {
	return math.Min(A[0], B[0])-m <= b.Max[0] && math.Max(A[0], B[0])+m >= b.Min[0] &&
		math.Min(A[1], B[1])-m <= b.Max[1] && math.Max(A[1], B[1])+m >= b.Min[1]
}

// edge offers the distance from the part to the geodesic edge A-B,
// projected as a-b.
func (ev *evaluator) edge(pt *part, A, B, a, b orb.Point, best *near) {
	if chordFits(a, b) {
		pt.nearSeg(a, b, best)
		return
	}
	sag := sagitta(a, b)
	if sag <= chordTolerance { // rounding may put the two tests either side
		pt.nearSeg(a, b, best)
		return
	}
	sb := segPBox(a, b)
	if pt.pb.dist(&sb)-sag >= best.d {
		return
	}
	n := int(math.Ceil(math.Sqrt(sag / chordTolerance)))
	n = min(n, maxEdgeCuts)
	ev.sub = geodesicPoints(ev.sub[:0], A, B, n)
	prev := a
	for _, v := range ev.sub {
		c := pt.loc.ForwardPoint(v)
		pt.nearSeg(prev, c, best)
		prev = c
	}
	pt.nearSeg(prev, b, best)
}

// farReachMargin (metres) covers the difference between planar and
// geodesic distances within the fitted square (millimetres) in farEdge's
// pruning.
const farReachMargin = 1.0

// farEdge offers the distance from the part to the geodesic edge A-B, an
// end of which lies outside the part's fitted projection (a long coverage
// or polygon edge passing by). Projecting such ends exactly and cutting
// the whole edge into chords would cost thousands of geodesic solutions for
// an edge hundreds of kilometres long; instead the edge is bisected along
// the geodesic and a piece is dropped as soon as the triangle inequality
// shows every point of it is farther from the projection's centre C than
// anything within best.d of the part: for a piece P-Q of length L, every
// point X on it has |CX| >= (|CP| + |CQ| - L)/2. Pieces that survive with
// both ends in the fitted square are measured by edge as usual.
func (ev *evaluator) farEdge(pt *part, A, B orb.Point, best *near) {
	c := pt.loc.Center()
	line := geodesic.WGS84.InverseLine(A[1], A[0], B[1], B[0], geodesic.Latitude|geodesic.Longitude|geodesic.DistanceIn)
	ev.farPiece(pt, &line, c, 0, line.S13(), A, B, geo.Distance(c, A), geo.Distance(c, B), best, 0)
}

// farMinPiece: pieces shorter than this are measured directly (projected
// exactly if need be) rather than bisected further.
const farMinPiece = 200.0

func (ev *evaluator) farPiece(pt *part, line *geodesic.Line, c orb.Point, s0, s1 float64, P, Q orb.Point, dP, dQ float64, best *near, depth int) {
	reach := pt.extent + best.d + farReachMargin
	if (dP+dQ-(s1-s0))/2 > reach {
		return
	}
	if (pt.loc.Fitted(P) && pt.loc.Fitted(Q)) || s1-s0 <= farMinPiece || depth >= 40 {
		ev.edge(pt, P, Q, pt.loc.ForwardPoint(P), pt.loc.ForwardPoint(Q), best)
		return
	}
	m := (s0 + s1) / 2
	var lat, lon float64
	line.Position(m, &lat, &lon, nil)
	M := orb.Point{lon, lat}
	dM := geo.Distance(c, M)
	// The nearer half first: its distance shrinks best.d for the other.
	if dP <= dQ {
		ev.farPiece(pt, line, c, s0, m, P, M, dP, dM, best, depth+1)
		if best.found && best.d == 0 {
			return
		}
		ev.farPiece(pt, line, c, m, s1, M, Q, dM, dQ, best, depth+1)
	} else {
		ev.farPiece(pt, line, c, m, s1, M, Q, dM, dQ, best, depth+1)
		if best.found && best.d == 0 {
			return
		}
		ev.farPiece(pt, line, c, s0, m, P, M, dP, dM, best, depth+1)
	}
}
