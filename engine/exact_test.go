package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/tiles"
)

var testCities = []struct {
	name   string
	center orb.Point
}{
	{"sydney", orb.Point{151.2093, -33.8688}},
	{"brisbane", orb.Point{153.0251, -27.4698}},
	{"perth", orb.Point{115.8605, -31.9505}},
}

// starPolygon is a simple polygon around (x, y): k vertices at increasing
// angles and radii in [r0, r1] metres.
func starRing(m metric, rng *rand.Rand, x, y float64, k int, r0, r1 float64, clockwise bool) orb.Ring {
	angles := make([]float64, k)
	for i := range angles {
		angles[i] = (float64(i) + 0.2 + 0.6*rng.Float64()) * 2 * math.Pi / float64(k)
	}
	ring := make(orb.Ring, 0, k+1)
	for _, a := range angles {
		if clockwise {
			a = -a
		}
		rad := r0 + (r1-r0)*rng.Float64()
		ring = append(ring, m.at(x+rad*math.Cos(a), y+rad*math.Sin(a)))
	}
	return append(ring, ring[0])
}

func randomLine(m metric, rng *rand.Rand, x, y float64, n int, s0, s1 float64) orb.LineString {
	ls := orb.LineString{m.at(x, y)}
	dir := rng.Float64() * 2 * math.Pi
	for i := 1; i < n; i++ {
		dir += (rng.Float64() - 0.5) * 2
		step := s0 + (s1-s0)*rng.Float64()
		x, y = x+step*math.Cos(dir), y+step*math.Sin(dir)
		ls = append(ls, m.at(x, y))
	}
	return ls
}

// exactnessData generates a city's features: points, lines, polygons of
// several kinds (with holes, multi-part, large, long geodesic edges),
// spread over ±12 km and grouped into four tiles by quadrant.
func exactnessData(city string, c orb.Point, seed uint64) [][]tiles.Feature {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := newMetric(c)
	u := func() float64 { return (rng.Float64()*2 - 1) * 12000 }
	groups := make([][]tiles.Feature, 4)
	n := 0
	add := func(kind string, x, y float64, g orb.Geometry) {
		q := 0
		if x > 0 {
			q++
		}
		if y > 0 {
			q += 2
		}
		n++
		groups[q] = append(groups[q], tiles.Feature{
			ID: fmt.Sprintf("%s-%s-%04d", city, kind, n), Geometry: g,
			Properties: map[string]any{"kind": kind, "n": int64(n)},
		})
	}
	for i := 0; i < 500; i++ {
		x, y := u(), u()
		add("point", x, y, m.at(x, y))
	}
	for i := 0; i < 12; i++ {
		x, y := u(), u()
		mp := orb.MultiPoint{}
		for j := 0; j < 2+rng.IntN(4); j++ {
			mp = append(mp, m.at(x+(rng.Float64()-0.5)*1000, y+(rng.Float64()-0.5)*1000))
		}
		add("multipoint", x, y, mp)
	}
	for i := 0; i < 250; i++ {
		x, y := u(), u()
		add("line", x, y, randomLine(m, rng, x, y, 2+rng.IntN(5), 20, 800))
	}
	for i := 0; i < 8; i++ {
		// Long geodesic edges through the area.
		a := rng.Float64() * 2 * math.Pi
		x, y := u()/2, u()/2
		ls := orb.LineString{m.at(x-20000*math.Cos(a), y-20000*math.Sin(a)), m.at(x+20000*math.Cos(a), y+20000*math.Sin(a))}
		add("longline", x, y, ls)
	}
	for i := 0; i < 10; i++ {
		x, y := u(), u()
		add("multiline", x, y, orb.MultiLineString{randomLine(m, rng, x, y, 3, 50, 300), randomLine(m, rng, x+500, y, 3, 50, 300)})
	}
	for i := 0; i < 250; i++ {
		x, y := u(), u()
		add("polygon", x, y, orb.Polygon{starRing(m, rng, x, y, 4+rng.IntN(7), 20, 300, false)})
	}
	for i := 0; i < 10; i++ {
		x, y := u(), u()
		add("bigpolygon", x, y, orb.Polygon{starRing(m, rng, x, y, 24+rng.IntN(16), 1000, 4000, false)})
	}
	for i := 0; i < 10; i++ {
		x, y := u(), u()
		add("donut", x, y, orb.Polygon{starRing(m, rng, x, y, 12, 450, 600, false), starRing(m, rng, x, y, 8, 150, 300, true)})
	}
	for i := 0; i < 10; i++ {
		x, y := u(), u()
		add("multipolygon", x, y, orb.MultiPolygon{
			{starRing(m, rng, x, y, 6, 50, 150, false)},
			{starRing(m, rng, x+600, y+200, 5, 50, 150, false)},
		})
	}
	return groups
}

