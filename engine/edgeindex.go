package engine

import (
	"math"
	"slices"

	"github.com/paulmach/orb"
)

// Heavy features: per-feature edge indexes.
//
// State layers (flood planning, bushfire prone land, vegetation) hold
// polygons of thousands to hundreds of thousands of vertices. Evaluating
// such a candidate the plain way costs O(vertices) per query whatever the
// answer: decoding its WKB, seeding over every position, an outcode per
// position, and a crossing test per ring edge for containment. A feature
// with at least edgeIndexMinVertices positions (lines and rings only) is
// therefore decoded once, when its shard loads, and kept as a heavyGeom:
// its flat positions and a static packed tree over its edges. Leaves hold
// edgeLeaf consecutive edges of one element (consecutive edges are
// neighbours, so leaves are compact); nodes hold edgeFanout consecutive
// nodes of the level below. Every box covers its edges' geodesics (each
// edge's box widened by its bulge) and is rounded outwards to float32.
//
// A query then visits only the tree nodes that can hold an edge nearer than
// the best distance so far (nearest first, with the same conservative tests
// partDistance applies per edge: the prune box and degMetric's lower
// bound), and counts ray crossings only over the leaves that reach the
// ray's parallel east of the point. Both prune only what provably cannot
// change the answer, so results are those of the plain path (a test holds
// them equal); feature identity is unchanged (nothing is subdivided).
//
// Memory: the positions (16 bytes each) and about 3.5 bytes of tree per
// edge, besides the WKB the tile keeps: the shard's bytes count both.

const (
	// edgeIndexMinVertices is the fewest positions for which a feature
	// gets an edge index. Below it the plain path costs microseconds.
	edgeIndexMinVertices = 256
	// minHeavyWKB: a WKB this short holds too few positions to have an
	// edge index under any threshold (the tests lower it to 2).
	minHeavyWKB = 2 * 16
	edgeLeaf    = 8
	edgeFanout  = 8
)

// heavyGeom is a decoded feature with an edge index. Immutable once built,
// safe for concurrent queries.
type heavyGeom struct {
	f      flat
	gb     orb.Bound // featureBox(&f)
	m      float64
	scale  float64
	levels [][]ebox // levels[0]: leaves; the last level holds the root
}

// ebox is a box of a leaf (edges lo..hi-1 of f, edge i joining positions
// i and i+1, all of one element; poly is the element's polygon or -1 for
// a line) or of a node (children lo..hi-1 of the level below).
type ebox struct {
	minX, minY, maxX, maxY float32
	lo, hi                 int32
	poly                   int32
}

// newHeavyGeom decodes w and indexes its edges; nil when w does not call
// for it (few positions, or isolated points).
func newHeavyGeom(w []byte, minVertices int) (*heavyGeom, error) {
	var tmp flat
	if err := tmp.decodeWKB(w); err != nil {
		return nil, err
	}
	if len(tmp.pts) < minVertices {
		return nil, nil
	}
	for _, e := range tmp.elems {
		if e.kind == elemPoint {
			return nil, nil
		}
	}
	hg := &heavyGeom{f: flat{
		pts: slices.Clip(tmp.pts), elems: slices.Clone(tmp.elems), comps: slices.Clone(tmp.comps),
		polys: tmp.polys, box: tmp.box,
	}}
	hg.gb, hg.m = featureBox(&hg.f)
	hg.scale = boundScale(hg.f.box)
	hg.build()
	return hg, nil
}

func (hg *heavyGeom) build() {
	f := &hg.f
	edges := 0
	for _, e := range f.elems {
		edges += int(e.end - e.start - 1)
	}
	leaves := make([]ebox, 0, edges/edgeLeaf+len(f.elems))
	for _, e := range f.elems {
		for lo := e.start; lo+1 < e.end; lo += edgeLeaf {
			hi := min(lo+edgeLeaf, e.end-1)
			minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
			for i := lo; i < hi; i++ {
				b := edgeBox(f.pts[i], f.pts[i+1], hg.scale)
				minX, minY = math.Min(minX, b.Min[0]), math.Min(minY, b.Min[1])
				maxX, maxY = math.Max(maxX, b.Max[0]), math.Max(maxY, b.Max[1])
			}
			poly := e.poly
			if e.kind != elemRing {
				poly = -1
			}
			leaves = append(leaves, ebox{down(minX), down(minY), up(maxX), up(maxY), lo, hi, poly})
		}
	}
	hg.levels = [][]ebox{leaves}
	level := leaves
	for len(level) > 1 {
		upper := make([]ebox, 0, (len(level)+edgeFanout-1)/edgeFanout)
		for i := 0; i < len(level); i += edgeFanout {
			j := min(i+edgeFanout, len(level))
			b := level[i]
			for _, c := range level[i+1 : j] {
				b.minX, b.minY = min(b.minX, c.minX), min(b.minY, c.minY)
				b.maxX, b.maxY = max(b.maxX, c.maxX), max(b.maxY, c.maxY)
			}
			b.lo, b.hi, b.poly = int32(i), int32(j), -1
			upper = append(upper, b)
		}
		hg.levels = append(hg.levels, upper)
		level = upper
	}
}

