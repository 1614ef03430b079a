//go:build !race

package jobs_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
