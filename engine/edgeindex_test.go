package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/ingest/synth"
	"siteenv/tiles"
)

// indexedCase is a feature both ways: decoded per query (the plain path)
// and decoded once with its edge index.
type indexedCase struct {
	id    string
	plain *flat
	hg    *heavyGeom
}

func indexedCases(t *testing.T, feats []tiles.Feature, minVertices int) []indexedCase {
	t.Helper()
	var out []indexedCase
	for _, f := range feats {
		w := mustWKB(t, f.Geometry)
		hg, err := newHeavyGeom(w, minVertices)
		if err != nil {
			t.Fatal(err)
		}
		if hg == nil {
			continue
		}
		fl := &flat{}
		if err := fl.decodeWKB(w); err != nil {
			t.Fatal(err)
		}
		out = append(out, indexedCase{f.ID, fl, hg})
	}
	return out
}

// heavySample returns the first n features of each heavy layer with at
// most maxVertices positions, and the first giant patch.
func heavySample(t *testing.T, n, maxVertices int) []tiles.Feature {
	t.Helper()
	var out []tiles.Feature
	for _, id := range synth.HeavyLayers {
		k, giant := 0, false
		if err := synth.HeavyFeatures(7, id, func(f tiles.Feature) error {
			f.Properties = map[string]any{"kind": f.Properties["category"], "n": f.Properties["vertices"]}
			v := len(f.Geometry.(orb.Polygon)[0])
			switch {
			case v > maxVertices && !giant && id == synth.HeavyBushfireLayer:
				giant = true
				out = append(out, f)
			case v <= maxVertices && k < n:
				k++
				out = append(out, f)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// siteNear draws a point or a small lot up to 3 km from a random vertex of
// f, or inside f's box.
func siteNear(rng *rand.Rand, f *flat) orb.Geometry {
	var c orb.Point
	if rng.IntN(3) == 0 {
		b := f.box
		c = orb.Point{b.Min[0] + rng.Float64()*(b.Max[0]-b.Min[0]), b.Min[1] + rng.Float64()*(b.Max[1]-b.Min[1])}
	} else {
		v := f.pts[rng.IntN(len(f.pts))]
		d := 3000 * rng.Float64() * rng.Float64()
		a := rng.Float64() * 2 * math.Pi
		c = newMetric(v).at(d*math.Cos(a), d*math.Sin(a))
	}
	m := newMetric(c)
	if rng.IntN(5) < 3 {
		return c
	}
	w, h := 10+50*rng.Float64(), 10+70*rng.Float64()
	return orb.Polygon{{m.at(0, 0), m.at(w, 0), m.at(w, h), m.at(0, h), m.at(0, 0)}}
}

// TestEdgeIndexMatchesPlain holds the edge-indexed evaluation equal to the
// plain one (same membership, distances within a micrometre) on random
// sites: over the exactness features (lines, long geodesic edges, holes,
// multipolygons; every feature of two positions or more indexed) and over
// heavy polygons of thousands to 250,000 vertices.
func TestEdgeIndexMatchesPlain(t *testing.T) {
	t.Parallel()
	var cases []indexedCase
	for ci, city := range testCities {
		var all []tiles.Feature
		for _, g := range exactnessData(city.name, city.center, uint64(ci+1)) {
			all = append(all, g...)
		}
		cases = append(cases, indexedCases(t, all, 2)...)
	}
	small := len(cases)
	maxV := 20_000
	if testing.Short() || raceEnabled {
		maxV = 3000
	}
	cases = append(cases, indexedCases(t, heavySample(t, 4, maxV), edgeIndexMinVertices)...)
	if len(cases) <= small+4 {
		t.Fatalf("%d heavy cases", len(cases)-small)
	}
	rng := rand.New(rand.NewPCG(29, 1))
	members, inside, compared := 0, 0, 0
	sitesPer := 12
	if testing.Short() || raceEnabled {
		sitesPer = 4
	}
	for ci, c := range cases {
		n := 1
		if ci >= small {
			n = sitesPer
		}
		for range n {
			var g orb.Geometry
			if ci < small {
				g = randomSite(newMetric(testCities[ci*len(testCities)/small].center), rng, rng.IntN(4))
			} else {
				g = siteNear(rng, c.plain)
			}
			s := prepareSite(g, geo.NewLocal)
			r := math.Pow(10, 3.7*rng.Float64())
			if rng.IntN(8) == 0 {
				r = 0
			}
			with, without := newEvaluator(s, r), newEvaluator(s, r)
			in1, d1 := with.heavy(c.hg)
			in2, d2 := without.feature(c.plain)
			compared++
			if in1 != in2 || (in1 && math.Abs(d1-d2) > 1e-6) {
				t.Fatalf("%s, %v r=%.3f: indexed %v %.9f m, plain %v %.9f m", c.id, g, r, in1, d1, in2, d2)
			}
			if in1 {
				members++
				if d1 == 0 {
					inside++
				}
			}
		}
	}
	if members == 0 || inside == 0 || members == compared {
		t.Fatalf("%d members (%d at distance 0) of %d: the sites test too little", members, inside, compared)
	}
	t.Logf("%d evaluations (%d heavy features), %d members, %d at distance 0", compared, len(cases)-small, members, inside)
}

// TestEdgeIndexContains holds heavyGeom.contains equal to flatContains at
// random points of heavy polygons' boxes, many near their edges.
func TestEdgeIndexContains(t *testing.T) {
	t.Parallel()
	cases := indexedCases(t, heavySample(t, 3, 5000), edgeIndexMinVertices)
	points := 400
	if testing.Short() || raceEnabled {
		points = 40
	}
	rng := rand.New(rand.NewPCG(29, 2))
	in := 0
	for _, c := range cases {
		b := c.plain.box
		for k := range points {
			var p orb.Point
			if k%2 == 0 {
				p = orb.Point{b.Min[0] + rng.Float64()*(b.Max[0]-b.Min[0]), b.Min[1] + rng.Float64()*(b.Max[1]-b.Min[1])}
			} else {
				// Within about a metre of a vertex.
				v := c.plain.pts[rng.IntN(len(c.plain.pts))]
				p = orb.Point{v[0] + (rng.Float64()-0.5)*2e-5, v[1] + (rng.Float64()-0.5)*2e-5}
			}
			got, want := c.hg.contains(p), flatContains(c.plain, p)
			if got != want {
				t.Fatalf("%s at %v: indexed %v, plain %v", c.id, p, got, want)
			}
			if got {
				in++
			}
		}
	}
	if in == 0 {
		t.Fatal("no point inside")
	}
}

// TestShardEdgeIndexBytes checks that a shard counts its edge indexes.
// Byte counts on one goroutine: it runs without the race detector only.
func TestShardEdgeIndexBytes(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	feats := heavySample(t, 2, 3000)
	st := newStore(t)
	m := publish(t, st, "heavy-bytes", [][]tiles.Feature{feats}, nil)
	vertices := 0
	for _, f := range feats {
		vertices += len(f.Geometry.(orb.Polygon)[0])
	}
	with, err := loadShardMin(t.Context(), st, m.Tiles[0], edgeIndexMinVertices)
	if err != nil {
		t.Fatal(err)
	}
	without, err := loadShardMin(t.Context(), st, m.Tiles[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(with.heavy) != len(feats) || without.heavy != nil {
		t.Fatalf("%d heavy features with the index, %d without; want %d and 0", len(with.heavy), len(without.heavy), len(feats))
	}
	extra := float64(with.bytes-without.bytes) / float64(vertices)
	// Positions (16 B) and the tree (about 3.5 B per edge).
	if extra < 16 || extra > 24 {
		t.Fatalf("edge index costs %.1f B per vertex", extra)
	}
	t.Logf("%d vertices: %.1f B/vertex resident with the index, %.1f without", vertices,
		float64(with.bytes)/float64(vertices), float64(without.bytes)/float64(vertices))
}
