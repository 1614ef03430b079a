package jobs_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"siteenv/jobs"
)

// attemptLog records ObserveAttempt calls.
type attemptLog struct {
	mu       sync.Mutex
	outcomes []string
}

func (a *attemptLog) observe(outcome string, d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d < 0 {
		outcome += " (negative duration)"
	}
	a.outcomes = append(a.outcomes, outcome)
}

func (a *attemptLog) get() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.outcomes)
}

// TestObserveAttempt: every attempt is reported once with its outcome: a
// completed query as finished, one cancelled while running as cancelled,
// one interrupted by Stop as requeued.
func TestObserveAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var log attemptLog
	r := b.runner(jobs.Config{ObserveAttempt: log.observe}, nil)
	b.query()
	if ran, err := r.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	if got := log.get(); !slices.Equal(got, []string{jobs.AttemptFinished}) {
		t.Fatalf("after a finished attempt: %v", got)
	}

	gate := newGate(b.store)
	gated := b.runner(jobs.Config{ObserveAttempt: log.observe}, gate)
	running := b.query()
	done := make(chan error, 1)
	go func() {
		_, err := gated.RunOnce(b.ctx)
		done <- err
	}()
	<-gate.opened
	if _, err := b.led.CancelOrRelease(b.ctx, b.account, running); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := log.get(); !slices.Equal(got, []string{jobs.AttemptFinished, jobs.AttemptCancelled}) {
		t.Fatalf("after a cancellation: %v", got)
	}

	stopping := b.runner(jobs.Config{Workers: 1, ObserveAttempt: log.observe}, gate)
	stopping.Start(b.ctx)
	b.query()
	stopping.Notify()
	<-gate.opened
	ctx, cancel := context.WithCancel(b.ctx)
	cancel() // no time left to drain
	if err := stopping.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := log.get(); !slices.Equal(got, []string{jobs.AttemptFinished, jobs.AttemptCancelled, jobs.AttemptRequeued}) {
		t.Fatalf("after Stop: %v", got)
	}
}
