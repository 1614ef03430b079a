package jobs

import (
	"testing"

	"github.com/paulmach/orb"

	"siteenv/ledger"
)

// TestCoverageParsedOncePerRelease: queries of one release share its
// coverage polygon as parsed once (the engine then finds its prepared
// cover by identity); a release whose frozen bytes differ gets its own,
// and a layer without a release is left out as unavailable.
func TestCoverageParsedOncePerRelease(t *testing.T) {
	r, err := New(Config{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel, other := "rel-1", "rel-2"
	square := []byte(`{"type":"Polygon","coordinates":[[[150,-34],[151,-34],[151,-33],[150,-33],[150,-34]]]}`)
	larger := []byte(`{"type":"Polygon","coordinates":[[[149,-35],[152,-35],[152,-32],[149,-32],[149,-35]]]}`)
	query := func(release *string, coverage []byte) ledger.Query {
		return ledger.Query{SiteGeometry: []byte(`{"type":"Point","coordinates":[150.5,-33.5]}`), RadiusM: 100,
			LayerIDs: []string{"flood", "gone"},
			Frozen: []ledger.FrozenLayer{{LayerID: "flood", ReleaseID: release, Coverage: append([]byte(nil), coverage...)},
				{LayerID: "gone"}}}
	}
	polygon := func(q ledger.Query) orb.Polygon {
		t.Helper()
		req, unavailable, err := r.engineRequest(q, DecodedSite{})
		if err != nil {
			t.Fatal(err)
		}
		if !unavailable["gone"] || len(req.Layers) != 1 {
			t.Fatalf("layers %+v, unavailable %v: want flood asked and gone unavailable", req.Layers, unavailable)
		}
		p, ok := req.Layers[0].Coverage.(orb.Polygon)
		if !ok {
			t.Fatalf("coverage %T, want a polygon", req.Layers[0].Coverage)
		}
		return p
	}
	a, b := polygon(query(&rel, square)), polygon(query(&rel, square))
	if &a[0] != &b[0] {
		t.Fatal("two queries of one release parsed its coverage twice")
	}
	c := polygon(query(&other, larger))
	if &c[0] == &a[0] || c.Bound().Min[0] != 149 {
		t.Fatalf("another release's coverage is %v, want its own", c.Bound())
	}
	// The same release with other bytes (never, for an immutable release)
	// is parsed afresh, not served the cached polygon.
	d := polygon(query(&rel, larger))
	if d.Bound().Min[0] != 149 {
		t.Fatalf("coverage %v, want the bytes' own", d.Bound())
	}
}
