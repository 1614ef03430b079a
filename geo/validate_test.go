package geo

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
)

// sqr returns the closed counter-clockwise square ring with corners
// (x, y) and (x+d, y+d).
func sqr(x, y, d float64) orb.Ring {
	return orb.Ring{{x, y}, {x + d, y}, {x + d, y + d}, {x, y + d}, {x, y}}
}

func reverseRing(r orb.Ring) orb.Ring {
	out := make(orb.Ring, len(r))
	for i, p := range r {
		out[len(r)-1-i] = p
	}
	return out
}

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name string
		g    orb.Geometry
	}{
		{"point", orb.Point{151.2, -33.8}},
		{"extreme point", orb.Point{-180, 90}},
		{"multipoint of one", orb.MultiPoint{{151, -33}}},
		{"multipoint with repeats", orb.MultiPoint{{151, -33}, {151, -33}}},
		{"linestring", orb.LineString{{151, -33}, {152, -34}}},
		{"self-crossing linestring", orb.LineString{{0, 0}, {1, 1}, {1, 0}, {0, 1}}},
		{"linestring with repeats", orb.LineString{{0, 0}, {0, 0}, {1, 1}}},
		{"multilinestring", orb.MultiLineString{{{0, 0}, {1, 1}}, {{0, 1}, {1, 0}}}},
		{"square", orb.Polygon{sqr(0, 0, 1)}},
		{"clockwise square", orb.Polygon{reverseRing(sqr(0, 0, 1))}},
		{"triangle", orb.Polygon{{{0, 0}, {1, 0}, {0, 1}, {0, 0}}}},
		{"repeated positions", orb.Polygon{{{0, 0}, {1, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}, {0, 0}}}},
		{"collinear vertex", orb.Polygon{{{0, 0}, {0.5, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}}},
		{"hole", orb.Polygon{sqr(0, 0, 10), reverseRing(sqr(2, 2, 2))}},
		{"two holes", orb.Polygon{sqr(0, 0, 10), sqr(2, 2, 2), sqr(5, 5, 2)}},
		{"hole touching shell at a vertex", orb.Polygon{sqr(0, 0, 10), {{0, 0}, {2, 1}, {1, 2}, {0, 0}}}},
		{"hole touching shell on an edge", orb.Polygon{sqr(0, 0, 10), {{5, 0}, {6, 1}, {4, 1}, {5, 0}}}},
		{"holes touching at a point", orb.Polygon{sqr(0, 0, 10), sqr(2, 2, 2), sqr(4, 4, 2)}},
		{"multipolygon", orb.MultiPolygon{{sqr(0, 0, 1)}, {sqr(2, 0, 1)}}},
		{"multipolygon touching at a corner", orb.MultiPolygon{{sqr(0, 0, 1)}, {sqr(1, 1, 1)}}},
		{"island in a lake", orb.MultiPolygon{{sqr(0, 0, 10), sqr(2, 2, 6)}, {sqr(3, 3, 2)}}},
		{"island touching its lake", orb.MultiPolygon{{sqr(0, 0, 10), sqr(2, 2, 6)}, {{{2, 2}, {4, 3}, {3, 4}, {2, 2}}}}},
		{"thin sliver", orb.Polygon{{{151, -33}, {151.01, -33.01}, {151.01, -33.01 + 1e-7}, {151, -33}}}},
		{"tiny square", orb.Polygon{sqr(151.2, -33.8, 1e-8)}},
		{"spiral", orb.Polygon{spiral(2000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Validate(tt.g, 10000); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		g      orb.Geometry
		max    int
		path   string
		reason string // substring
	}{
		{"nil", nil, 0, "", "missing"},
		{"collection", orb.Collection{orb.Point{0, 0}}, 0, "type", "GeometryCollection is not allowed"},
		{"ring", sqr(0, 0, 1), 0, "type", "Ring is not allowed"},
		{"bound", orb.Bound{}, 0, "type", "Bound is not allowed"},
		{"latitude", orb.Point{151, -95}, 0, "coordinates", "latitude -95 out of range -90..90"},
		{"longitude", orb.Point{180.5, 0}, 0, "coordinates", "longitude 180.5 out of range -180..180"},
		{"NaN", orb.Point{math.NaN(), 0}, 0, "coordinates", "longitude is not a finite number"},
		{"Inf", orb.MultiPoint{{0, 0}, {0, math.Inf(-1)}}, 0, "coordinates[1]", "latitude is not a finite number"},
		{"empty multipoint", orb.MultiPoint{}, 0, "coordinates", "at least 1"},
		{"short linestring", orb.LineString{{0, 0}}, 0, "coordinates", "at least 2"},
		{"degenerate linestring", orb.LineString{{0, 0}, {0, 0}}, 0, "coordinates", "2 distinct"},
		{"bad multilinestring member", orb.MultiLineString{{{0, 0}, {1, 1}}, {{0, 0}, {1, 91}}}, 0, "coordinates[1][1]", "latitude 91"},
		{"empty multilinestring", orb.MultiLineString{}, 0, "coordinates", "at least 1"},
		{"empty polygon", orb.Polygon{}, 0, "coordinates", "no rings"},
		{"empty multipolygon", orb.MultiPolygon{}, 0, "coordinates", "at least 1"},
		{"short ring", orb.Polygon{{{0, 0}, {1, 0}, {0, 0}}}, 0, "coordinates[0]", "at least 4"},
		{"unclosed ring", orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}}, 0, "coordinates[0]", "ring is not closed"},
		{"bad vertex", orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 100}, {0, 0}}}, 0, "coordinates[0][3]", "latitude 100 out of range"},
		{"two distinct positions", orb.Polygon{{{0, 0}, {1, 0}, {0, 0}, {1, 0}, {0, 0}}}, 0, "coordinates[0]", "zero area"},
		{"repeats only", orb.Polygon{{{0, 0}, {1, 0}, {1, 0}, {0, 0}}}, 0, "coordinates[0]", "fewer than 3 distinct"},
		{"collinear ring", orb.Polygon{{{0, 0}, {1, 1}, {2, 2}, {0, 0}}}, 0, "coordinates[0]", "zero area"},
		{"bow tie", orb.Polygon{{{0, 0}, {1, 1}, {1, 0}, {0, 1}, {0, 0}}}, 0, "coordinates[0]", "ring self-intersects at segment 0 and 2"},
		{"self-touching ring", orb.Polygon{{{0, 0}, {4, 0}, {4, 4}, {2, 0}, {0, 4}, {0, 0}}}, 0, "coordinates[0]", "ring self-intersects at segment 0 and 2"},
		{"spike", orb.Polygon{{{0, 0}, {2, 0}, {2, 2}, {2, 3}, {2, 2}, {0, 2}, {0, 0}}}, 0, "coordinates[0]", "ring self-intersects at segment 1 and 3 near (2, 2)"},
		{"hole outside", orb.Polygon{sqr(0, 0, 1), sqr(5, 5, 1)}, 0, "coordinates[1]", "hole is not inside the exterior ring"},
		{"hole contains shell", orb.Polygon{sqr(2, 2, 1), sqr(0, 0, 10)}, 0, "coordinates[1]", "hole is not inside"},
		{"hole crossing shell", orb.Polygon{sqr(0, 0, 10), sqr(8, 8, 4)}, 0, "coordinates[0]", "ring crosses ring coordinates[1]"},
		{"hole sharing an edge", orb.Polygon{sqr(0, 0, 10), sqr(0, 0, 2)}, 0, "coordinates[0]", "overlaps ring coordinates[1]"},
		{"hole crossing shell at vertices", orb.Polygon{sqr(0, 0, 10), {{0, 5}, {-1, 6}, {0, 7}, {1, 6}, {0, 5}}}, 0, "coordinates[0]", "crosses ring coordinates[1]"},
		{"nested holes", orb.Polygon{sqr(0, 0, 10), sqr(2, 2, 6), sqr(3, 3, 2)}, 0, "coordinates[2]", "hole is inside another hole coordinates[1]"},
		{"equal holes", orb.Polygon{sqr(0, 0, 10), sqr(2, 2, 2), sqr(2, 2, 2)}, 0, "coordinates[1]", "overlaps ring coordinates[2]"},
		{"zero-area hole", orb.Polygon{sqr(0, 0, 10), {{1, 1}, {2, 2}, {3, 3}, {1, 1}}}, 0, "coordinates[1]", "zero area"},
		{"overlapping polygons", orb.MultiPolygon{{sqr(0, 0, 2)}, {sqr(1, 1, 2)}}, 0, "coordinates[0][0]", "crosses ring coordinates[1][0]"},
		{"nested polygons", orb.MultiPolygon{{sqr(0, 0, 10)}, {sqr(1, 1, 2)}}, 0, "coordinates[1]", "polygon overlaps polygon coordinates[0]"},
		{"identical polygons", orb.MultiPolygon{{sqr(0, 0, 1)}, {sqr(0, 0, 1)}}, 0, "coordinates[0][0]", "overlaps ring coordinates[1][0]"},
		{"polygons sharing an edge", orb.MultiPolygon{{sqr(0, 0, 1)}, {sqr(1, 0, 1)}}, 0, "coordinates[0][0]", "overlaps"},
		{"multipolygon bad member", orb.MultiPolygon{{sqr(0, 0, 1)}, {{{0, 0}, {1, 0}, {1, 1}}}}, 0, "coordinates[1][0]", "ring has 3 positions"},
		{"too many vertices", orb.Polygon{sqr(0, 0, 1), sqr(0.2, 0.2, 0.1)}, 9, "coordinates", "10 positions, more than the limit of 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.g, tt.max)
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidGeometry) {
				t.Fatalf("Validate = %v, want a ValidationError", err)
			}
			if ve.Path != tt.path || !strings.Contains(ve.Reason, tt.reason) {
				t.Errorf("Validate = %q %q, want %q, reason containing %q", ve.Path, ve.Reason, tt.path, tt.reason)
			}
			if errors.Is(err, ErrTooManyVertices) != strings.Contains(tt.name, "too many") {
				t.Errorf("ErrTooManyVertices match wrong: %v", err)
			}
		})
	}
}

