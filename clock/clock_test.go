package clock

import (
	"testing"
	"time"
)

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("AEST", 10*3600))
	f := NewFake(start)
	if !f.Now().Equal(start) || f.Now().Location() != time.UTC {
		t.Fatalf("Now %v", f.Now())
	}
	f.Advance(90 * time.Second)
	if got := f.Now().Sub(start); got != 90*time.Second {
		t.Fatalf("advanced %v", got)
	}
	f.Set(start)
	if !f.Now().Equal(start) {
		t.Fatal("Set")
	}
	if d := time.Since(Real{}.Now()); d < 0 || d > time.Minute {
		t.Fatalf("real clock off by %v", d)
	}
}
