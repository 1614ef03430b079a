package engine

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/tiles"
)

var sydney = orb.Point{151.2093, -33.8688}

// metric places points by metres east and north of a centre (exactly:
// azimuthal equidistant about the centre).
type metric struct{ l geo.Local }

func newMetric(c orb.Point) metric { return metric{geo.NewLocal(c)} }

func (m metric) at(x, y float64) orb.Point { return m.l.Inverse(x, y) }

func (m metric) square(x0, y0, x1, y1 float64) orb.Polygon {
	return orb.Polygon{{m.at(x0, y0), m.at(x1, y0), m.at(x1, y1), m.at(x0, y1), m.at(x0, y0)}}
}

func TestRadiusZero(t *testing.T) {
	t.Parallel()
	m := newMetric(sydney)
	donut := m.square(-100, -100, 100, 100)
	donut = append(donut, orb.Ring{m.at(-20, -20), m.at(-20, 20), m.at(20, 20), m.at(20, -20), m.at(-20, -20)})
	features := []tiles.Feature{
		feat("pt-centre", m.at(0, 0)),
		feat("pt-1cm", m.at(0.01, 0)),
		feat("pt-in-site", m.at(60, 60)),
		feat("pt-in-hole", m.at(5, 5)),
		feat("pt-outside", m.at(101, 0)),
		feat("pt-on-corner", m.at(100, 100)),
		feat("poly-around-centre", m.square(-1, -1, 1, 1)),
		feat("poly-overlapping", m.square(90, 90, 200, 200)),
		feat("poly-containing", m.square(-500, -500, 500, 500)),
		feat("poly-in-hole", m.square(-5, -5, 5, 5)),
		feat("poly-outside", m.square(101, -10, 120, 10)),
		feat("line-crossing", orb.LineString{m.at(-150, 50), m.at(150, 50)}),
		feat("line-outside", orb.LineString{m.at(-150, 150), m.at(150, 150)}),
		feat("line-through-centre", orb.LineString{m.at(-10, -10), m.at(10, 10)}),
		feat("line-ending-on-site", orb.LineString{m.at(200, 0), m.at(100, 0)}),
	}
	store := newStore(t)
	rel := publish(t, store, "semantics", [][]tiles.Feature{features}, nil)
	e := newEngine(t, store, Options{})
	run := func(site orb.Geometry, r float64) []string {
		t.Helper()
		res := query(t, e, site, r, layerReq(rel))[0]
		for _, f := range res.Features {
			if r == 0 && f.DistanceM != 0 {
				t.Errorf("%s: distance %v at radius 0", f.ID, f.DistanceM)
			}
		}
		return ids(res)
	}
	cases := []struct {
		name string
		site orb.Geometry
		r    float64
		want []string
	}{
		{"point site, radius 0: exact intersection", m.at(0, 0), 0,
			[]string{"line-through-centre", "poly-around-centre", "poly-containing", "poly-in-hole", "pt-centre"}},
		{"point site on a vertex and on a line", m.at(5, 5), 0,
			[]string{"line-through-centre", "poly-containing", "poly-in-hole", "pt-in-hole"}},
		{"polygon site with a hole, radius 0", orb.Polygon(donut), 0,
			[]string{"line-crossing", "line-ending-on-site", "poly-containing", "poly-overlapping", "pt-in-site", "pt-on-corner"}},
		{"polygon site, radius 16 m reaches into the hole", orb.Polygon(donut), 16,
			[]string{"line-crossing", "line-ending-on-site", "line-through-centre", "poly-containing", "poly-in-hole",
				"poly-outside", "poly-overlapping", "pt-in-hole", "pt-in-site", "pt-on-corner", "pt-outside"}},
		{"line site, radius 0", orb.LineString{m.at(30, -300), m.at(30, 300)}, 0,
			[]string{"line-crossing", "line-outside", "poly-containing"}},
	}
	for _, c := range cases {
		got := run(c.site, c.r)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}

	// Distances are geodesic.
	res := query(t, e, m.at(0, 0), 101.00001, layerReq(rel))[0]
	for _, f := range res.Features {
		if f.ID == "pt-outside" {
			if math.Abs(f.DistanceM-101) > 1e-6 {
				t.Errorf("pt-outside at %v m, want 101", f.DistanceM)
			}
		}
	}
	if !slices.Contains(ids(res), "pt-outside") {
		t.Errorf("pt-outside (101 m) missing at radius 101.00001")
	}
	if slices.Contains(ids(query(t, e, m.at(0, 0), 100.99999, layerReq(rel))[0]), "pt-outside") {
		t.Errorf("pt-outside (101 m) found at radius 100.99999")
	}
	// Sorted by distance, then id.
	if !slices.IsSortedFunc(res.Features, func(a, b Feature) int {
		if a.DistanceM != b.DistanceM {
			return cmp.Compare(a.DistanceM, b.DistanceM)
		}
		return cmpS(a.ID, b.ID)
	}) {
		t.Errorf("features not sorted")
	}
}

func cmpS(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestLongEdges: edges are geodesics. A 200 km east-west edge at 34°S bows
// about 530 m south of the straight line in degrees; a site between the two
// lies inside the polygon, and distances follow the geodesic.
func TestLongEdges(t *testing.T) {
	t.Parallel()
	poly := orb.Polygon{{{150, -34}, {152.17, -34}, {152.17, -33}, {150, -33}, {150, -34}}}
	line := orb.LineString{{150, -34.2}, {152.17, -34.2}}
	store := newStore(t)
	rel := publish(t, store, "long", [][]tiles.Feature{{feat("poly", poly), feat("line", line)}}, nil)
	e := newEngine(t, store, Options{})
	fp, fl := newRefGeom(poly), newRefGeom(line)
	m := newMetric(orb.Point{151.085, -34})
	for _, y := range []float64{-200, -400, -800, -1500} {
		site := m.at(0, y)
		sref := newRefGeom(site)
		for _, r := range []float64{0, 100, 300, 700} {
			res := query(t, e, site, r, layerReq(rel))[0]
			got := map[string]float64{}
			for _, f := range res.Features {
				got[f.ID] = f.DistanceM
			}
			for id, fg := range map[string]*refGeom{"poly": fp, "line": fl} {
				rr := refExact(sref, fg, r)
				d, in := got[id]
				if in != rr.member || (in && math.Abs(d-rr.dist) > 1e-3) {
					t.Errorf("site %.0f m south, r=%v: %s found=%v dist=%.4f; reference %v %.4f", -y, r, id, in, d, rr.member, rr.dist)
				}
			}
		}
	}
}
