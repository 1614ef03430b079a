package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/planar"

	"siteenv/report/basemap"
)

// reportJurisdiction decides a report's jurisdiction from the site's
// boundary: the states and territories containing its vertices and its
// centroid (points offshore count for none). Exactly one of the contract's
// eight is the site's jurisdiction, and a given one must equal it. None, or
// several (a site across a border, or in Jervis Bay Territory, which is not
// one of the eight), leave it undetermined: the order must name one, and
// when the site touches several it must be one of them.
func reportJurisdiction(geometry json.RawMessage, given string) (string, error) {
	g, err := geojson.UnmarshalGeometry(geometry)
	if err != nil {
		return "", fmt.Errorf("api: stored site geometry: %w", err)
	}
	found := siteStates(g.Geometry())
	if len(found) == 1 && slices.Contains(jurisdictions, found[0]) {
		if given != "" && given != found[0] {
			return "", &Problem{Code: CodeReportJurisdictionConflict,
				Detail:      fmt.Sprintf("The site lies in %s; a report's jurisdiction cannot override the one its boundary determines.", found[0]),
				FieldErrors: []FieldError{{Field: "jurisdiction", Message: "the site lies in " + found[0] + "; omit jurisdiction or send " + found[0]}}}
		}
		return found[0], nil
	}
	var candidates []string
	for _, c := range found {
		if slices.Contains(jurisdictions, c) {
			candidates = append(candidates, c)
		}
	}
	where := "lies in no Australian state or territory of the boundary data (offshore or outside it)"
	if len(found) > 0 {
		where = "touches " + strings.Join(found, ", ")
	}
	switch {
	case given == "":
		msg := "required: one of " + strings.Join(jurisdictions, ", ")
		if len(found) > 1 && len(candidates) > 0 {
			msg = "required: one of " + strings.Join(candidates, ", ")
		}
		return "", &Problem{Code: CodeReportJurisdictionRequired,
			Detail:      "The site's jurisdiction cannot be determined from its boundary (it " + where + "); add jurisdiction to the order.",
			FieldErrors: []FieldError{{Field: "jurisdiction", Message: msg}}}
	case len(found) > 1 && !slices.Contains(candidates, given):
		return "", &Problem{Code: CodeReportJurisdictionConflict,
			Detail:      fmt.Sprintf("The site %s; %s is not among them.", where, given),
			FieldErrors: []FieldError{{Field: "jurisdiction", Message: "must be one of " + strings.Join(candidates, ", ")}}}
	}
	return given, nil
}

// siteStates returns, sorted, the basemap codes of the states containing
// the centroid of g or any of its vertices (what basemap.StateAt says of
// each). It stops at two: more tell nothing new.
//
// Testing 10,000 vertices against whole state outlines costs about half a
// second, so only the state edges that cross the site's bound are used: a
// state contains a vertex p exactly when it contains the bound's centre c
// and the segment c-p crosses its edges an even number of times, or does
// not contain c and crosses them an odd number of times; every edge the
// segment crosses crosses the bound. A segment that touches an edge's end
// or runs along it is degenerate: that vertex is asked of basemap.StateAt.
func siteStates(g orb.Geometry) []string {
	b := g.Bound()
	c := b.Center()
	var probes []stateProbe
	for _, s := range basemap.Within(b) {
		p := stateProbe{code: s.Code, inRef: planar.MultiPolygonContains(s.Geometry, c)}
		for _, poly := range s.Geometry {
			for _, ring := range poly {
				for i := 1; i < len(ring); i++ {
					if e := [2]orb.Point{ring[i-1], ring[i]}; segmentBound(e).Intersects(b) {
						p.edges = append(p.edges, e)
					}
				}
			}
		}
		probes = append(probes, p)
	}
	var out []string
	visit := func(p orb.Point) bool {
		for _, code := range statesAt(probes, c, p) {
			if !slices.Contains(out, code) {
				out = append(out, code)
			}
		}
		return len(out) < 2
	}
	centroid, _ := planar.CentroidArea(g)
	if visit(centroid) {
		eachPoint(g, visit)
	}
	slices.Sort(out)
	if len(out) > 2 {
		out = out[:2]
	}
	return out
}

// stateProbe is one state near a site: whether it contains the site's
// bound centre, and its edges that cross the bound.
type stateProbe struct {
	code  string
	inRef bool
	edges [][2]orb.Point
}

// statesAt returns the codes of the probed states containing p, or, when
// the segment from the centre c to p is degenerate for any of them, what
// basemap.StateAt says of p.
func statesAt(probes []stateProbe, c, p orb.Point) []string {
	var out []string
	for _, s := range probes {
		in := s.inRef
		for _, e := range s.edges {
			crosses, degenerate := segmentsCross(c, p, e[0], e[1])
			if degenerate {
				if code := basemap.StateAt(p); code != "" {
					return []string{code}
				}
				return nil
			}
			if crosses {
				in = !in
			}
		}
		if in {
			out = append(out, s.code)
		}
	}
	return out
}

func segmentBound(e [2]orb.Point) orb.Bound {
	return orb.Bound{Min: orb.Point{min(e[0][0], e[1][0]), min(e[0][1], e[1][1])}, Max: orb.Point{max(e[0][0], e[1][0]), max(e[0][1], e[1][1])}}
}

// orient is the sign of the turn a -> b -> p: +1 left, -1 right, 0 collinear.
func orient(a, b, p orb.Point) int {
	v := (b[0]-a[0])*(p[1]-a[1]) - (b[1]-a[1])*(p[0]-a[0])
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// segmentsCross says whether segments pq and ab cross at one point inside
// both; degenerate when they touch (an end of one on the other, or
// collinear and overlapping), where counting crossings cannot decide.
func segmentsCross(p, q, a, b orb.Point) (crosses, degenerate bool) {
	if !segmentBound([2]orb.Point{p, q}).Intersects(segmentBound([2]orb.Point{a, b})) {
		return false, false
	}
	o1, o2 := orient(p, q, a), orient(p, q, b)
	o3, o4 := orient(a, b, p), orient(a, b, q)
	if o1 == 0 || o2 == 0 || o3 == 0 || o4 == 0 {
		// Collinear with an end: touching only if the bounds overlap, which
		// they do here; a degenerate p == q (the centre itself) is too.
		return false, true
	}
	return o1 != o2 && o3 != o4, false
}

// eachPoint calls f on every vertex of g until f returns false.
func eachPoint(g orb.Geometry, f func(orb.Point) bool) bool {
	switch g := g.(type) {
	case orb.Point:
		return f(g)
	case orb.MultiPoint:
		for _, p := range g {
			if !f(p) {
				return false
			}
		}
	case orb.LineString:
		return eachPoint(orb.MultiPoint(g), f)
	case orb.Ring:
		return eachPoint(orb.MultiPoint(g), f)
	case orb.MultiLineString:
		for _, l := range g {
			if !eachPoint(l, f) {
				return false
			}
		}
	case orb.Polygon:
		for _, r := range g {
			if !eachPoint(r, f) {
				return false
			}
		}
	case orb.MultiPolygon:
		for _, p := range g {
			if !eachPoint(p, f) {
				return false
			}
		}
	case orb.Collection:
		for _, x := range g {
			if !eachPoint(x, f) {
				return false
			}
		}
	}
	return true
}