// bytes is the memory hg holds.
func (hg *heavyGeom) bytes() int64 {
	n := int64(cap(hg.f.pts))*16 + int64(cap(hg.f.elems))*16 + int64(cap(hg.f.comps))*4 + 160
	for _, l := range hg.levels {
		n += int64(cap(l))*28 + 24
	}
	return n
}

// contains is flatContains(&hg.f, p) over the leaves that reach p's
// parallel east of p: crosses is false for every other edge (a crossing of
// the chord lies east of p within the edge's span of latitudes, and the
// lens correction applies only within the edge's bulge, both inside the
// leaf's box).
func (hg *heavyGeom) contains(p orb.Point) bool {
	if len(hg.levels) == 0 || len(hg.levels[0]) == 0 {
		return false
	}
	var buf [8]bool
	parity := buf[:]
	if int(hg.f.polys) > len(buf) {
		parity = make([]bool, hg.f.polys)
	}
	// Margins far above rounding: a box is only skipped when clearly
	// apart from the ray.
	px, py := float32(p[0]-1e-7), p[1]
	top := len(hg.levels) - 1
	hg.crossings(top, 0, px, py, p, parity)
	for _, in := range parity {
		if in {
			return true
		}
	}
	return false
}

func (hg *heavyGeom) crossings(lv int, i int32, px float32, py float64, p orb.Point, parity []bool) {
	b := &hg.levels[lv][i]
	if b.maxX < px || float64(b.minY) > py || float64(b.maxY) < py {
		return
	}
	if lv > 0 {
		for j := b.lo; j < b.hi; j++ {
			hg.crossings(lv-1, j, px, py, p, parity)
		}
		return
	}
	if b.poly < 0 {
		return
	}
	pts := hg.f.pts
	for k := b.lo; k < b.hi; k++ {
		if crosses(pts[k], pts[k+1], p, hg.scale) {
			parity[b.poly] = !parity[b.poly]
		}
	}
}

// edgeWalk is partDistance over a heavy feature's edge tree: its state
// for one (part, feature) pair.
type edgeWalk struct {
	ev     *evaluator
	pt     *part
	hg     *heavyGeom
	best   *near
	dm     *degMetric
	lower  bool // degMetric may bound (see inBand)
	fitted bool
	// kx, ky order children (metres per degree, roughly) when dm gives
	// no bound.
	kx, ky float64
	prune  orb.Bound
	pruneD float64
	p32    box32 // prune as float32, rounded outwards
	// prevIdx, prev: the last projected position, reused by the next
	// edge when it starts there.
	prevIdx int32
	prev    orb.Point
}

// partDistanceIndexed is partDistance for a heavy feature: it offers to
// best the distance from part k to the feature's edges inside the part's
// search box, visiting the edge tree nearest node first.
func (ev *evaluator) partDistanceIndexed(k int, hg *heavyGeom, best *near) {
	pt := ev.s.parts[k]
	w := edgeWalk{ev: ev, pt: pt, hg: hg, best: best, dm: &ev.metrics[k], prevIdx: -1}
	w.fitted = pt.loc.FittedBound(hg.f.box)
	// degMetric's bound holds for boxes inside its band: per node, so
	// that a feature reaching beyond the band (a river running for tens
	// of kilometres) is still pruned near the site.
	w.lower = !ev.noLower && w.dm.kx > 0
	c := pt.box.Center()
	w.ky = 111_000
	w.kx = w.ky * math.Cos(c[1]*deg)
	w.setPrune(ev.boxes[k], best.d)
	if best.found {
		w.setPrune(padBox(pt.box, best.d), best.d)
	}
	w.walk()
}

func (w *edgeWalk) setPrune(b orb.Bound, d float64) {
	w.prune, w.pruneD = b, d
	w.p32 = toBox32(b)
}

// inBand reports whether degMetric bounds distances to what lies in b.
func (w *edgeWalk) inBand(b *ebox) bool {
	return w.lower && float64(b.minY) >= w.dm.lo+degMetricInner && float64(b.maxY) <= w.dm.hi-degMetricInner
}

