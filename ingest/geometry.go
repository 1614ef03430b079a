package ingest

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// Geometry handling for source rows. A row's GeoJSON geometry is read by
// geo.ReadGeometry in Source mode (in place inside its feature, before any
// range check: positions may be MGA metres). The checks here are
// geo.Validate's structural ones (type, vertex cap, finite coordinates in
// range, enough positions, closed rings) with its wording, in the source
// CRS; once in CRS84, polygons pass geo.Validate itself, the validator of
// POST /sites (checkTopology), or are repaired.

// geomError is a per-row geometry problem, worded as geo words a site's.
type geomError = geo.ValidationError

func badGeom(path, format string, args ...any) *geomError {
	return &geomError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// tooManyPositions is the vertex cap's message, as geo.ReadGeometry words
// it for a source geometry.
func tooManyPositions(max int) *geomError {
	return badGeom("coordinates", "geometry has more than %d positions (the vertex cap)", max)
}

// coordPath formats "coordinates[i][j]...", as geo's paths are.
func coordPath(idx ...int) string { return geo.CoordPath(idx...) }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// countPositions counts the positions of g (closing positions included).
func countPositions(g orb.Geometry) int {
	switch g := g.(type) {
	case orb.Point:
		return 1
	case orb.MultiPoint:
		return len(g)
	case orb.LineString:
		return len(g)
	case orb.Ring:
		return len(g)
	case orb.MultiLineString:
		n := 0
		for _, l := range g {
			n += len(l)
		}
		return n
	case orb.Polygon:
		n := 0
		for _, r := range g {
			n += len(r)
		}
		return n
	case orb.MultiPolygon:
		n := 0
		for _, pg := range g {
			n += countPositions(pg)
		}
		return n
	case orb.Collection:
		n := 0
		for _, c := range g {
			n += countPositions(c)
		}
		return n
	}
	return 0
}

// countWKTPositions counts the positions of a WKT text without parsing it:
// a position starts wherever a number follows '(' or ','.
func countWKTPositions(s string) int {
	n := 0
	expect := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '(' || c == ',':
			expect = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			if expect && (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') || c == 'N' || c == 'n' || c == 'I' || c == 'i') {
				n++
			}
			expect = false
		}
	}
	return n
}

// geomTypeName is the GeoJSON name of g's type, for messages.
func geomTypeName(g orb.Geometry) string {
	switch g.(type) {
	case orb.Collection:
		return "GeometryCollection"
	case orb.Ring:
		return "Ring"
	case orb.Bound:
		return "Bound"
	}
	return g.GeoJSONType()
}

// checkStructure applies the structural checks to g in its source CRS:
// allowed type, finite coordinates, non-empty, LineStrings of at least 2
// distinct positions, closed rings of at least 4 positions enclosing an
// area. Self-intersections are allowed.
func checkStructure(g orb.Geometry, allowed map[string]bool) *geomError {
	if g == nil {
		return badGeom("", "geometry is null")
	}
	name := geomTypeName(g)
	if !allowed[name] {
		return badGeom("type", "geometry type %s is not allowed in this layer (allowed: %s)", name, allowedList(allowed))
	}
	switch g := g.(type) {
	case orb.Point:
		return checkFinite(g, func() string { return "coordinates" })
	case orb.MultiPoint:
		if len(g) == 0 {
			return badGeom("coordinates", "empty geometry: MultiPoint has no positions")
		}
		for i, pt := range g {
			if err := checkFinite(pt, func() string { return coordPath(i) }); err != nil {
				return err
			}
		}
	case orb.LineString:
		return checkLine(g, nil)
	case orb.MultiLineString:
		if len(g) == 0 {
			return badGeom("coordinates", "empty geometry: MultiLineString has no LineStrings")
		}
		for i, ls := range g {
			if err := checkLine(ls, []int{i}); err != nil {
				return err
			}
		}
	case orb.Polygon:
		return checkPolygon(g, nil)
	case orb.MultiPolygon:
		if len(g) == 0 {
			return badGeom("coordinates", "empty geometry: MultiPolygon has no Polygons")
		}
		for i, pg := range g {
			if err := checkPolygon(pg, []int{i}); err != nil {
				return err
			}
		}
	}
	return nil
}

func allowedList(allowed map[string]bool) string {
	var out []string
	for _, t := range GeometryTypes {
		if allowed[t] {
			out = append(out, t)
		}
	}
	return strings.Join(out, ", ")
}

func checkFinite(pt orb.Point, path func() string) *geomError {
	if reason := sourcePosition(pt); reason != "" {
		return badGeom(path(), "%s", reason)
	}
	return nil
}

// sourcePosition is the position rule of source rows (a geo.PositionRule):
// finite, in any range (positions may be MGA metres).
func sourcePosition(pt orb.Point) string {
	switch {
	case math.IsNaN(pt[0]) || math.IsInf(pt[0], 0):
		return "longitude (x) is not a finite number"
	case math.IsNaN(pt[1]) || math.IsInf(pt[1], 0):
		return "latitude (y) is not a finite number"
	}
	return ""
}

func checkLine(ls orb.LineString, prefix []int) *geomError {
	if len(ls) == 0 {
		return badGeom(coordPath(prefix...), "empty geometry: LineString has no positions")
	}
	return geo.CheckLine(ls, prefix, sourcePosition)
}

