// Package phase times the phases of serving a request (authentication,
// ledger round trips, engine, result I/O, JSON, audit) for the API
// benchmark. A nil *Timer is off: its methods do nothing and read no clock,
// so the request path pays one nil check per phase in production.
//
// The ledger's round trips are timed where they are sent, not by the
// handlers: the server puts the request's recorder in the request's context
// (WithRecorder) and the ledger pool's pgx tracer finds it there
// (FromContext) and records every round trip made with that context.
package phase

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Phase names one part of serving a request.
type Phase int

// The phases, in the order a POST /queries passes through them.
const (
	Auth        Phase = iota // the server authenticating the key before the handler, its round trips included
	Ledger                   // every ledger round trip made with the request's context (the pgx tracer), whoever sent it
	Wait                     // POST /queries waiting for the runner (Prefer: wait)
	Claim                    // the runner claiming a queued query
	Engine                   // the engine answering a claimed query
	ResultWrite              // encoding the result and putting it in the store
	Finish                   // the runner recording the finished query
	PageRead                 // reading a result page back from the store
	JSON                     // encoding a response body
	Audit                    // the activity record of the request
	Total                    // the whole request, inside the server
	numPhases
)

var names = [...]string{"authentication", "ledger round trips", "waiting for the runner",
	"runner claim", "engine", "result write", "runner finish", "page read", "JSON encoding", "audit record", "whole request"}

func (p Phase) String() string { return names[p] }

// Phases lists every phase in order.
func Phases() []Phase {
	out := make([]Phase, numPhases)
	for i := range out {
		out[i] = Phase(i)
	}
	return out
}

// Timer accumulates time per phase, and each request's total per operation.
// Safe for concurrent use; the zero value is ready.
type Timer struct {
	ns, n [numPhases]atomic.Int64
	mu    sync.Mutex
	ops   map[string][]time.Duration
}

// Start returns the time a phase starts; the zero time when t is nil.
func (t *Timer) Start() time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Now()
}

// Done adds the time since start to p.
func (t *Timer) Done(p Phase, start time.Time) {
	if t == nil {
		return
	}
	t.ns[p].Add(int64(time.Since(start)))
	t.n[p].Add(1)
}

// Request records a whole request of operation op that began at start.
func (t *Timer) Request(op string, start time.Time) {
	if t == nil {
		return
	}
	d := time.Since(start)
	t.ns[Total].Add(int64(d))
	t.n[Total].Add(1)
	t.mu.Lock()
	if t.ops == nil {
		t.ops = map[string][]time.Duration{}
	}
	t.ops[op] = append(t.ops[op], d)
	t.mu.Unlock()
}

// Sum is the time and count of one phase.
type Sum struct {
	Phase Phase
	Total time.Duration
	Count int64
}

// Snapshot returns every phase's sum so far.
func (t *Timer) Snapshot() []Sum {
	out := make([]Sum, numPhases)
	for i := range out {
		out[i] = Sum{Phase: Phase(i), Total: time.Duration(t.ns[i].Load()), Count: t.n[i].Load()}
	}
	return out
}

// Since returns the change from before to now, both from Snapshot.
func Since(now, before []Sum) []Sum {
	out := slices.Clone(now)
	for i := range out {
		out[i].Total -= before[i].Total
		out[i].Count -= before[i].Count
	}
	return out
}

// Requests returns the sorted in-server durations of op's requests so far.
func (t *Timer) Requests(op string) []time.Duration {
	t.mu.Lock()
	s := slices.Clone(t.ops[op])
	t.mu.Unlock()
	slices.Sort(s)
	return s
}

// Reset clears everything recorded.
func (t *Timer) Reset() {
	for i := range t.ns {
		t.ns[i].Store(0)
		t.n[i].Store(0)
	}
	t.mu.Lock()
	t.ops = nil
	t.mu.Unlock()
}

// Rec is one request's recorder, carried in its context: it adds the
// request's ledger round trips to its Timer's Ledger phase, one count per
// round trip. A nil *Rec records nothing.
type Rec struct {
	t     *Timer
	start atomic.Int64 // the round trip in flight's start (since epoch); 0: none
}

type recKey struct{}

// epoch is the origin of Rec's monotonic start times.
var epoch = time.Now()

// recording is set once any request records: until then FromContext does
// not look in the context at all, so a process that never times (the
// production server) pays one atomic load per round trip.
var recording atomic.Bool

// WithRecorder returns ctx carrying a recorder into t; ctx itself when t is
// nil (nothing is allocated).
func WithRecorder(ctx context.Context, t *Timer) context.Context {
	if t == nil {
		return ctx
	}
	recording.Store(true)
	return context.WithValue(ctx, recKey{}, &Rec{t: t})
}

// FromContext returns the recorder ctx carries; nil when none.
func FromContext(ctx context.Context) *Rec {
	if !recording.Load() || ctx == nil {
		return nil
	}
	r, _ := ctx.Value(recKey{}).(*Rec)
	return r
}

// RoundTripStart counts a round trip of the request and notes its start.
func (r *Rec) RoundTripStart() {
	if r == nil {
		return
	}
	r.t.n[Ledger].Add(1)
	r.start.Store(int64(time.Since(epoch)) + 1)
}

// RoundTripEnd adds the time since the round trip's start to Ledger. A
// request's round trips are sequential; were two to overlap, the later
// start is the one timed and the earlier's time is not added (both are
// counted).
func (r *Rec) RoundTripEnd() {
	if r == nil {
		return
	}
	if s := r.start.Swap(0); s != 0 {
		r.t.ns[Ledger].Add(int64(time.Since(epoch)) + 1 - s)
	}
}
