// Package austates holds the outlines of the Australian states and
// territories (Natural Earth 1:10m admin-1, public domain; see
// PROVENANCE.md), embedded in the binary as au.bin: the reference data
// behind geo.StatesOf (the API's jurisdiction), the report's map and text,
// and the data generator's placement (ingest/synth).
//
// Coordinates are CRS84 lon/lat. Neighbouring states share their border
// vertices exactly, so a renderer can fill land from States, stroke Coastline
// and Borders distinctly, and never see slivers between states.
package austates

//go:generate go run -C internal/gen . -o ../../au.bin

import (
	_ "embed"
	"fmt"
	"slices"
	"sync"

	"github.com/paulmach/orb"
)

//go:embed au.bin
var auBin []byte

// State is one Australian state or territory.
type State struct {
	Code     string           // "ACT", "JBT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA"
	Name     string           // e.g. "New South Wales"
	Geometry orb.MultiPolygon // CRS84 lon/lat; outer rings first, then holes
}

var (
	loadOnce sync.Once
	loaded   *data
)

func get() *data {
	loadOnce.Do(func() {
		d, err := decode(auBin)
		if err != nil {
			// au.bin is part of the source tree and checked by the tests;
			// failing to decode it is a build defect, not a runtime condition.
			panic(fmt.Sprintf("austates: embedded au.bin: %v", err))
		}
		loaded = d
	})
	return loaded
}

// States returns the embedded states and territories, decoded once, sorted by
// Code: the eight states and territories plus Jervis Bay Territory (JBT), a
// separate unit in the source data. Safe for concurrent use; the slice is the
// caller's, but callers must not modify the geometries, which are shared.
func States() []State {
	return slices.Clone(get().states)
}

// StateAt returns the code of the state containing the point (lon, lat), or ""
// when none does (offshore, or outside the data). A point exactly on a shared
// border gets the first of the two codes in Code order.
func StateAt(p orb.Point) string {
	for _, s := range locator() {
		if s.bound.Contains(p) && s.contains(p) {
			return s.code
		}
	}
	return ""
}

// Within returns the states whose bound intersects b (for cheap culling),
// sorted by Code. The same sharing rules as States apply.
func Within(b orb.Bound) []State {
	d := get()
	var out []State
	for i, s := range d.states {
		if d.bounds[i].Intersects(b) {
			out = append(out, s)
		}
	}
	return out
}

// Coastline returns the land's outline: every ring stretch that belongs to one
// state only (for the mainland, Tasmania and the islands). Lines are open
// arcs or closed rings; callers must not modify them.
func Coastline() orb.MultiLineString {
	return slices.Clone(get().coast)
}

// Borders returns the borders between states: every ring stretch shared by two
// states. Callers must not modify the lines.
func Borders() orb.MultiLineString {
	return slices.Clone(get().borders)
}
