package bench

import (
	"testing"

	"github.com/paulmach/orb"
)

// The small-query mix without anchors (the heavy scale samples none) is an
// error, never a panic; with none asked for it is empty; with anchors it is
// reproducible from its seed.
func TestMakeSmallMix(t *testing.T) {
	if _, err := makeSmallMix(10, nil, 18, 1); err == nil {
		t.Fatal("no anchors: want an error")
	}
	if qs, err := makeSmallMix(0, nil, 18, 1); err != nil || len(qs) != 0 {
		t.Fatalf("none asked: %d queries, %v", len(qs), err)
	}
	anchors := []orb.Point{{151.0, -33.8}, {144.9, -37.8}}
	a, err := makeSmallMix(50, anchors, 18, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := makeSmallMix(50, anchors, 18, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 50 || len(b) != 50 {
		t.Fatalf("%d, %d queries", len(a), len(b))
	}
	for i := range a {
		if a[i].kind != b[i].kind || !orb.Equal(a[i].site, b[i].site) {
			t.Fatalf("query %d differs between two runs of one seed", i)
		}
	}
}

// A fresh pass of any size asks no key more than the contract's 30
// admissions a minute allow (however fast it runs), and the 400
// queries take turns over its 60 keys.
func TestFreshKeysStayUnderTheAdmissionLimit(t *testing.T) {
	const contractPerMinute = 30
	if got := freshKeysFor(DefaultFreshQueries); got != 60 {
		t.Fatalf("400 queries: %d keys, want 60", got)
	}
	for _, n := range []int{1, 59, 400, 1500, 1501, 4000, 10_007} {
		k := freshKeysFor(n)
		if per := (n + k - 1) / k; per > contractPerMinute {
			t.Errorf("%d queries over %d keys: %d a key", n, k, per)
		}
	}
}
