package jobs_test

import (
	"testing"

	"siteenv/engine"
	"siteenv/jobs"
	"siteenv/ledger"
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

// newRunner is jobs.New for tests: an error fails tb.
func newRunner(tb testing.TB, cfg jobs.Config, led *ledger.Ledger, eng *engine.Engine, st store.Store) *jobs.Runner {
	tb.Helper()
	r, err := jobs.New(cfg, led, eng, st)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