// randomSite returns a site of the given kind within ±6 km of the centre.
func randomSite(m metric, rng *rand.Rand, kind int) orb.Geometry {
	x, y := (rng.Float64()*2-1)*6000, (rng.Float64()*2-1)*6000
	switch kind {
	case 0:
		return m.at(x, y)
	case 1:
		return randomLine(m, rng, x, y, 2+rng.IntN(7), 50, 600)
	case 2:
		return orb.Polygon{starRing(m, rng, x, y, 5+rng.IntN(8), 50, 350, false)}
	default:
		mp := orb.MultiPoint{}
		for j := 0; j < 2+rng.IntN(3); j++ {
			mp = append(mp, m.at(x+(rng.Float64()-0.5)*2000, y+(rng.Float64()-0.5)*2000))
		}
		return mp
	}
}

// TestExactness compares the engine with the brute-force geodesic
// reference over random sites and radii: the result sets must be equal
// except for features within 1 cm of the search boundary, and distances
// within 1 mm.
func TestExactness(t *testing.T) { testExactness(t, edgeIndexMinVertices) }

// TestExactnessEdgeIndex is TestExactness with every feature of two
// positions or more (points aside) evaluated through its edge index.
func TestExactnessEdgeIndex(t *testing.T) { testExactness(t, 2) }

func testExactness(t *testing.T, edgeMin int) {
	t.Parallel()
	perKind := 5
	if raceEnabled || testing.Short() {
		perKind = 1
	}
	store := newStore(t)
	e := newEngine(t, store, Options{})
	e.edgeMin = edgeMin
	for ci, city := range testCities {
		t.Run(city.name, func(t *testing.T) {
			groups := exactnessData(city.name, city.center, uint64(ci+1))
			rel := publish(t, store, "exact-"+city.name, groups, nil)
			var refs []*refGeom
			var all []tiles.Feature
			for _, g := range groups {
				for _, f := range g {
					all = append(all, f)
					refs = append(refs, newRefGeom(f.Geometry))
				}
			}
			m := newMetric(city.center)
			rng := rand.New(rand.NewPCG(uint64(ci+100), 11))
			for q := 0; q < perKind*4; q++ {
				kind := q % 4
				site := randomSite(m, rng, kind)
				r := math.Pow(10, 4*rng.Float64())
				if rng.IntN(8) == 0 {
					r = 0
				}
				res := query(t, e, site, r, layerReq(rel))[0]
				if res.Status == StatusUnavailable {
					t.Fatalf("query %d: %+v", q, res)
				}
				got := map[string]float64{}
				for _, f := range res.Features {
					got[f.ID] = f.DistanceM
				}
				sref := newRefGeom(site)
				errs, members, exempt := 0, 0, 0
				for i, f := range all {
					rr := refEvaluate(sref, refs[i], r)
					d, in := got[f.ID]
					if rr.member {
						members++
					}
					if rr.exempt(r) {
						exempt++
						continue
					}
					switch {
					case in != rr.member:
						errs++
						if errs <= 5 {
							t.Errorf("%s query %d (%s, r=%.3f): %s engine=%v ref=%v (ref dist %.6f, margin %.6f, engine dist %.6f)",
								city.name, q, site.GeoJSONType(), r, f.ID, in, rr.member, rr.dist, rr.margin, d)
						}
					case in && rr.exact && math.Abs(d-rr.dist) > 1e-3:
						errs++
						if errs <= 5 {
							t.Errorf("%s query %d (%s, r=%.3f): %s distance %.6f, reference %.6f", city.name, q, site.GeoJSONType(), r, f.ID, d, rr.dist)
						}
					case in && d > r:
						t.Errorf("%s: distance %v beyond radius %v", f.ID, d, r)
					}
				}
				if n := len(res.Features); res.Count == nil || *res.Count != n {
					t.Errorf("count %v, %d features", res.Count, n)
				}
				t.Logf("query %d: %s r=%.1f: %d matches (reference %d, %d exempt)", q, site.GeoJSONType(), r, len(got), members, exempt)

				// Boundary probes: features at reference distance D must be
				// found at radius D+1mm and not at D-1mm (the contract asks
				// for 1 cm; the engine's residual is ~0.2 mm).
				probed := 0
				for _, i := range rng.Perm(len(all)) {
					if probed == 4 {
						break
					}
					rr := refExact(sref, refs[i], 0)
					if rr.dist < 0.01 || rr.dist > MaxRadiusM-1 {
						continue
					}
					probed++
					for _, delta := range []float64{1e-3, -1e-3} {
						res := query(t, e, site, rr.dist+delta, layerReq(rel))[0]
						if in := slices.Contains(ids(res), all[i].ID); in != (delta > 0) {
							t.Errorf("%s query %d (%s): %s at reference distance %.6f: found=%v at radius %.6f",
								city.name, q, site.GeoJSONType(), all[i].ID, rr.dist, in, rr.dist+delta)
						}
					}
				}
			}
			if indexed := heavyFeatures(e); edgeMin <= 2 && indexed == 0 {
				t.Error("no feature was edge-indexed")
			}
		})
	}
}

