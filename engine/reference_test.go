package engine

import (
	"math"

	"github.com/paulmach/orb"
	"github.com/tidwall/geodesic"

	"siteenv/geo"
)

// A brute-force geodesic reference for the exactness tests, independent of
// the engine's projection: every edge is densified along its geodesic into
// pieces of at most refPiece metres (short enough that the straight line in
// degrees is within a millimetre of the geodesic, for containment and
// crossing tests), and distances are Karney geodesic distances:
// vertex-to-vertex, and vertex-to-piece minimised along the piece's
// geodesic (golden-section search around the foot of the perpendicular).
// Two non-crossing pieces are closest at an end of one of them, so the
// distance between two geometries is the least vertex-to-piece distance
// either way, 0 when pieces cross or one contains the other.

const refPiece = 250.0

type refGeom struct {
	verts  []orb.Point
	npts   int         // verts[:npts] are isolated points
	lines  [][2]int    // vertex ranges of polylines and (closed) rings
	polys  [][][2]int  // per polygon, its ring ranges
	comps  []orb.Point // one vertex per connected component
	center orb.Point
	radius float64 // every point of the geometry is within radius of center
}

func refDist(a, b orb.Point) float64 {
	var s float64
	geodesic.WGS84.Inverse(a[1], a[0], b[1], b[0], &s, nil, nil)
	return s
}

func newRefGeom(g orb.Geometry) *refGeom {
	r := &refGeom{}
	var pts []orb.Point
	var lines [][]orb.Point
	var polys [][][]orb.Point
	var walk func(g orb.Geometry)
	walk = func(g orb.Geometry) {
		switch g := g.(type) {
		case orb.Point:
			pts = append(pts, g)
			r.comps = append(r.comps, g)
		case orb.MultiPoint:
			for _, p := range g {
				walk(p)
			}
		case orb.LineString:
			lines = append(lines, densify(g))
			r.comps = append(r.comps, g[0])
		case orb.MultiLineString:
			for _, l := range g {
				walk(l)
			}
		case orb.Polygon:
			var rings [][]orb.Point
			for _, ring := range g {
				rings = append(rings, densify(ring))
			}
			polys = append(polys, rings)
			r.comps = append(r.comps, g[0][0])
		case orb.MultiPolygon:
			for _, p := range g {
				walk(p)
			}
		}
	}
	walk(g)
	r.verts = append(r.verts, pts...)
	r.npts = len(pts)
	addLine := func(l []orb.Point) [2]int {
		a := len(r.verts)
		r.verts = append(r.verts, l...)
		rg := [2]int{a, len(r.verts)}
		r.lines = append(r.lines, rg)
		return rg
	}
	for _, l := range lines {
		addLine(l)
	}
	for _, rings := range polys {
		var rr [][2]int
		for _, ring := range rings {
			rr = append(rr, addLine(ring))
		}
		r.polys = append(r.polys, rr)
	}
	r.center = r.verts[0]
	for _, v := range r.verts {
		r.radius = math.Max(r.radius, refDist(r.center, v))
	}
	if len(r.lines) > 0 {
		r.radius += refPiece / 2 // points between vertices
	}
	return r
}

// densify cuts every edge of l along its geodesic into pieces of at most
// refPiece metres.
func densify(l []orb.Point) []orb.Point {
	out := []orb.Point{l[0]}
	for i := 0; i+1 < len(l); i++ {
		a, b := l[i], l[i+1]
		n := int(math.Ceil(refDist(a, b) / refPiece))
		if n > 1 {
			line := geodesic.WGS84.InverseLine(a[1], a[0], b[1], b[0], geodesic.Latitude|geodesic.Longitude|geodesic.DistanceIn)
			s := line.S13()
			for k := 1; k < n; k++ {
				var lat, lon float64
				line.Position(s*float64(k)/float64(n), &lat, &lon, nil)
				out = append(out, orb.Point{lon, lat})
			}
		}
		out = append(out, b)
	}
	return out
}

// refPointPiece is the geodesic distance from p to the geodesic from a to
// b, given dA = |pa|, dB = |pb| and L = |ab|.
func refPointPiece(p, a, b orb.Point, dA, dB, L float64) float64 {
	best := math.Min(dA, dB)
	if L == 0 {
		return best
	}
	// Foot of the perpendicular in the flat triangle: a starting bracket
	// only; the minimum is searched on the geodesic.
	t0 := (dA - dB) * (dA + dB) / (2 * L)
	t0 += L / 2
	lo, hi := math.Max(0, t0-1), math.Min(L, t0+1)
	if lo >= hi {
		return best
	}
	line := geodesic.WGS84.InverseLine(a[1], a[0], b[1], b[0], geodesic.Latitude|geodesic.Longitude|geodesic.DistanceIn)
	f := func(t float64) float64 {
		var lat, lon float64
		line.Position(t, &lat, &lon, nil)
		return refDist(p, orb.Point{lon, lat})
	}
	const g = 0.6180339887498949
	x1, x2 := hi-g*(hi-lo), lo+g*(hi-lo)
	f1, f2 := f(x1), f(x2)
	for i := 0; i < 30; i++ {
		if f1 < f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - g*(hi-lo)
			f1 = f(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + g*(hi-lo)
			f2 = f(x2)
		}
	}
	return math.Min(best, math.Min(f1, f2))
}

