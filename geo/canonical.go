package geo

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
	"slices"

	"github.com/paulmach/orb"
)

// CanonicalDecimals is the number of decimal places canonical coordinates
// are rounded to: 1e-8 degree, about 1.1 mm on the ground.
//
// Why 8: any fixed grid splits some pairs of arbitrarily close values (those
// straddling a rounding boundary), so no rounding makes every pair closer
// than some tolerance identical. The boundaries of an 8-decimal grid are the
// values ending in 5 at the 9th decimal. Coordinates as people and GIS
// software write them have 8 decimals or fewer (GeoJSON writers usually emit
// 6 to 8), so they sit at least 5e-9 degree from every boundary: the same
// boundary written with noise below 5e-9 degree (float round trips, a
// re-serialisation, a reprojection) canonicalises identically. A 9-decimal
// grid would keep 0.1 mm but tolerate only 5e-10 degree of noise; a coarser
// grid would merge boundaries that differ by centimetres.
const CanonicalDecimals = 8

const canonicalScale = 1e8 // 10^CanonicalDecimals

// snap rounds v to the canonical grid; -0 becomes 0.
func snap(v float64) float64 {
	k := math.Round(v * canonicalScale)
	if k == 0 {
		return 0
	}
	return k / canonicalScale
}

func snapPoint(p orb.Point) orb.Point { return orb.Point{snap(p[0]), snap(p[1])} }

// OnGrid reports whether every coordinate of g lies on the canonical grid
// already (rounding moves none; a coordinate written with CanonicalDecimals
// decimals or fewer does, as most clients write them). Canonical then only
// drops repeated positions and reorders, reorients and rotates what g
// holds, which Validate ignores: the canonical form of an on-grid g that
// passed Validate passes it too, and need not be checked again. Off the
// grid, rounding may move two close boundaries onto each other, so that
// the canonical form of a valid geometry is not valid. Safe for concurrent
// use.
func OnGrid(g orb.Geometry) bool {
	return eachPoint(g, func(p orb.Point) bool { return snap(p[0]) == p[0] && snap(p[1]) == p[1] })
}

// Canonical returns the canonical form of g, a new geometry (g is not
// modified): two geometries with the same boundary, written differently,
// have the same canonical form. Specifically:
//
//   - coordinates are rounded to CanonicalDecimals decimal places;
//   - consecutive repeated positions are removed (after rounding), in rings
//     also across the closing position;
//   - rings are oriented as RFC 7946 asks, exterior rings counter-clockwise
//     and holes clockwise (planar signed area in longitude, latitude; a ring
//     of zero area takes the lexicographically smaller direction), start at
//     their lexicographically smallest position (longitude, then latitude;
//     ties broken by the smallest resulting sequence) and are closed;
//   - holes, the polygons of a MultiPolygon, the lines of a MultiLineString
//     and the points of a MultiPoint are sorted lexicographically; repeated
//     points of a MultiPoint and repeated lines of a MultiLineString are
//     dropped;
//   - a LineString runs in the direction whose sequence is lexicographically
//     smaller; a closed LineString (first position repeated at the end, at
//     least 4 positions) is oriented and rotated like an exterior ring;
//   - a MultiPoint, MultiLineString or MultiPolygon of one member becomes
//     that Point, LineString or Polygon: they describe the same set;
//   - a lone orb.Ring or orb.Bound becomes a Polygon; a Collection keeps its
//     type, with canonical members sorted by their fingerprint encoding.
//
// Canonical is idempotent. It expects a geometry that passed Validate:
// NaN coordinates give an unspecified (but deterministic) order. nil gives
// nil. Safe for concurrent use.
func Canonical(g orb.Geometry) orb.Geometry {
	switch g := g.(type) {
	case nil:
		return nil
	case orb.Point:
		return snapPoint(g)
	case orb.MultiPoint:
		mp := make(orb.MultiPoint, len(g))
		for i, p := range g {
			mp[i] = snapPoint(p)
		}
		slices.SortFunc(mp, comparePoint)
		mp = slices.Compact(mp)
		if len(mp) == 1 {
			return mp[0]
		}
		return mp
	case orb.LineString:
		return canonicalLine(g)
	case orb.MultiLineString:
		mls := make(orb.MultiLineString, len(g))
		for i, ls := range g {
			mls[i] = canonicalLine(ls)
		}
		slices.SortFunc(mls, func(a, b orb.LineString) int { return compareSeq(a, b) })
		mls = slices.CompactFunc(mls, func(a, b orb.LineString) bool { return compareSeq(a, b) == 0 })
		if len(mls) == 1 {
			return mls[0]
		}
		return mls
	case orb.Ring:
		return canonicalPolygon(orb.Polygon{g})
	case orb.Bound:
		return canonicalPolygon(g.ToPolygon())
	case orb.Polygon:
		return canonicalPolygon(g)
	case orb.MultiPolygon:
		mp := make(orb.MultiPolygon, len(g))
		for i, p := range g {
			mp[i] = canonicalPolygon(p)
		}
		slices.SortFunc(mp, comparePolygon)
		if len(mp) == 1 {
			return mp[0]
		}
		return mp
	case orb.Collection:
		type member struct {
			g   orb.Geometry
			enc []byte
		}
		ms := make([]member, len(g))
		for i, h := range g {
			c := Canonical(h)
			ms[i] = member{c, appendGeometry(nil, c)}
		}
		slices.SortStableFunc(ms, func(a, b member) int { return compareBytes(a.enc, b.enc) })
		out := make(orb.Collection, len(ms))
		for i, m := range ms {
			out[i] = m.g
		}
		return out
	}
	return g
}

