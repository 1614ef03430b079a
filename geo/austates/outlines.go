package austates

import (
	"github.com/paulmach/orb"

	"siteenv/geo"
)

// Outlines is the states and territories as geo.RegionOutlines, for
// geo.StatesOf: a site's jurisdiction (the API's) and the tests that hold
// every capital and demo locality to its state.
type Outlines struct{}

// Within returns the states whose bound intersects b.
func (Outlines) Within(b orb.Bound) []geo.Region {
	states := Within(b)
	out := make([]geo.Region, len(states))
	for i, s := range states {
		out[i] = geo.Region{Code: s.Code, Geometry: s.Geometry}
	}
	return out
}

// At is StateAt.
func (Outlines) At(p orb.Point) string { return StateAt(p) }

// StatesOf is geo.StatesOf over the embedded outlines: the states a site
// lies in, its coastal waters included.
func StatesOf(g orb.Geometry) []string { return geo.StatesOf(g, Outlines{}) }
