package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// TestRegenerateIdentical regenerates the file from rgeo's data and compares
// it with the committed ../../au.bin: first the decompressed content, then
// the gzip bytes (both are deterministic for a given Go toolchain; a flate
// change in a later Go would show only in the second).
func TestRegenerateIdentical(t *testing.T) {
	got, st, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../au.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gunzip(t, got), gunzip(t, want)) {
		t.Fatalf("regenerated content differs from ../../au.bin (%+v): run go generate ./geo/austates", st)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("same content, different gzip bytes (%d vs %d): the toolchain's compressor changed", len(got), len(want))
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func sq(x0, y0, x1, y1 int64) []pt {
	return []pt{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}}
}

// TestTopology checks the arc building on shapes with known answers: two
// squares sharing an edge, and a ring that fills another state's hole.
func TestTopology(t *testing.T) {
	a := &state{code: "A", polys: [][][]pt{{sq(0, 0, 10, 10)}}}
	// B shares A's right edge, walked the other way round.
	b := &state{code: "B", polys: [][][]pt{{{{10, 10}, {10, 0}, {20, 0}, {20, 10}, {10, 10}}}}}
	// C has a hole that D fills exactly, starting elsewhere and reversed.
	c := &state{code: "C", polys: [][][]pt{{sq(100, 0, 130, 30), {{110, 10}, {110, 20}, {120, 20}, {120, 10}, {110, 10}}}}}
	d := &state{code: "D", polys: [][][]pt{{{{120, 20}, {120, 10}, {110, 10}, {110, 20}, {120, 20}}}}}
	topo := buildTopology([]*state{a, b, c, d})

	// A and B: shared edge + A's other three sides + B's three sides.
	// C: outer ring; C's hole and D: one shared closed arc.
	if len(topo.arcs) != 5 {
		t.Fatalf("%d arcs, want 5: %v", len(topo.arcs), topo.arcs)
	}
	shared := func(x, y []int) bool {
		for _, i := range x {
			for _, j := range y {
				if arcIndex(i) == arcIndex(j) {
					return i == ^j // used in opposite directions
				}
			}
		}
		return false
	}
	if !shared(topo.rings[0][0][0], topo.rings[1][0][0]) {
		t.Errorf("A and B share no arc in opposite directions: %v %v", topo.rings[0], topo.rings[1])
	}
	if h, dd := topo.rings[2][0][1], topo.rings[3][0][0]; len(h) != 1 || len(dd) != 1 || arcIndex(h[0]) != arcIndex(dd[0]) {
		t.Errorf("C's hole and D are not one arc: %v %v", h, dd)
	}
	for si, polys := range topo.rings {
		for _, rings := range polys {
			for _, refs := range rings {
				if n := ringLen(topo, refs); n != 5 {
					t.Errorf("state %d: ring of %d points, want 5", si, n)
				}
			}
		}
	}
}

func TestSimplifyArc(t *testing.T) {
	// A zigzag within tolerance collapses to its ends; a spike beyond it stays.
	flat := []pt{{0, 0}, {1000, 400}, {2000, -400}, {3000, 0}}
	if got := simplifyArc(flat, Tolerance); len(got) != 2 {
		t.Errorf("flat arc kept %v", got)
	}
	spike := []pt{{0, 0}, {1000, 5000}, {2000, 0}}
	if got := simplifyArc(spike, Tolerance); len(got) != 3 {
		t.Errorf("spike lost: %v", got)
	}
	// A closed ring keeps its farthest point and more.
	ring := []pt{{0, 0}, {5000, 0}, {5000, 5000}, {0, 5000}, {0, 0}}
	if got := simplifyArc(ring, Tolerance); len(got) != 5 {
		t.Errorf("square ring simplified to %v", got)
	}
}