// spiral returns a closed, simple ring of n positions winding inwards: many
// long segments lying close together, a hard case for intersection search.
func spiral(n int) orb.Ring {
	r := make(orb.Ring, 0, n+1)
	for i := 0; i < n-1; i++ {
		a := float64(i) * 0.05
		rad := 1 - 0.9*float64(i)/float64(n)
		r = append(r, orb.Point{151 + rad*math.Cos(a)*1e-2, -33 + rad*math.Sin(a)*1e-2})
	}
	// Return outside the turns along a ray: close by a radial segment
	// beyond the outermost turn.
	last := r[len(r)-1]
	r = append(r, orb.Point{last[0], last[1]}) // repeated position, ignored
	return closeSpiral(r)
}

func closeSpiral(r orb.Ring) orb.Ring {
	// A spiral cannot be closed simply by one segment; make it a band by
	// walking back along a slightly larger radius.
	n := len(r)
	out := make(orb.Ring, 0, 2*n+1)
	out = append(out, r...)
	for i := n - 1; i >= 0; i-- {
		c := orb.Point{151, -33}
		p := r[i]
		out = append(out, orb.Point{c[0] + (p[0]-c[0])*1.002, c[1] + (p[1]-c[1])*1.002})
	}
	return append(out, out[0])
}

