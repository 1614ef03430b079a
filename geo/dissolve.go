package geo

import (
	"math"
	"sort"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

// Dissolving cadastral parcels into one site boundary, and a point to show
// a geometry by. The API's location previews and POST /sites share these.

// ParcelBoundary is the boundary of a set of parcel geometries (Polygon or
// MultiPolygon, CRS84): one canonical Polygon or MultiPolygon with the
// edges neighbouring parcels share dissolved (see Dissolve), so that two
// adjacent lots make one valid polygon rather than a MultiPolygon whose
// members overlap along their common edge (which Validate refuses).
// When the parcels do not fit the model of a cadastral fabric (they
// overlap, or neighbours do not share vertices), it is the canonical
// MultiPolygon of the parcels as they are. The API uses it for both the
// cadastre preview and POST /sites, so that they agree (and
// existing_site_id finds the saved site).
func ParcelBoundary(gs []orb.Geometry) orb.Geometry {
	var polys []orb.Polygon
	for _, g := range gs {
		switch g := g.(type) {
		case orb.Polygon:
			polys = append(polys, g)
		case orb.MultiPolygon:
			polys = append(polys, g...)
		}
	}
	if g, ok := Dissolve(polys); ok {
		return g
	}
	return Canonical(orb.MultiPolygon(polys))
}

// Dissolve limits: vertices considered, and the distance (degrees, about
// 2 mm) within which a vertex of one parcel lies on another's edge.
const (
	maxDissolveVertices = 50_000
	onEdgeDeg           = 2e-8
)

type dissolveEdge struct{ a, b orb.Point }

// Dissolve returns the union of polygons that may touch but do not overlap,
// as canonical geometry: every ring is split at the vertices of other rings
// lying on it, edges present in both directions (shared by two polygons)
// cancel, and the remaining edges are chained into rings, turning as far
// left as possible at each vertex and splitting rings where they pass a
// vertex twice, so that rings meeting at a point stay separate. It reports false when the result is not a valid polygonal
// geometry of the same area as the input (overlaps, slivers, too large).
func Dissolve(polys []orb.Polygon) (orb.Geometry, bool) {
	if len(polys) == 0 {
		return nil, false
	}
	var inputArea float64
	var edges []dissolveEdge
	var verts []orb.Point
	for _, p := range polys {
		inputArea += Area(p)
		cp, ok := Canonical(p).(orb.Polygon)
		if !ok {
			return nil, false
		}
		for _, ring := range cp {
			for i := 0; i+1 < len(ring); i++ {
				if ring[i] != ring[i+1] {
					edges = append(edges, dissolveEdge{ring[i], ring[i+1]})
				}
			}
			verts = append(verts, ring...)
		}
	}
	if len(verts) > maxDissolveVertices {
		return nil, false
	}
	sort.Slice(verts, func(i, j int) bool { return verts[i][0] < verts[j][0] })

	// Node: split each edge at the vertices lying on it.
	var noded []dissolveEdge
	for _, e := range edges {
		minX, maxX := math.Min(e.a[0], e.b[0])-onEdgeDeg, math.Max(e.a[0], e.b[0])+onEdgeDeg
		minY, maxY := math.Min(e.a[1], e.b[1])-onEdgeDeg, math.Max(e.a[1], e.b[1])+onEdgeDeg
		dx, dy := e.b[0]-e.a[0], e.b[1]-e.a[1]
		l2 := dx*dx + dy*dy
		type cut struct {
			t float64
			p orb.Point
		}
		var cuts []cut
		for i := sort.Search(len(verts), func(i int) bool { return verts[i][0] >= minX }); i < len(verts) && verts[i][0] <= maxX; i++ {
			v := verts[i]
			if v[1] < minY || v[1] > maxY || v == e.a || v == e.b {
				continue
			}
			t := ((v[0]-e.a[0])*dx + (v[1]-e.a[1])*dy) / l2
			if t <= 0 || t >= 1 || math.Abs((v[0]-e.a[0])*dy-(v[1]-e.a[1])*dx)/math.Sqrt(l2) > onEdgeDeg {
				continue
			}
			cuts = append(cuts, cut{t, v})
		}
		sort.Slice(cuts, func(i, j int) bool { return cuts[i].t < cuts[j].t })
		from := e.a
		for _, c := range cuts {
			if c.p != from {
				noded = append(noded, dissolveEdge{from, c.p})
				from = c.p
			}
		}
		noded = append(noded, dissolveEdge{from, e.b})
	}

	// Cancel edges shared by two polygons (present in both directions).
	count := map[dissolveEdge]int{}
	for _, e := range noded {
		if rev := (dissolveEdge{e.b, e.a}); count[rev] > 0 {
			count[rev]--
		} else {
			count[e]++
		}
	}
	out := map[orb.Point][]orb.Point{}
	left := 0
	for e, n := range count {
		for range n {
			out[e.a] = append(out[e.a], e.b)
			left++
		}
	}
	// Deterministic choice among equal turns.
	for _, ends := range out {
		sort.Slice(ends, func(i, j int) bool { return lessPoint(ends[i], ends[j]) })
	}

	// Chain into rings.
	var rings []orb.Ring
	for left > 0 {
		var start orb.Point
		found := false
		for p, ends := range out {
			if len(ends) > 0 && (!found || lessPoint(p, start)) {
				start, found = p, true
			}
		}
		ring := orb.Ring{start}
		prev, cur := start, start
		for steps := 0; ; steps++ {
			ends := out[cur]
			if len(ends) == 0 || steps > len(noded) {
				return nil, false
			}
			k := 0
			if cur != start || len(ring) > 1 {
				k = leftmost(prev, cur, ends)
			}
			next := ends[k]
			out[cur] = append(ends[:k:k], ends[k+1:]...)
			left--
			ring = append(ring, next)
			prev, cur = cur, next
			if cur == start {
				break
			}
		}
		for _, r := range splitRing(ring) {
			rings = append(rings, dropStraightVertices(r))
		}
	}

	// Exteriors are counter-clockwise, holes clockwise; each hole goes in the
	// smallest exterior containing it.
	var exteriors []orb.Polygon
	var holes []orb.Ring
	for _, ring := range rings {
		switch a := signedArea2(ring); {
		case a > 0:
			exteriors = append(exteriors, orb.Polygon{ring})
		case a < 0:
			holes = append(holes, ring)
		default:
			return nil, false
		}
	}
	for _, h := range holes {
		probe := orb.Point{(h[0][0] + h[1][0]) / 2, (h[0][1] + h[1][1]) / 2}
		best, bestArea := -1, math.Inf(1)
		for i, ext := range exteriors {
			if a := signedArea2(ext[0]); a < bestArea && planar.RingContains(ext[0], probe) {
				best, bestArea = i, a
			}
		}
		if best < 0 {
			return nil, false
		}
		exteriors[best] = append(exteriors[best], h)
	}
	g := Canonical(orb.MultiPolygon(exteriors))
	if Validate(g, 0) != nil || math.Abs(Area(g)-inputArea) > 1e-6*inputArea+0.01 {
		return nil, false
	}
	return g, true
}

// splitRing splits a closed ring that passes through a vertex more than
// once (where the union pinches) into rings that do not, dropping
// degenerate pieces.
func splitRing(r orb.Ring) []orb.Ring {
	pts := r[:len(r)-1]
	seen := map[orb.Point]int{}
	for i, p := range pts {
		j, ok := seen[p]
		if !ok {
			seen[p] = i
			continue
		}
		inner := append(orb.Ring{}, pts[j:i+1]...)
		outer := append(append(orb.Ring{}, pts[:j]...), pts[i:]...)
		outer = append(outer, outer[0])
		var out []orb.Ring
		for _, part := range []orb.Ring{inner, outer} {
			if len(part) >= 4 {
				out = append(out, splitRing(part)...)
			}
		}
		return out
	}
	return []orb.Ring{r}
}

// dropStraightVertices removes the vertices of a closed ring where it goes
// exactly straight on (left where a shared edge was dissolved): the same
// point set, fewer vertices.
func dropStraightVertices(r orb.Ring) orb.Ring {
	pts := r[:len(r)-1]
	for changed := true; changed && len(pts) > 3; {
		changed = false
		for i := 0; i < len(pts) && len(pts) > 3; i++ {
			a, b, c := pts[(i+len(pts)-1)%len(pts)], pts[i], pts[(i+1)%len(pts)]
			ux, uy, vx, vy := b[0]-a[0], b[1]-a[1], c[0]-b[0], c[1]-b[1]
			if ux*vy-uy*vx == 0 && ux*vx+uy*vy > 0 {
				pts = append(pts[:i:i], pts[i+1:]...)
				changed = true
			}
		}
	}
	return append(pts, pts[0])
}

// leftmost picks, among the ends of edges leaving cur, the one turning
// furthest left from the direction prev -> cur.
func leftmost(prev, cur orb.Point, ends []orb.Point) int {
	dx, dy := cur[0]-prev[0], cur[1]-prev[1]
	best, bestAngle := 0, math.Inf(-1)
	for i, e := range ends {
		ex, ey := e[0]-cur[0], e[1]-cur[1]
		a := math.Atan2(dx*ey-dy*ex, dx*ex+dy*ey)
		if a == -math.Pi { // a U-turn is the last resort, not the sharpest left
			a = math.Pi
		}
		if a > bestAngle {
			best, bestAngle = i, a
		}
	}
	return best
}

// RepresentativePoint is a point of g to show it by: a point or the middle
// vertex of a line; for polygons a point inside, the centroid when it is
// inside, else the middle of the widest interior span of a horizontal line
// through it (the largest polygon of a MultiPolygon).
func RepresentativePoint(g orb.Geometry) orb.Point {
	switch g := g.(type) {
	case orb.Point:
		return g
	case orb.MultiPoint:
		if len(g) > 0 {
			return g[0]
		}
	case orb.LineString:
		if len(g) > 0 {
			return g[len(g)/2]
		}
	case orb.MultiLineString:
		for _, l := range g {
			if len(l) > 0 {
				return l[len(l)/2]
			}
		}
	case orb.Polygon:
		return polygonPoint(g)
	case orb.MultiPolygon:
		best, bestArea := -1, -1.0
		for i, p := range g {
			if a := planar.Area(p); a > bestArea {
				best, bestArea = i, a
			}
		}
		if best >= 0 {
			return polygonPoint(g[best])
		}
	}
	if g == nil {
		return orb.Point{}
	}
	return g.Bound().Center()
}

func polygonPoint(p orb.Polygon) orb.Point {
	if len(p) == 0 || len(p[0]) == 0 {
		return orb.Point{}
	}
	c, _ := planar.CentroidArea(p)
	if planar.PolygonContains(p, c) {
		return roundPoint(c)
	}
	for _, y := range []float64{c[1], p.Bound().Center()[1]} {
		var xs []float64
		for _, ring := range p {
			for i := 0; i+1 < len(ring); i++ {
				a, b := ring[i], ring[i+1]
				if (a[1] > y) != (b[1] > y) {
					xs = append(xs, a[0]+(y-a[1])*(b[0]-a[0])/(b[1]-a[1]))
				}
			}
		}
		sort.Float64s(xs)
		best, width := -1, 0.0
		for i := 0; i+1 < len(xs); i += 2 {
			if w := xs[i+1] - xs[i]; w > width {
				best, width = i, w
			}
		}
		if best >= 0 {
			return roundPoint(orb.Point{(xs[best] + xs[best+1]) / 2, y})
		}
	}
	return p[0][0]
}

// roundPoint rounds to the canonical grid (CanonicalDecimals).
func roundPoint(p orb.Point) orb.Point {
	const k = 1e8
	return orb.Point{math.Round(p[0]*k) / k, math.Round(p[1]*k) / k}
}
