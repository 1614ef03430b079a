// Package basemap forwards to engine/geo/austates, which now holds the
// state outlines (the data is geography, shared by the API, the report and
// ingest/synth, not the report's). It remains only for the API's imports
// (api/jurisdiction.go, api/reports_test.go); once they name austates it
// can go.
package basemap

import (
	"github.com/paulmach/orb"

	"siteenv/engine/geo/austates"
)

// State is austates.State.
type State = austates.State

// States is austates.States.
func States() []State { return austates.States() }

// StateAt is austates.StateAt.
func StateAt(p orb.Point) string { return austates.StateAt(p) }

// Within is austates.Within.
func Within(b orb.Bound) []State { return austates.Within(b) }