// gap is the lower bound (metres) of the geodesic distance between the
// part and anything in b when inBand (bound true), else a rough distance
// for ordering only.
func (w *edgeWalk) gap(b *ebox) (float64, bool) {
	pb := &w.pt.box
	gx := math.Max(0, math.Max(float64(b.minX)-pb.Max[0], pb.Min[0]-float64(b.maxX)))
	gy := math.Max(0, math.Max(float64(b.minY)-pb.Max[1], pb.Min[1]-float64(b.maxY)))
	if w.inBand(b) {
		gx, gy = gx*w.dm.kx, gy*w.dm.ky
		return math.Sqrt(gx*gx + gy*gy), true
	}
	gx, gy = gx*w.kx, gy*w.ky
	return math.Sqrt(gx*gx + gy*gy), false
}

func (w *edgeWalk) meets(b *ebox) bool {
	q := &w.p32
	return b.minX <= q.maxX && q.minX <= b.maxX && b.minY <= q.maxY && q.minY <= b.maxY
}

// walkItem is a tree node waiting in edgeWalk's queue: d its gap from the
// part (a lower bound when bound).
type walkItem struct {
	d     float64
	lv, i int32
	bound bool
}

// walk visits the tree best first: nodes by increasing gap from the part,
// so the first leaves measured are the nearest and best.d shrinks before
// the rest are looked at; a node is expanded only if it still meets the
// prune box and its bound does not exceed best.d.
func (w *edgeWalk) walk() {
	levels := w.hg.levels
	top := int32(len(levels) - 1)
	q := w.ev.walkQueue[:0]
	d, bound := w.gap(&levels[top][0])
	q = pushWalk(q, walkItem{d, top, 0, bound})
	for len(q) > 0 {
		var it walkItem
		it, q = popWalk(q)
		b := &levels[it.lv][it.i]
		if !w.meets(b) {
			continue
		}
		if it.bound && it.d > w.best.d+lowerMargin {
			w.ev.lowerSkips++
			continue
		}
		if it.lv == 0 {
			if w.leaf(b) {
				break
			}
			continue
		}
		below := levels[it.lv-1]
		for j := b.lo; j < b.hi; j++ {
			c := &below[j]
			if !w.meets(c) {
				continue
			}
			d, bound := w.gap(c)
			if bound && d > w.best.d+lowerMargin {
				w.ev.lowerSkips++
				continue
			}
			q = pushWalk(q, walkItem{d, it.lv - 1, j, bound})
		}
	}
	w.ev.walkQueue = q[:0]
}

// pushWalk and popWalk keep q a binary min-heap by d.
func pushWalk(q []walkItem, it walkItem) []walkItem {
	q = append(q, it)
	k := len(q) - 1
	for k > 0 {
		p := (k - 1) / 2
		if q[p].d <= q[k].d {
			break
		}
		q[p], q[k] = q[k], q[p]
		k = p
	}
	return q
}

func popWalk(q []walkItem) (walkItem, []walkItem) {
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	k := 0
	for {
		l, m := 2*k+1, k
		if l < n && q[l].d < q[m].d {
			m = l
		}
		if r := l + 1; r < n && q[r].d < q[m].d {
			m = r
		}
		if m == k {
			break
		}
		q[k], q[m] = q[m], q[k]
		k = m
	}
	return top, q
}

// leaf measures the leaf's edges as partDistance does; true when the
// distance is 0 (nothing can be nearer).
func (w *edgeWalk) leaf(b *ebox) bool {
	pt, best, hg := w.pt, w.best, w.hg
	pts := hg.f.pts
	pb := &pt.box
	lower := w.inBand(b)
	for i := b.lo; i < b.hi; i++ {
		A, B := pts[i], pts[i+1]
		m := hg.m
		if m < 0 {
			m = bulgeWith(A, B, hg.scale)
		}
		if !edgeMeets(A, B, m, &w.prune) {
			continue
		}
		if lower {
			gx, gy := boxGap(A[0], B[0], pb.Min[0], pb.Max[0], m)*w.dm.kx, boxGap(A[1], B[1], pb.Min[1], pb.Max[1], m)*w.dm.ky
			if lim := best.d + lowerMargin; gx*gx+gy*gy > lim*lim {
				w.ev.lowerSkips++
				continue
			}
		}
		if !w.fitted && (!pt.loc.Fitted(A) || !pt.loc.Fitted(B)) {
			w.ev.farEdge(pt, A, B, best)
			w.prevIdx = -1
		} else {
			a := w.prev
			if w.prevIdx != i {
				a = pt.loc.ForwardPoint(A)
			}
			bb := pt.loc.ForwardPoint(B)
			w.prevIdx, w.prev = i+1, bb
			w.ev.edge(pt, A, B, a, bb, best)
		}
		if best.found {
			if best.d == 0 {
				return true
			}
			if best.d < 0.9*w.pruneD {
				w.setPrune(padBox(pt.box, best.d), best.d)
			}
		}
	}
	return false
}
