package jobs

import (
	"slices"
	"testing"
)

// TestRevisionBandChanges: a revision states which bands' counts changed
// and which listed features moved between bands.
func TestRevisionBandChanges(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	prev := []EvidenceBand{{Band: "on_site", Count: n(0)}, {Band: "0_100m", Count: n(2)}, {Band: "100_250m", Count: n(1)}, {Band: "5_10km"}}
	now := []EvidenceBand{{Band: "on_site", Count: n(0)}, {Band: "0_100m", Count: n(1)}, {Band: "100_250m", Count: n(2)}, {Band: "5_10km"}}
	got, words := bandChanges(prev, now)
	if len(got) != 2 || got[0].Band != "0_100m" || *got[0].PreviousCount != 2 || *got[0].Count != 1 || got[1].Band != "100_250m" {
		t.Fatalf("band changes %+v", got)
	}
	if !slices.Equal(words, []string{"0–100 m 2 → 1", "100–250 m 1 → 2"}) {
		t.Fatalf("words %q", words)
	}
	if c, _ := bandChanges(nil, now); c != nil {
		t.Fatalf("against evidence-1 (no bands): %+v", c)
	}
	moved, mw := movedFeatures([]EvidenceFeature{{FeatureID: "A", Band: "0_100m"}, {FeatureID: "B", Band: "0_100m"}, {FeatureID: "C"}},
		[]EvidenceFeature{{FeatureID: "A", Band: "100_250m"}, {FeatureID: "B", Band: "0_100m"}, {FeatureID: "C", Band: "1_2km"}, {FeatureID: "D", Band: "on_site"}})
	if len(moved) != 1 || moved[0] != (EvidenceMove{FeatureID: "A", PreviousBand: "0_100m", Band: "100_250m"}) ||
		!slices.Equal(mw, []string{"A moved 0–100 m → 100–250 m"}) {
		t.Fatalf("moved %+v %q", moved, mw)
	}
}
