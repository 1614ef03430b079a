package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/tiles"
)

// TestSiteChecked: a caller that validated its site itself (a precomputed
// answer of a site the API checked) can say so, and the engine then skips
// only that check: a valid site gives the same answer either way, an
// invalid one is still refused without the flag, and the request's other
// checks hold with it.
func TestSiteChecked(t *testing.T) {
	t.Parallel()
	m := newMetric(sydney)
	donut := m.square(-100, -100, 100, 100)
	donut = append(donut, orb.Ring{m.at(-20, -20), m.at(-20, 20), m.at(20, 20), m.at(20, -20), m.at(-20, -20)})
	st := newStore(t)
	rel := publish(t, st, "checked", [][]tiles.Feature{{
		feat("pt-in-site", m.at(60, 60)), feat("pt-in-hole", m.at(5, 5)), feat("pt-near", m.at(110, 0)),
		feat("poly-overlapping", m.square(90, 90, 200, 200)), feat("line-crossing", orb.LineString{m.at(-150, 50), m.at(150, 50)}),
	}}, nil)
	e := newEngine(t, st, Options{})
	ctx := context.Background()
	answer := func(req Request) []Feature {
		t.Helper()
		res, err := e.Query(ctx, req)
		if err != nil {
			t.Fatalf("SiteChecked %v: %v", req.SiteChecked, err)
		}
		return res[0].Features
	}
	for _, r := range []float64{0, 16} {
		req := Request{Site: donut, RadiusM: r, Layers: []LayerRequest{layerReq(rel)}}
		want := answer(req)
		req.SiteChecked = true
		got := answer(req)
		if !slices.EqualFunc(got, want, func(a, b Feature) bool { return a.ID == b.ID && a.DistanceM == b.DistanceM }) || len(want) == 0 {
			t.Errorf("radius %v: checked site answered %v, want %v", r, ids(LayerResult{Features: got}), ids(LayerResult{Features: want}))
		}
	}

	bowtie := orb.Polygon{{m.at(0, 0), m.at(50, 50), m.at(50, 0), m.at(0, 50), m.at(0, 0)}} // self-intersecting
	if _, err := e.Query(ctx, Request{Site: bowtie}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("unchecked self-intersecting site: %v, want ErrInvalidRequest", err)
	}
	// The flag skips the geometry check, and only it.
	if _, err := e.Query(ctx, Request{Site: bowtie, SiteChecked: true}); err != nil {
		t.Errorf("site flagged checked was validated again: %v", err)
	}
	for i, req := range []Request{
		{Site: nil, SiteChecked: true},
		{Site: orb.Collection{m.at(0, 0)}, SiteChecked: true},
		{Site: m.at(0, 0), RadiusM: -1, SiteChecked: true},
		{Site: m.at(0, 0), SiteChecked: true, Layers: []LayerRequest{{LayerID: "a"}}},
	} {
		if _, err := e.Query(ctx, req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("checked request %d: %v, want ErrInvalidRequest", i, err)
		}
	}
}