func compareBytes(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return len(a) - len(b)
}

// compareSeq compares position sequences lexicographically, then by length.
func compareSeq[S ~[]orb.Point](a, b S) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := comparePoint(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func comparePolygon(a, b orb.Polygon) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareSeq(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func canonicalLine(ls orb.LineString) orb.LineString {
	out := make(orb.LineString, 0, len(ls))
	for _, p := range ls {
		p = snapPoint(p)
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	if len(ls) >= 4 && len(out) >= 4 && out[0] == out[len(out)-1] {
		return orb.LineString(canonicalRing(orb.Ring(out), true))
	}
	rev := make(orb.LineString, len(out))
	for i, p := range out {
		rev[len(out)-1-i] = p
	}
	if compareSeq(rev, out) < 0 {
		return rev
	}
	return out
}

func canonicalPolygon(p orb.Polygon) orb.Polygon {
	out := make(orb.Polygon, len(p))
	for i, r := range p {
		out[i] = canonicalRing(r, i == 0)
	}
	if len(out) > 2 {
		slices.SortFunc(out[1:], func(a, b orb.Ring) int { return compareSeq(a, b) })
	}
	return out
}

// canonicalRing rounds, removes repeats, orients (counter-clockwise when
// ccw), rotates to the smallest start and closes a ring.
func canonicalRing(r orb.Ring, ccw bool) orb.Ring {
	open := make(orb.Ring, 0, len(r)+1)
	for _, p := range r {
		p = snapPoint(p)
		if len(open) == 0 || open[len(open)-1] != p {
			open = append(open, p)
		}
	}
	for len(open) > 1 && open[0] == open[len(open)-1] {
		open = open[:len(open)-1]
	}
	if len(open) == 0 {
		return open
	}
	rev := func(s orb.Ring) orb.Ring {
		t := make(orb.Ring, len(s))
		for i, p := range s {
			t[len(s)-1-i] = p
		}
		return t
	}
	closed := append(append(orb.Ring(nil), open...), open[0])
	switch a := signedArea2(closed); {
	case a == 0:
		if r2 := rotateMin(rev(open)); compareSeq(r2, rotateMin(open)) < 0 {
			open = r2
		}
	case (a > 0) != ccw:
		open = rev(open)
	}
	open = rotateMin(open)
	return append(open, open[0])
}

// rotateMin rotates an open ring in place to start at its smallest
// position; among several equal smallest positions it picks the rotation
// giving the smallest sequence.
func rotateMin(s orb.Ring) orb.Ring {
	best := 0
	for i := 1; i < len(s); i++ {
		switch comparePoint(s[i], s[best]) {
		case -1:
			best = i
		case 0:
			if compareRotations(s, i, best) < 0 {
				best = i
			}
		}
	}
	if best == 0 {
		return s
	}
	out := make(orb.Ring, 0, len(s)+1)
	out = append(out, s[best:]...)
	return append(out, s[:best]...)
}

func compareRotations(s orb.Ring, i, j int) int {
	n := len(s)
	for k := 0; k < n; k++ {
		if c := comparePoint(s[(i+k)%n], s[(j+k)%n]); c != 0 {
			return c
		}
	}
	return 0
}

// Fingerprint returns the SHA-256, as 64 lowercase hex characters, of a
// binary encoding of Canonical(g): geometries with the same boundary
// written differently share it, different boundaries (beyond the rounding
// of Canonical) do not. The encoding is a version prefix
// "siteenv/geo fingerprint v1\x00" followed by, recursively, a WKB type
// code byte (0 nil, 1 Point, 2 LineString, 3 Polygon, 4 MultiPoint,
// 5 MultiLineString, 6 MultiPolygon, 7 GeometryCollection), big-endian
// uint32 counts, and coordinates as big-endian IEEE 754 doubles
// (longitude, latitude; -0 as 0). Safe for concurrent use.
func Fingerprint(g orb.Geometry) string {
	h := sha256.New()
	h.Write([]byte(fingerprintPrefix))
	writeGeometry(h, Canonical(g))
	return hex.EncodeToString(h.Sum(nil))
}

const fingerprintPrefix = "siteenv/geo fingerprint v1\x00"

func writeGeometry(h hash.Hash, g orb.Geometry) {
	buf := appendGeometry(make([]byte, 0, 4096), g)
	h.Write(buf)
}

func appendCoord(b []byte, v float64) []byte {
	if v == 0 {
		v = 0
	}
	if math.IsNaN(v) {
		v = math.NaN()
	}
	return binary.BigEndian.AppendUint64(b, math.Float64bits(v))
}

func appendSeq(b []byte, s []orb.Point) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	for _, p := range s {
		b = appendCoord(appendCoord(b, p[0]), p[1])
	}
	return b
}

func appendRings(b []byte, p orb.Polygon) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	for _, r := range p {
		b = appendSeq(b, r)
	}
	return b
}

// appendGeometry appends the fingerprint encoding of an already canonical
// geometry.
func appendGeometry(b []byte, g orb.Geometry) []byte {
	switch g := g.(type) {
	case orb.Point:
		return appendCoord(appendCoord(append(b, 1), g[0]), g[1])
	case orb.LineString:
		return appendSeq(append(b, 2), g)
	case orb.Polygon:
		return appendRings(append(b, 3), g)
	case orb.MultiPoint:
		return appendSeq(append(b, 4), g)
	case orb.MultiLineString:
		b = binary.BigEndian.AppendUint32(append(b, 5), uint32(len(g)))
		for _, ls := range g {
			b = appendSeq(b, ls)
		}
		return b
	case orb.MultiPolygon:
		b = binary.BigEndian.AppendUint32(append(b, 6), uint32(len(g)))
		for _, p := range g {
			b = appendRings(b, p)
		}
		return b
	case orb.Collection:
		b = binary.BigEndian.AppendUint32(append(b, 7), uint32(len(g)))
		for _, h := range g {
			b = appendGeometry(b, h)
		}
		return b
	}
	return append(b, 0)
}
