//go:build !race

package engine

import "testing"

const raceEnabled = false

// skipUnderRace: without the race detector the test runs.
func skipUnderRace(*testing.T) {}
