package phase

import (
	"context"
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
	if s[Total].Count != 1 || s[Ledger].Count != 0 {
		t.Errorf("total %+v, ledger %+v", s[Total], s[Ledger])
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

// TestRecorder proves a context without a recorder (or with a nil Timer)
// yields a nil recorder that records nothing, and that a request's
// recorder counts every round trip under Ledger and adds its time.
func TestRecorder(t *testing.T) {
	ctx := context.Background()
	if WithRecorder(ctx, nil) != ctx {
		t.Fatal("a nil timer wrapped the context")
	}
	off := FromContext(ctx)
	if off != nil {
		t.Fatal("a recorder from a bare context")
	}
	off.RoundTripStart()
	off.RoundTripEnd()

	tm := &Timer{}
	rec := FromContext(WithRecorder(ctx, tm))
	if rec == nil {
		t.Fatal("no recorder in the request's context")
	}
	for range 3 {
		rec.RoundTripStart()
		time.Sleep(time.Millisecond)
		rec.RoundTripEnd()
	}
	rec.RoundTripEnd() // an end without a start adds nothing
	s := tm.Snapshot()
	if s[Ledger].Count != 3 || s[Ledger].Total < 3*time.Millisecond || s[Auth].Count != 0 {
		t.Errorf("ledger %+v, auth %+v", s[Ledger], s[Auth])
	}
	if allocs := testing.AllocsPerRun(100, func() {
		r := FromContext(ctx)
		r.RoundTripStart()
		r.RoundTripEnd()
		rec.RoundTripStart()
		rec.RoundTripEnd()
	}); allocs != 0 {
		t.Errorf("%v allocations per round trip", allocs)
	}
}

// BenchmarkRoundTripRecord is the tracer's cost per ledger round trip: off
// (no recorder in the context of a process that records elsewhere; one
// that never records does not look) and on (a request's recorder under two
// context layers, as the server's request context has).
func BenchmarkRoundTripRecord(b *testing.B) {
	bare, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	on, cancel2 := context.WithTimeout(WithRecorder(context.Background(), &Timer{}), time.Hour)
	defer cancel2()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"off", bare}, {"on", on}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				FromContext(c.ctx).RoundTripStart()
				FromContext(c.ctx).RoundTripEnd()
			}
		})
	}
}
