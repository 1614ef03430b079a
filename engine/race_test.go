//go:build race

package engine

import "testing"

// raceEnabled: the tests run under the race detector. A test that scales
// down under it must be listed in the Makefile's PLAIN_RUN, so that make
// test also runs it at full size (engine runs under -race only).
const raceEnabled = true

// skipUnderRace skips a test that gains nothing from the race detector (one
// goroutine) and costs it much; it must be listed in PLAIN_RUN as well.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("one goroutine: runs without the race detector (the Makefile's PLAIN_RUN)")
}
