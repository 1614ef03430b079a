// Package leakcheck fails a test binary whose tests leave goroutines
// running: a worker, watcher or pool that outlives its owner's Stop/Close.
package leakcheck

import (
	"fmt"
	"os"

	"go.uber.org/goleak"
)

// M is what a TestMain runs: *testing.M, or a wrapper of it.
type M interface{ Run() int }

type checked struct{ m M }

// Wrap runs m's tests and then, if they passed, fails the run (exit
// status 1) when goroutines other than the runtime's and the testing
// package's are still running. goleak retries for a while first, so a
// goroutine on its way out is not reported.
//
//	func TestMain(m *testing.M) { ledgertest.Main(leakcheck.Wrap(m)) }
func Wrap(m M) M { return checked{m} }

// ignore lists goroutines that are not leaks: fasthttp's process-wide date
// ticker, and its worker-pool cleaner, which sleeps out its idle interval
// (10 s) after the server stops before it exits.
var ignore = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
}

func (c checked) Run() int {
	code := c.m.Run()
	if code != 0 {
		return code
	}
	if err := goleak.Find(ignore...); err != nil {
		fmt.Fprintf(os.Stderr, "leakcheck: goroutines left running after the tests: %v\n", err)
		return 1
	}
	return 0
}