// heavyFeatures counts the edge-indexed features of e's loaded shards.
func heavyFeatures(e *Engine) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, se := range e.mu.shards {
		if se.s != nil {
			n += len(se.s.heavy)
		}
	}
	return n
}

// TestBulgeBound checks bulgeDeg against geodesics: every point of the
// geodesic lies within the bound of the straight line in degrees.
func TestBulgeBound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 2000; i++ {
		lat := -10 - 35*rng.Float64()
		a := orb.Point{110 + 40*rng.Float64(), lat}
		size := math.Pow(10, -3+3.7*rng.Float64()) // up to 5 degrees
		az := rng.Float64() * 2 * math.Pi
		b := orb.Point{a[0] + size*math.Cos(az), a[1] + size*math.Sin(az)}
		m := bulgeDeg(a, b)
		pts := geodesicPoints(nil, a, b, 16)
		for _, p := range pts {
			q := closestOnSeg(p, a, b)
			if dx, dy := math.Abs(p[0]-q[0]), math.Abs(p[1]-q[1]); dx > m || dy > m {
				t.Fatalf("edge %v-%v: geodesic point %v is (%g, %g) deg off the chord, bound %g", a, b, p, dx, dy, m)
			}
		}
	}
}

func TestSplitSite(t *testing.T) {
	t.Parallel()
	// A 40 km line is cut into parts, each within a few km of its centre,
	// and gives the same answers as the reference.
	m := newMetric(sydney)
	long := orb.LineString{m.at(-20000, -3000), m.at(0, 0), m.at(20000, 2000)}
	s := prepareSite(long, geo.NewLocal)
	if len(s.parts) < 10 {
		t.Fatalf("%d parts", len(s.parts))
	}
	for _, pt := range s.parts {
		for _, sg := range pt.segs {
			for _, p := range sg {
				if d := math.Hypot(p[0], p[1]); d > 4500 {
					t.Fatalf("part position %.0f m from its centre", d)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	var feats []tiles.Feature
	for i := 0; i < 400; i++ {
		x, y := (rng.Float64()*2-1)*24000, (rng.Float64()*2-1)*6000
		feats = append(feats, feat(fmt.Sprintf("p%03d", i), m.at(x, y)))
	}
	for i := 0; i < 40; i++ {
		x, y := (rng.Float64()*2-1)*24000, (rng.Float64()*2-1)*6000
		feats = append(feats, feat(fmt.Sprintf("g%03d", i), orb.Polygon{starRing(m, rng, x, y, 6, 50, 400, false)}))
	}
	store := newStore(t)
	rel := publish(t, store, "split", [][]tiles.Feature{feats}, nil)
	e := newEngine(t, store, Options{})
	sref := newRefGeom(long)
	for _, r := range []float64{0, 150, 1000, 4000} {
		res := query(t, e, long, r, layerReq(rel))[0]
		got := ids(res)
		var want []string
		for _, f := range feats {
			rr := refEvaluate(sref, newRefGeom(f.Geometry), r)
			if rr.exempt(r) {
				if i := slices.Index(got, f.ID); i >= 0 {
					got = slices.Delete(got, i, i+1)
				}
				continue
			}
			if rr.member {
				want = append(want, f.ID)
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("r=%v: got %d features, want %d", r, len(got), len(want))
		}
	}
}