// comb returns a simple polygon with n teeth, each a long thin rectangle:
// many segments span the whole width, the worst case for a sweep in x.
func comb(n int) orb.Polygon {
	r := orb.Ring{{0, 0}}
	w := 1.0 / float64(n)
	for i := 0; i < n; i++ {
		y := float64(i) * w
		r = append(r, orb.Point{1, y}, orb.Point{1, y + w/2}, orb.Point{0.01, y + w/2}, orb.Point{0.01, y + w})
	}
	r = append(r, orb.Point{0, 1}, orb.Point{0, 0})
	return orb.Polygon{r}
}

// A 10,000-vertex comb validates, and its one crossing is found. How fast
// is BenchmarkValidateLargeComb's question (speed is never asserted in a
// test: a loaded machine would fail it).
func TestValidateLargeComb(t *testing.T) {
	g := comb(2490) // 9,963 positions
	if n, _ := countVertices(g); n > 10000 {
		t.Fatalf("%d positions", n)
	}
	if err := Validate(g, 10000); err != nil {
		t.Fatal(err)
	}
	// One crossing among 10,000 vertices is found.
	bad := comb(2490)
	bad[0][5003][0] = -0.5 // an inner end of a tooth pulled across the spine
	err := Validate(bad, 10000)
	if err == nil || !strings.Contains(err.Error(), "self-intersects") {
		t.Errorf("crossing not found: %v", err)
	}
}

