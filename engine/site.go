package engine

import (
	"cmp"
	"math"
	"slices"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// A site is prepared once per query: its geometry in longitude, latitude,
// and its parts, each projected in its own site-centred azimuthal
// equidistant projection (geo.Local). A compact site (every position within
// partRadius of the centre of its box: every site under the contract's 40 ha
// limit that is not a long line) is one part. A larger site (a long line, a
// scattered MultiPoint) is cut into parts of a few kilometres, so that in
// every projection the site lies within a few kilometres of the centre,
// where the planar distance to anything within 10 km is within a fraction of
// a millimetre of the geodesic one.

const (
	// partRadius is the largest distance from a part's centre to its
	// positions before the site is split.
	partRadius = 2500.0
	// partCell is the grid cell, in metres, that groups the pieces of a
	// split site into parts.
	partCell = 3000.0
	// siteEdgeMax is the longest site edge a split site keeps; longer edges
	// are cut along the geodesic.
	siteEdgeMax = 2000.0
	// treeMin is the number of projected items from which a part indexes
	// them.
	treeMin = 32
)

type site struct {
	geom  flat      // as given, longitude, latitude
	box   orb.Bound // box of the site including edge bulges
	parts []*part
	area  *ringSet    // the site's polygons, nil when it has none
	comps []orb.Point // one position of each connected component
}

// part is a piece of a site in its own projection.
type part struct {
	loc  geo.Local
	box  orb.Bound      // longitude, latitude box of the piece, bulges included
	pts  []orb.Point    // isolated points, projected
	segs [][2]orb.Point // segments, projected
	// segBoxes are the segments' boxes (without a tree, nearSeg skips a
	// segment whose box lies beyond the best distance so far).
	segBoxes []pbox
	pb       pbox // planar box of pts and segs
	// extent is the largest planar (= geodesic) distance from the
	// projection's centre to pts and segs.
	extent float64
	tree   *itemTree // index over pts and segs (nil when few)
}

// localFunc returns a geo.Local centred at or near a point (within
// localSnap/2 degrees of it in each coordinate).
type localFunc func(orb.Point) geo.Local

// prepareSite prepares g, which must have passed geo.Validate (or be a
// Polygon/MultiPolygon/line/point geometry with finite positions).
func prepareSite(g orb.Geometry, local localFunc) *site {
	s := &site{}
	s.geom.setOrb(g)
	f := &s.geom
	s.box = f.box
	scale := boundScale(f.box)
	for _, e := range f.elems {
		for i := e.start; i+1 < e.end && e.kind != elemPoint; i++ {
			s.box = s.box.Union(edgeBox(f.pts[i], f.pts[i+1], scale))
		}
	}
	for _, i := range f.comps {
		s.comps = append(s.comps, f.pts[i])
	}
	if f.hasArea() {
		s.area = newRingSet(f, ringSetBandEdges)
	}

	l0 := local(f.box.Center())
	far := false
	for _, p := range f.pts {
		x, y := l0.Forward(p)
		if math.Hypot(x, y) > partRadius {
			far = true
			break
		}
	}
	if !far {
		pt := &part{loc: l0, box: s.box}
		for _, e := range f.elems {
			if e.kind == elemPoint {
				for i := e.start; i < e.end; i++ {
					pt.pts = append(pt.pts, l0.ForwardPoint(f.pts[i]))
				}
				continue
			}
			for i := e.start; i+1 < e.end; i++ {
				pt.segs = append(pt.segs, [2]orb.Point{l0.ForwardPoint(f.pts[i]), l0.ForwardPoint(f.pts[i+1])})
			}
		}
		pt.finish()
		s.parts = []*part{pt}
		return s
	}
	s.parts = splitSite(f, l0, local)
	return s
}

// piece is a point (a == b) or a geodesic edge of a split site.
type piece struct {
	a, b  orb.Point
	point bool
}

func splitSite(f *flat, l0 geo.Local, local localFunc) []*part {
	type cellKey struct{ x, y int64 }
	cells := map[cellKey][]piece{}
	var order []cellKey
	put := func(pc piece) {
		x0, y0 := l0.Forward(pc.a)
		x1, y1 := l0.Forward(pc.b)
		k := cellKey{int64(math.Floor((x0 + x1) / 2 / partCell)), int64(math.Floor((y0 + y1) / 2 / partCell))}
		if _, ok := cells[k]; !ok {
			order = append(order, k)
		}
		cells[k] = append(cells[k], pc)
	}
	var sub []orb.Point
	for _, e := range f.elems {
		if e.kind == elemPoint {
			for i := e.start; i < e.end; i++ {
				put(piece{a: f.pts[i], b: f.pts[i], point: true})
			}
			continue
		}
		for i := e.start; i+1 < e.end; i++ {
			a, b := f.pts[i], f.pts[i+1]
			if a == b {
				continue
			}
			sub = cutGeodesic(sub, a, b, siteEdgeMax)
			for j := 0; j+1 < len(sub); j++ {
				put(piece{a: sub[j], b: sub[j+1]})
			}
		}
	}
	parts := make([]*part, 0, len(order))
	for _, k := range order {
		pcs := cells[k]
		box := orb.Bound{Min: pcs[0].a, Max: pcs[0].a}
		for _, pc := range pcs {
			box = box.Union(edgeBox(pc.a, pc.b, bulgeScale(math.Max(math.Abs(pc.a[1]), math.Abs(pc.b[1])))))
		}
		pt := &part{loc: local(box.Center()), box: box}
		for _, pc := range pcs {
			if pc.point {
				pt.pts = append(pt.pts, pt.loc.ForwardPoint(pc.a))
			} else {
				pt.segs = append(pt.segs, [2]orb.Point{pt.loc.ForwardPoint(pc.a), pt.loc.ForwardPoint(pc.b)})
			}
		}
		pt.finish()
		parts = append(parts, pt)
	}
	return parts
}

func (pt *part) finish() {
	pt.pb = emptyPBox()
	for _, p := range pt.pts {
		pt.pb.extend(p)
		pt.extent = math.Max(pt.extent, math.Hypot(p[0], p[1]))
	}
	for _, s := range pt.segs {
		pt.pb.extend(s[0])
		pt.pb.extend(s[1])
		pt.extent = math.Max(pt.extent, math.Max(math.Hypot(s[0][0], s[0][1]), math.Hypot(s[1][0], s[1][1])))
	}
	if len(pt.pts)+len(pt.segs) >= treeMin {
		pt.tree = newItemTree(pt)
		return
	}
	pt.segBoxes = make([]pbox, len(pt.segs))
	for i, s := range pt.segs {
		pt.segBoxes[i] = segPBox(s[0], s[1])
	}
}

// near is the closest pair found so far: p on the site (projected), q on
// the feature; d is their planar distance. found is false while nothing
// closer than the initial d (the search limit) has been seen.
type near struct {
	d     float64
	p, q  orb.Point
	found bool
}

func (n *near) offer(p, q orb.Point, d float64) {
	if d < n.d {
		n.d, n.p, n.q, n.found = d, p, q, true
	}
}

// itemPoint and itemSeg offer the distance from the site item i of pt to
// a projected point or segment.
func (pt *part) itemPoint(i int, q orb.Point, best *near) {
	if i < len(pt.pts) {
		p := pt.pts[i]
		best.offer(p, q, hypot(p, q))
		return
	}
	s := pt.segs[i-len(pt.pts)]
	p := closestOnSeg(q, s[0], s[1])
	best.offer(p, q, hypot(p, q))
}

func (pt *part) itemSeg(i int, a, b orb.Point, best *near) {
	if i < len(pt.pts) {
		p := pt.pts[i]
		q := closestOnSeg(p, a, b)
		best.offer(p, q, hypot(p, q))
		return
	}
	s := pt.segs[i-len(pt.pts)]
	p, q, d := segSeg(s[0], s[1], a, b)
	best.offer(p, q, d)
}

// nearPoint offers the distance from the part to projected point q.
func (pt *part) nearPoint(q orb.Point, best *near) {
	if pt.tree == nil {
		for i := range pt.pts {
			p := pt.pts[i]
			best.offer(p, q, hypot(p, q))
		}
		for i := range pt.segs {
			s := &pt.segs[i]
			p := closestOnSeg(q, s[0], s[1])
			best.offer(p, q, hypot(p, q))
		}
		return
	}
	qb := pbox{q[0], q[1], q[0], q[1]}
	pt.tree.visit(&qb, best, func(i int) { pt.itemPoint(i, q, best) })
}

// nearSeg offers the distance from the part to projected segment a-b.
func (pt *part) nearSeg(a, b orb.Point, best *near) {
	if pt.tree == nil {
		for i := range pt.pts {
			p := pt.pts[i]
			q := closestOnSeg(p, a, b)
			best.offer(p, q, hypot(p, q))
		}
		qb := segPBox(a, b)
		for i := range pt.segs {
			// Boxes farther apart than best.d hold nothing closer: most
			// of a site's segments face away from the feature.
			sb := &pt.segBoxes[i]
			dx := max(sb.minX-qb.maxX, qb.minX-sb.maxX)
			dy := max(sb.minY-qb.maxY, qb.minY-sb.maxY)
			if dx > best.d || dy > best.d || (dx > 0 && dy > 0 && dx*dx+dy*dy > best.d*best.d) {
				continue
			}
			s := &pt.segs[i]
			p, q, d := segSeg(s[0], s[1], a, b)
			best.offer(p, q, d)
			if d == 0 {
				return
			}
		}
		return
	}
	qb := segPBox(a, b)
	pt.tree.visit(&qb, best, func(i int) { pt.itemSeg(i, a, b, best) })
}

// itemTree is a static packed R-tree over a part's items (points first,
// then segments), for sites with many positions.
type itemTree struct {
	items  []int32  // item ids in leaf order
	levels [][]pbox // levels[0]: one box per leaf item; last: the root
}

const itemTreeNode = 8

func newItemTree(pt *part) *itemTree {
	n := len(pt.pts) + len(pt.segs)
	boxes := make([]pbox, n)
	for i, p := range pt.pts {
		boxes[i] = pbox{p[0], p[1], p[0], p[1]}
	}
	for i, s := range pt.segs {
		boxes[len(pt.pts)+i] = segPBox(s[0], s[1])
	}
	t := &itemTree{items: make([]int32, n)}
	for i := range t.items {
		t.items[i] = int32(i)
	}
	// Sort-tile-recursive order: vertical slabs by centre x, each by centre y.
	cx := func(b pbox) float64 { return b.minX + b.maxX }
	cy := func(b pbox) float64 { return b.minY + b.maxY }
	slices.SortFunc(t.items, func(a, b int32) int { return cmp.Compare(cx(boxes[a]), cx(boxes[b])) })
	leaves := (n + itemTreeNode - 1) / itemTreeNode
	slab := int(math.Ceil(math.Sqrt(float64(leaves)))) * itemTreeNode
	for i := 0; i < n; i += slab {
		s := t.items[i:min(i+slab, n)]
		slices.SortFunc(s, func(a, b int32) int { return cmp.Compare(cy(boxes[a]), cy(boxes[b])) })
	}
	level := make([]pbox, n)
	for i, it := range t.items {
		level[i] = boxes[it]
	}
	t.levels = append(t.levels, level)
	for len(level) > 1 {
		up := make([]pbox, 0, (len(level)+itemTreeNode-1)/itemTreeNode)
		for i := 0; i < len(level); i += itemTreeNode {
			b := emptyPBox()
			for _, c := range level[i:min(i+itemTreeNode, len(level))] {
				b.union(c)
			}
			up = append(up, b)
		}
		t.levels = append(t.levels, up)
		level = up
	}
	return t
}

// visit calls fn for the items whose boxes lie closer to q than best.d,
// re-reading best.d as it shrinks.
func (t *itemTree) visit(q *pbox, best *near, fn func(i int)) {
	t.visitNode(len(t.levels)-1, 0, q, best, fn)
}

func (t *itemTree) visitNode(lv, i int, q *pbox, best *near, fn func(int)) {
	if t.levels[lv][i].dist(q) >= best.d {
		return
	}
	if lv == 0 {
		fn(int(t.items[i]))
		return
	}
	lo := i * itemTreeNode
	hi := min(lo+itemTreeNode, len(t.levels[lv-1]))
	for j := lo; j < hi; j++ {
		t.visitNode(lv-1, j, q, best, fn)
		if best.d == 0 {
			return
		}
	}
}
