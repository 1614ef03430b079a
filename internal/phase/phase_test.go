package phase

import (
	"testing"
	"time"
)

// TestTimer proves a nil Timer is off (no panic, zero start time), that a
// Timer sums phases and records each request's total under its operation,
// and that Reset clears both.
func TestTimer(t *testing.T) {
	var off *Timer
	if !off.Start().IsZero() {
		t.Fatal("a nil timer read the clock")
	}
	off.Done(Auth, time.Time{})
	off.Request("get_context", time.Time{})

	tm := &Timer{}
	start := time.Now().Add(-time.Millisecond) // at least 1 ms ago
	tm.Done(Auth, start)
	tm.Done(Auth, start)
	tm.Request("get_context", start)
	s := tm.Snapshot()
	if s[Auth].Count != 2 || s[Auth].Total < 2*time.Millisecond {
		t.Errorf("auth: %+v", s[Auth])
	}
	if s[Total].Count != 1 || s[RateLimit].Count != 0 {
		t.Errorf("total %+v, rate limit %+v", s[Total], s[RateLimit])
	}
	if r := tm.Requests("get_context"); len(r) != 1 || r[0] < time.Millisecond {
		t.Errorf("requests: %v", r)
	}
	before := tm.Snapshot()
	tm.Done(Engine, start)
	if d := Since(tm.Snapshot(), before); d[Engine].Count != 1 || d[Engine].Total < time.Millisecond || d[Auth].Count != 0 || d[Auth].Total != 0 {
		t.Errorf("since: engine %+v, auth %+v", d[Engine], d[Auth])
	}
	tm.Reset()
	if s := tm.Snapshot(); s[Auth].Count != 0 || len(tm.Requests("get_context")) != 0 {
		t.Errorf("not reset: %+v", s[Auth])
	}
	if len(Phases()) != int(numPhases) || Engine.String() != "engine" {
		t.Errorf("phases %v", Phases())
	}
}