// BenchmarkValidateLargeComb: the pair checks run through an R-tree, so a
// 10,000-vertex comb takes milliseconds (O(n^2) pair checks would take
// seconds).
func BenchmarkValidateLargeComb(b *testing.B) {
	g := comb(2490)
	for b.Loop() {
		if err := Validate(g, 10000); err != nil {
			b.Fatal(err)
		}
	}
}

func TestValidateManyHoles(t *testing.T) {
	p := orb.Polygon{sqr(0, 0, 85)}
	for i := 0; i < 40; i++ {
		for j := 0; j < 40; j++ {
			p = append(p, sqr(float64(i)*2+5, float64(j)*2+5, 1))
		}
	}
	start := time.Now()
	if err := Validate(p, 10000); err != nil {
		t.Fatal(err)
	}
	t.Logf("1,600 holes validated in %v", time.Since(start))
}

func TestValidateVertexLimitFirst(t *testing.T) {
	// An invalid geometry over the limit reports the limit, not the
	// (costlier) geometric problem.
	r := make(orb.Ring, 20001)
	err := Validate(orb.Polygon{r}, 10000)
	if !errors.Is(err, ErrTooManyVertices) {
		t.Fatalf("err = %v", err)
	}
}

func BenchmarkValidateComb10k(b *testing.B) {
	g := comb(2490)
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(g, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateCircle10k(b *testing.B) {
	r := make(orb.Ring, 0, 10000)
	for i := 0; i < 9999; i++ {
		a := 2 * math.Pi * float64(i) / 9999
		r = append(r, orb.Point{151.2 + 0.005*math.Cos(a), -33.8 + 0.005*math.Sin(a)})
	}
	g := orb.Polygon{append(r, r[0])}
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(g, 10000); err != nil {
			b.Fatal(err)
		}
	}
}

// bruteSimpleRing decides, by checking every pair of segments, whether a
// closed ring is valid on its own: not all collinear, adjacent segments not
// doubling back, other segments not meeting at all.
func bruteSimpleRing(r orb.Ring) bool {
	var pts []orb.Point
	for i, p := range r {
		if i == 0 || p != r[i-1] {
			pts = append(pts, p)
		}
	}
	if len(pts) < 4 || collinear(pts) {
		return false
	}
	n := len(pts) - 1
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			a, b, c, d := pts[i], pts[i+1], pts[j], pts[j+1]
			kind, _ := segIntersect(a, b, c, d)
			adjacent := j == i+1 || (i == 0 && j == n-1)
			if !adjacent && kind != hitNone {
				return false
			}
			if adjacent && kind == hitOverlap {
				return false
			}
			if adjacent && n == 3 && kind != hitTouch {
				return false
			}
		}
	}
	return true
}

// TestValidateRingMatchesBruteForce compares Validate with the O(n^2)
// check on random rings over a small integer grid, rich in collinear and
// touching configurations.
func TestValidateRingMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	valid := 0
	for iter := 0; iter < 30000; iter++ {
		n := 3 + rng.IntN(8)
		r := make(orb.Ring, 0, n+1)
		for i := 0; i < n; i++ {
			r = append(r, orb.Point{float64(rng.IntN(5)), float64(rng.IntN(5))})
		}
		r = append(r, r[0])
		want := bruteSimpleRing(r)
		err := Validate(orb.Polygon{r}, 0)
		if (err == nil) != want {
			t.Fatalf("ring %v: Validate = %v, brute force valid = %v", r, err, want)
		}
		if want {
			valid++
		}
	}
	t.Logf("%d of 30000 random rings valid", valid)
}
