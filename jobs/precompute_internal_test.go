package jobs

import "testing"

// TestPrecomputedSlotCountsOnce: a query's precomputation and the attempt
// that takes its answer hold one in-request slot between them. Taken while
// the precomputation runs, the slot passes to the attempt (the
// precomputation's end gives nothing back); taken after it ended, the
// attempt needs one of its own.
func TestPrecomputedSlotCountsOnce(t *testing.T) {
	var r Runner
	r.inRequest.Add(1) // Precompute's
	p := &Precomputed{}
	if !p.handSlot() {
		t.Fatal("a running precomputation's slot was not handed over")
	}
	p.releaseSlot(&r)
	if n := r.inRequest.Load(); n != 1 {
		t.Fatalf("after a handed-over precomputation ended: %d slots, want the attempt's 1", n)
	}

	var r2 Runner
	r2.inRequest.Add(1)
	p2 := &Precomputed{}
	p2.releaseSlot(&r2)
	if n := r2.inRequest.Load(); n != 0 {
		t.Fatalf("after a precomputation ended: %d slots, want 0", n)
	}
	if p2.handSlot() {
		t.Fatal("a slot given back was handed over")
	}
	var none *Precomputed
	if none.handSlot() {
		t.Fatal("no precomputation handed a slot")
	}
}
