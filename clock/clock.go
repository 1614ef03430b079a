// Package clock is the replaceable time source used by everything time-based
// (expiry, retention, rate windows), so tests move time instead of sleeping.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now in UTC.
func (Real) Now() time.Time { return time.Now().UTC() }

// Fake is a manually advanced clock for tests. Safe for concurrent use.
type Fake struct {
	mu struct {
		sync.Mutex
		now time.Time
	}
}

// NewFake returns a Fake clock set to t.
func NewFake(t time.Time) *Fake {
	f := &Fake{}
	f.mu.now = t.UTC()
	return f
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.now
}

// Advance moves the fake time forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.now = f.mu.now.Add(d)
}

// Set moves the fake time to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.now = t.UTC()
}
