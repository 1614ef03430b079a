package queries

import (
	"testing"
	"time"
)

// The answer-first wait is as given while the requests in flight fit the
// procs, grows with how many share each proc beyond that, and stops at 4 x.
func TestLoadedWait(t *testing.T) {
	const d = time.Millisecond
	for _, c := range []struct {
		inFlight int64
		procs    int
		want     time.Duration
	}{
		{0, 2, d}, {1, 2, d}, {2, 2, d}, // idle, or a request a proc
		{3, 2, 2 * d}, {4, 2, 2 * d}, {5, 2, 3 * d}, {8, 2, 4 * d},
		{9, 2, 4 * d}, {1000, 2, 4 * d}, // at most 4 x
		{1, 1, d}, {2, 1, 2 * d}, {16, 8, 2 * d},
		{3, 0, 3 * d}, // a zero proc count does not divide by zero
	} {
		if got := loadedWait(d, c.inFlight, c.procs); got != c.want {
			t.Errorf("loadedWait(1ms, %d in flight, %d procs) = %v, want %v", c.inFlight, c.procs, got, c.want)
		}
	}
}