// pieces calls fn for every piece (vertex indices k, k+1) of r's lines.
func (r *refGeom) pieces(fn func(k int)) {
	for _, l := range r.lines {
		for k := l[0]; k+1 < l[1]; k++ {
			fn(k)
		}
	}
}

// contains reports whether p lies inside r's polygons (even-odd per
// polygon on the densified rings, straight in degrees).
func (r *refGeom) contains(p orb.Point) bool {
	for _, rings := range r.polys {
		in := false
		for _, rg := range rings {
			for k := rg[0]; k+1 < rg[1]; k++ {
				a, b := r.verts[k], r.verts[k+1]
				if (a[1] > p[1]) != (b[1] > p[1]) {
					x := a[0] + (p[1]-a[1])*(b[0]-a[0])/(b[1]-a[1])
					if p[0] < x {
						in = !in
					}
				}
			}
		}
		if in {
			return true
		}
	}
	return false
}

func refSegsMeet(a, b, c, d orb.Point) bool {
	o1, o2 := geo.Orient(a, b, c), geo.Orient(a, b, d)
	o3, o4 := geo.Orient(c, d, a), geo.Orient(c, d, b)
	if o1*o2 < 0 && o3*o4 < 0 {
		return true
	}
	return (o1 == 0 && onSeg(a, b, c)) || (o2 == 0 && onSeg(a, b, d)) ||
		(o3 == 0 && onSeg(c, d, a)) || (o4 == 0 && onSeg(c, d, b))
}

// refResult is the reference's verdict on one feature.
type refResult struct {
	member bool
	// dist is the distance (0 when intersecting); exact is false when the
	// bounding circles alone decided membership and dist is unknown.
	dist  float64
	exact bool
	// margin is the signed distance used for the 1 cm exemption: the
	// distance between the boundaries, negative when one geometry contains
	// the other.
	margin float64
}

// exempt reports whether the feature lies within 1 cm of the search
// boundary, where the test accepts either answer.
func (rr refResult) exempt(r float64) bool {
	return rr.exact && math.Abs(rr.margin-r) <= 0.01
}

// refEvaluate decides feature f against site s at radius r.
func refEvaluate(s, f *refGeom, r float64) refResult {
	dc := refDist(s.center, f.center)
	if dc-s.radius-f.radius > r+0.05 {
		return refResult{member: false, margin: dc - s.radius - f.radius}
	}
	if dc+s.radius+f.radius < r-0.05 {
		return refResult{member: true, margin: dc + s.radius + f.radius}
	}
	return refExact(s, f, r)
}

// refExact computes the distance between s and f and decides membership.
func refExact(s, f *refGeom, r float64) refResult {
	// Vertex-to-vertex distances.
	ns, nf := len(s.verts), len(f.verts)
	md := make([]float64, ns*nf)
	best := math.Inf(1)
	for i, u := range s.verts {
		for j, v := range f.verts {
			d := refDist(u, v)
			md[i*nf+j] = d
			best = math.Min(best, d)
		}
	}
	// Crossing pieces.
	crossing := false
	s.pieces(func(i int) {
		if crossing {
			return
		}
		f.pieces(func(j int) {
			if !crossing && refSegsMeet(s.verts[i], s.verts[i+1], f.verts[j], f.verts[j+1]) {
				crossing = true
			}
		})
	})
	if crossing {
		best = 0
	}
	// Vertex-to-piece, both ways.
	if best > 0 {
		f.pieces(func(j int) {
			L := refDist(f.verts[j], f.verts[j+1])
			for i, u := range s.verts {
				dA, dB := md[i*nf+j], md[i*nf+j+1]
				if math.Min(dA, dB)-L/2 < best {
					best = math.Min(best, refPointPiece(u, f.verts[j], f.verts[j+1], dA, dB, L))
				}
			}
		})
		s.pieces(func(i int) {
			L := refDist(s.verts[i], s.verts[i+1])
			for j, v := range f.verts {
				dA, dB := md[i*nf+j], md[(i+1)*nf+j]
				if math.Min(dA, dB)-L/2 < best {
					best = math.Min(best, refPointPiece(v, s.verts[i], s.verts[i+1], dA, dB, L))
				}
			}
		})
	}
	contained := false
	if best > 0 {
		for _, c := range f.comps {
			if s.contains(c) {
				contained = true
			}
		}
		for _, c := range s.comps {
			if f.contains(c) {
				contained = true
			}
		}
	}
	rr := refResult{exact: true, margin: best, dist: best}
	if contained {
		rr.dist, rr.margin = 0, -best
	}
	rr.member = rr.dist <= r
	return rr
}
