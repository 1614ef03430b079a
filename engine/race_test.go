//go:build race

package engine

// raceEnabled: the tests run under the race detector. A test that scales
// down under it must be listed in the Makefile's PLAIN_RUN, so that make
// test also runs it at full size (engine runs under -race only).
const raceEnabled = true
