package bench

import (
	"testing"

	"siteenv/engine"
	"siteenv/store"
)

// newEngine is engine.New for tests: an error fails tb.
func newEngine(tb testing.TB, st store.Store, opt engine.Options) *engine.Engine {
	tb.Helper()
	e, err := engine.New(st, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}