// checkPolygon applies geo.CheckRing, the ring rule site geometry shares,
// to each ring; self-intersections are allowed in source rows.
func checkPolygon(pg orb.Polygon, prefix []int) *geomError {
	if len(pg) == 0 {
		return badGeom(coordPath(prefix...), "empty geometry: Polygon has no rings")
	}
	for ri, ring := range pg {
		if _, _, err := geo.CheckRing(ring, append(append([]int(nil), prefix...), ri), sourcePosition); err != nil {
			return err
		}
	}
	return nil
}

// checkRange checks every position of g (in CRS84) is within longitude
// -180..180 and latitude -90..90.
func checkRange(g orb.Geometry) *geomError {
	var bad *geomError
	var path []int
	var walk func(g orb.Geometry)
	pts := func(ps []orb.Point) {
		for i, p := range ps {
			if bad != nil {
				return
			}
			if p[0] < -180 || p[0] > 180 || math.IsNaN(p[0]) {
				bad = badGeom(coordPath(append(path, i)...), "longitude %s out of range -180..180", fmtNum(p[0]))
			} else if p[1] < -90 || p[1] > 90 || math.IsNaN(p[1]) {
				bad = badGeom(coordPath(append(path, i)...), "latitude %s out of range -90..90", fmtNum(p[1]))
			}
		}
	}
	walk = func(g orb.Geometry) {
		switch g := g.(type) {
		case orb.Point:
			if g[0] < -180 || g[0] > 180 || math.IsNaN(g[0]) {
				bad = badGeom(coordPath(path...), "longitude %s out of range -180..180", fmtNum(g[0]))
			} else if g[1] < -90 || g[1] > 90 || math.IsNaN(g[1]) {
				bad = badGeom(coordPath(path...), "latitude %s out of range -90..90", fmtNum(g[1]))
			}
		case orb.MultiPoint:
			pts(g)
		case orb.LineString:
			pts(g)
		case orb.Ring:
			pts(g)
		case orb.MultiLineString:
			for i, l := range g {
				path = append(path, i)
				pts(l)
				path = path[:len(path)-1]
			}
		case orb.Polygon:
			for i, r := range g {
				path = append(path, i)
				pts(r)
				path = path[:len(path)-1]
			}
		case orb.MultiPolygon:
			for i, pg := range g {
				path = append(path, i)
				walk(pg)
				path = path[:len(path)-1]
			}
		}
	}
	walk(g)
	return bad
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// checkTopology validates a polygonal g (in CRS84) as POST /sites does
// (geo.Validate): an invalid polygon is rejected with geo's reason and
// location, or, with Options.Repair, made valid as PostGIS ST_MakeValid
// does, and w.repaired set. Queries would otherwise read an invalid polygon
// by whatever rule their predicates happen to follow.
func (w *worker) checkTopology(g orb.Geometry) (orb.Geometry, string) {
	switch g.(type) {
	case orb.Polygon, orb.MultiPolygon:
	default:
		return g, ""
	}
	err := geo.Validate(g, 0)
	if err == nil {
		return g, ""
	}
	if !w.cfg.Repair {
		return g, err.Error() + " (--repair makes it valid)"
	}
	fixed, ok := geo.MakeValid(g)
	if !ok {
		return g, err.Error() + "; repair leaves no area"
	}
	if name := geomTypeName(fixed); !w.cfg.allowed[name] {
		return g, err.Error() + "; repaired it is a " + name + ", which the layer does not allow"
	}
	if verr := geo.Validate(fixed, 0); verr != nil {
		return g, err.Error() + "; repair failed: " + verr.Error()
	}
	w.repaired = true
	return fixed, ""
}

// reproject converts g from c to CRS84 in place (g must not be shared).
func reproject(c geo.CRS, g orb.Geometry) (orb.Geometry, *geomError) {
	if c.IsGeographic() {
		return g, nil
	}
	out, err := geo.ReprojectToCRS84(c, g)
	if err != nil {
		return nil, badGeom("coordinates", "cannot convert from %s: %v", c, err)
	}
	return out, nil
}

// appendWKB appends g, one of the six GeoJSON types, as little-endian ISO
// WKB (2D).
func appendWKB(b []byte, g orb.Geometry) ([]byte, error) {
	hdr := func(b []byte, typ uint32) []byte {
		b = append(b, 1)
		return binary.LittleEndian.AppendUint32(b, typ)
	}
	pt := func(b []byte, p orb.Point) []byte {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p[0]))
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(p[1]))
	}
	pts := func(b []byte, ps []orb.Point) []byte {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ps)))
		for _, p := range ps {
			b = pt(b, p)
		}
		return b
	}
	poly := func(b []byte, pg orb.Polygon) []byte {
		b = hdr(b, 3)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(pg)))
		for _, r := range pg {
			b = pts(b, r)
		}
		return b
	}
	switch g := g.(type) {
	case orb.Point:
		return pt(hdr(b, 1), g), nil
	case orb.LineString:
		return pts(hdr(b, 2), g), nil
	case orb.Polygon:
		return poly(b, g), nil
	case orb.MultiPoint:
		b = hdr(b, 4)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(g)))
		for _, p := range g {
			b = pt(hdr(b, 1), p)
		}
		return b, nil
	case orb.MultiLineString:
		b = hdr(b, 5)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(g)))
		for _, l := range g {
			b = pts(hdr(b, 2), l)
		}
		return b, nil
	case orb.MultiPolygon:
		b = hdr(b, 6)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(g)))
		for _, pg := range g {
			b = poly(b, pg)
		}
		return b, nil
	}
	return b, fmt.Errorf("ingest: cannot encode %T as WKB", g)
}
