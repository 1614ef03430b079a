package queries_test

import (
	"errors"
	"testing"

	"siteenv/ledger"
	"siteenv/queries"
)

// Freeze answers a layer the key may not use exactly as a missing one, at
// the first such layer in the request's order; a paid section the site
// lacks is named; a radius over any layer's limit names every such layer;
// with granted nil the paid sections are returned to be checked by the
// admission.
func TestFreeze(t *testing.T) {
	rel := "r1"
	catalogue := map[string]ledger.LayerRelease{
		"free": {Layer: ledger.Layer{ID: "free", SectionKey: "water", RadiusMaxM: 1000}},
		"paid": {Layer: ledger.Layer{ID: "paid", SectionKey: "contamination", SectionPrice: 30, RadiusMaxM: 500, CurrentReleaseID: &rel},
			Release: &ledger.Release{SchemaVersion: "2"}},
	}
	all := ledger.Principal{}
	narrow := ledger.Principal{KeyDatasets: []string{"free"}}
	none := func(string) bool { return false }
	for _, tc := range []struct {
		name    string
		p       ledger.Principal
		ask     queries.Ask
		granted func(string) bool
		check   func(t *testing.T, frozen []ledger.FrozenLayer, sections []string, err error)
	}{
		{"restricted like missing", narrow, queries.Ask{LayerIDs: []string{"free", "paid"}, RadiusM: 10}, nil,
			func(t *testing.T, _ []ledger.FrozenLayer, _ []string, err error) {
				var le *queries.LayerError
				if !errors.As(err, &le) || le.Index != 1 || le.ID != "paid" || !errors.Is(err, ledger.ErrNotFound) {
					t.Fatalf("err %v", err)
				}
			}},
		{"missing", all, queries.Ask{LayerIDs: []string{"nope"}}, nil,
			func(t *testing.T, _ []ledger.FrozenLayer, _ []string, err error) {
				var le *queries.LayerError
				if !errors.As(err, &le) || le.Index != 0 {
					t.Fatalf("err %v", err)
				}
			}},
		{"section not granted", all, queries.Ask{LayerIDs: []string{"free", "paid"}, RadiusM: 10}, none,
			func(t *testing.T, _ []ledger.FrozenLayer, _ []string, err error) {
				var se *queries.SectionError
				if !errors.As(err, &se) || se.Index != 1 || se.Section != "contamination" {
					t.Fatalf("err %v", err)
				}
			}},
		{"radius", all, queries.Ask{LayerIDs: []string{"free", "paid"}, RadiusM: 2000}, nil,
			func(t *testing.T, _ []ledger.FrozenLayer, _ []string, err error) {
				var re *queries.RadiusError
				if !errors.As(err, &re) || len(re.Over) != 2 || re.Over[1].MaxM != 500 {
					t.Fatalf("err %v", err)
				}
			}},
		{"frozen with sections to check", all, queries.Ask{LayerIDs: []string{"paid", "free"}, RadiusM: 100}, nil,
			func(t *testing.T, frozen []ledger.FrozenLayer, sections []string, err error) {
				if err != nil || len(frozen) != 2 || frozen[0].SchemaVersion != "2" || len(sections) != 1 || sections[0] != "contamination" {
					t.Fatalf("frozen %+v sections %v err %v", frozen, sections, err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frozen, sections, err := queries.Freeze(tc.p, tc.ask, catalogue, tc.granted)
			tc.check(t, frozen, sections, err)
		})
	}
}
