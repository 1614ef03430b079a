package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/tiles"
)

func TestFeatureLimit(t *testing.T) {
	t.Parallel()
	if raceEnabled || testing.Short() {
		t.Skip("100,001-feature tile: slow under the race detector")
	}
	m := newMetric(sydney)
	feats := make([]tiles.Feature, 0, DefaultMaxFeatures+1)
	for i := 0; i < DefaultMaxFeatures; i++ {
		x, y := float64(i%400), float64(i/400) // a 400 x 250 m grid
		feats = append(feats, tiles.Feature{ID: fmt.Sprintf("p%06d", i), Geometry: m.at(x, y),
			Properties: map[string]any{"kind": "grid", "n": int64(i)}})
	}
	feats = append(feats, tiles.Feature{ID: "far", Geometry: m.at(2000, 0), Properties: map[string]any{"kind": "far", "n": int64(-1)}})
	store := newStore(t)
	rel := publish(t, store, "dense", [][]tiles.Feature{feats}, nil)
	e := newEngine(t, store, Options{})

	res := query(t, e, m.at(0, 0), 1000, layerReq(rel))[0]
	if res.Status != StatusDataPresent || res.Count == nil || *res.Count != DefaultMaxFeatures || len(res.Features) != DefaultMaxFeatures {
		t.Fatalf("100,000 matches: status %s reason %s count %v features %d", res.Status, res.Reason, res.Count, len(res.Features))
	}
	res = query(t, e, m.at(0, 0), 2500, layerReq(rel))[0]
	if res.Status != StatusUnavailable || res.Reason != ReasonResultLimitExceeded || res.LimitCode != LimitResultLimitExceeded ||
		res.Count != nil || len(res.Features) != 0 {
		t.Fatalf("100,001 matches: %s %s %s count %v features %d", res.Status, res.Reason, res.LimitCode, res.Count, len(res.Features))
	}
	// A lower per-layer limit applies the same way.
	lr := layerReq(rel)
	lr.MaxFeatures = 10
	res = query(t, e, m.at(0, 0), 3.5, lr)[0] // 13 grid points, none within a micrometre of the radius
	if res.Status != StatusUnavailable || res.Reason != ReasonResultLimitExceeded || res.Count != nil {
		t.Fatalf("MaxFeatures 10: %+v", res)
	}
}

func TestByteLimits(t *testing.T) {
	t.Parallel()
	m := newMetric(sydney)
	var feats []tiles.Feature
	for i := 0; i < 50; i++ {
		feats = append(feats, tiles.Feature{ID: fmt.Sprintf("f%02d", i), Geometry: m.at(float64(i), 0),
			Properties: map[string]any{"kind": "small", "n": int64(i), "note": "a <b> & \"c\"\n"}})
	}
	// A feature too large to return: a 1.1 MB property, and far away a
	// polygon whose geometry alone is 2 MB.
	feats = append(feats, tiles.Feature{ID: "huge-props", Geometry: m.at(5000, 0),
		Properties: map[string]any{"kind": "huge", "n": int64(0), "note": strings.Repeat("x", 1100<<10)}})
	var ring orb.Ring
	for i := 0; i < 60000; i++ {
		a := float64(i) / 60000 * 6.283185307179586
		ring = append(ring, m.at(-5000+300*math.Cos(a), 300*math.Sin(a)))
	}
	ring = append(ring, ring[0])
	feats = append(feats, tiles.Feature{ID: "huge-geometry", Geometry: orb.Polygon{ring},
		Properties: map[string]any{"kind": "huge", "n": int64(1)}})
	store := newStore(t)
	rel := publish(t, store, "bytes", [][]tiles.Feature{feats}, nil)
	e := newEngine(t, store, Options{})

	lr := layerReq(rel)
	lr.IncludeGeometry = true
	res := query(t, e, m.at(0, 0), 100, lr)[0]
	if res.Status != StatusDataPresent || len(res.Features) != 50 {
		t.Fatalf("%+v", res)
	}
	// EncodedBytes is the size of the records as the service writes them,
	// on the first query (properties measured) and the next (cached).
	for range 2 {
		res = query(t, e, m.at(0, 0), 100, lr)[0]
		if got := encodeRecords(t, lr.LayerID, res.Features); int64(got) != res.EncodedBytes {
			t.Errorf("EncodedBytes %d, encoded %d", res.EncodedBytes, got)
		}
	}

	lr.MaxBytes = res.EncodedBytes - 1
	res = query(t, e, m.at(0, 0), 100, lr)[0]
	if res.Status != StatusUnavailable || res.Reason != ReasonResultLimitExceeded || res.LimitCode != LimitOutputTooLarge ||
		res.Count != nil || len(res.Features) != 0 {
		t.Fatalf("output too large: %+v", res)
	}

	lr = layerReq(rel)
	res = query(t, e, m.at(5000, 0), 10, lr)[0]
	if res.Status != StatusUnavailable || res.Reason != ReasonFeatureTooLarge || res.LimitCode != LimitFeatureTooLarge || res.Count != nil {
		t.Fatalf("huge properties: %+v", res)
	}
	// The large polygon fits without its geometry, not with it.
	res = query(t, e, m.at(-5000, 0), 10, lr)[0]
	if res.Status != StatusDataPresent || *res.Count != 1 || res.Features[0].Geometry != nil {
		t.Fatalf("huge geometry, excluded: %+v", res)
	}
	lr.IncludeGeometry = true
	res = query(t, e, m.at(-5000, 0), 10, lr)[0]
	if res.Status != StatusUnavailable || res.Reason != ReasonFeatureTooLarge {
		t.Fatalf("huge geometry, included: %+v", res)
	}
}

// encodeRecords encodes features as the query runner does (one JSON line
// each, HTML escaping off) and returns the byte count.
func encodeRecords(t testing.TB, layerID string, feats []Feature) int {
	t.Helper()
	type record struct {
		LayerID    string            `json:"layer_id"`
		FeatureID  string            `json:"feature_id"`
		DistanceM  float64           `json:"distance_m"`
		Properties map[string]any    `json:"properties"`
		Geometry   *geojson.Geometry `json:"geometry"`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, f := range feats {
		rec := record{LayerID: layerID, FeatureID: f.ID, DistanceM: f.DistanceM, Properties: f.Properties()}
		if f.Geometry != nil {
			rec.Geometry = geojson.NewGeometry(f.Geometry)
		}
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Len()
}

func TestCoverage(t *testing.T) {
	t.Parallel()
	m := newMetric(sydney)
	cover := m.square(-5000, -5000, 5000, 5000)
	var feats []tiles.Feature
	for i := 0; i < 200; i++ {
		feats = append(feats, feat(fmt.Sprintf("f%03d", i), m.at(float64(i*100-10000), 0)))
	}
	store := newStore(t)
	rel := publish(t, store, "covered", [][]tiles.Feature{feats}, cover)
	withCover := layerReq(rel)
	withCover.Coverage = cover
	e := newEngine(t, store, Options{})
	cases := []struct {
		name     string
		site     orb.Geometry
		r        float64
		coverage Coverage
		status   string
		reason   string
	}{
		{"inside", m.at(0, 0), 1000, CoverageComplete, StatusDataPresent, ""},
		{"site inside, buffer crosses the boundary", m.at(4500, 0), 1000, CoveragePartial, StatusDataPresent, ""},
		{"site straddles", m.square(4900, -10, 5100, 10), 0, CoveragePartial, StatusDataPresent, ""},
		{"site outside, buffer reaches in", m.at(5500, 3000), 1000, CoveragePartial, StatusNoData, ReasonNoMatches},
		{"outside", m.at(7000, 0), 1000, CoverageNone, StatusNoData, ReasonOutsideCoverage},
		{"outside, polygon", m.square(7000, 7000, 7100, 7100), 500, CoverageNone, StatusNoData, ReasonOutsideCoverage},
		{"site encloses the cover", m.square(-6000, -6000, 6000, 6000), 0, CoveragePartial, StatusDataPresent, ""},
		{"inside, no features near", m.at(0, 3000), 100, CoverageComplete, StatusNoData, ReasonNoMatches},
	}
	for _, c := range cases {
		res := query(t, e, c.site, c.r, withCover)[0]
		if Coverage(res.Coverage) != c.coverage || res.Status != c.status || res.Reason != c.reason {
			t.Errorf("%s: coverage %s status %s reason %q, want %s %s %q", c.name, res.Coverage, res.Status, res.Reason, c.coverage, c.status, c.reason)
		}
		if res.Status == StatusNoData && (res.Count == nil || *res.Count != 0) {
			t.Errorf("%s: no_data with count %v", c.name, res.Count)
		}
	}
	// Outside coverage is decided without searching: features exist
	// there, and no shard is loaded.
	e2 := newEngine(t, store, Options{})
	res := query(t, e2, m.at(7000, 0), 1000, withCover)[0]
	if res.Reason != ReasonOutsideCoverage || e2.Stats().Loads != 0 {
		t.Errorf("outside coverage: %+v, %d loads", res, e2.Stats().Loads)
	}
	// The engine prepares a release's coverage once; a request carrying
	// another polygon for the same release is answered by that polygon.
	moved := layerReq(rel)
	moved.Coverage = m.square(5500, -5000, 16000, 5000)
	if res := query(t, e, m.at(7000, 0), 1000, moved)[0]; res.Coverage != string(CoverageComplete) {
		t.Errorf("another polygon for the release: coverage %s, want complete", res.Coverage)
	}
	if res := query(t, e, m.at(7000, 0), 1000, withCover)[0]; res.Coverage != string(CoverageNone) {
		t.Errorf("the release's polygon again: coverage %s, want none", res.Coverage)
	}
	// Unknown coverage.
	res = query(t, e, m.at(7000, 0), 1000, layerReq(rel))[0]
	if res.Coverage != string(CoverageUnknown) || res.Status != StatusDataPresent {
		t.Errorf("unknown coverage: %+v", res)
	}
}

func TestUnreadableTile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMetric(sydney)
	store := newStore(t)
	good := publish(t, store, "good", [][]tiles.Feature{{feat("a", m.at(0, 0))}}, nil)

	// A release whose second tile is not Parquet (same size as recorded).
	schema := testSchema(t)
	enc := encodeTiles(t, schema, [][]tiles.Feature{{feat("b", m.at(10, 0))}, {feat("c", m.at(20, 0))}})
	enc[1].data = bytes.Repeat([]byte("x"), len(enc[1].data))
	corrupt := publishEncoded(t, store, "corrupt", schema, enc, nil)

	// A release whose tile has gone from the store.
	missing := publish(t, store, "missing", [][]tiles.Feature{{feat("d", m.at(30, 0))}}, nil)
	if err := store.Delete(ctx, missing.Tiles[0].Key); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, store, Options{})
	nope := LayerRequest{LayerID: "never", ReleaseID: "r_00000000000000000000000000000000"}
	res := query(t, e, m.at(0, 0), 100, layerReq(good), layerReq(corrupt), layerReq(missing), nope)
	if res[0].Status != StatusDataPresent || *res[0].Count != 1 {
		t.Errorf("good layer: %+v", res[0])
	}
	for _, r := range res[1:] {
		if r.Status != StatusUnavailable || r.Reason != ReasonSourceUnavailable || r.Count != nil || len(r.Features) != 0 {
			t.Errorf("%s: %+v", r.LayerID, r)
		}
	}
	if s := e.Stats(); s.LoadErrors != 2 {
		t.Errorf("%d load errors", s.LoadErrors)
	}
	// A query whose tiles all lie elsewhere does not touch the bad tile.
	if res := query(t, e, m.at(20000, 0), 100, layerReq(corrupt))[0]; res.Status != StatusNoData {
		t.Errorf("far query: %+v", res)
	}
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	e := newEngine(t, newStore(t), Options{})
	ok := LayerRequest{LayerID: "a", ReleaseID: "r_1"}
	bad := []Request{
		{Site: nil, Layers: []LayerRequest{ok}},
		{Site: orb.Point{200, 0}, Layers: []LayerRequest{ok}},
		{Site: orb.Point{151, -33}, RadiusM: -1},
		{Site: orb.Point{151, -33}, RadiusM: 10001},
		{Site: orb.Collection{orb.Point{151, -33}}},
		{Site: orb.Polygon{{{0, 0}, {1, 1}, {1, 0}, {0, 1}, {0, 0}}}}, // self-intersecting
		{Site: orb.Point{151, -33}, Layers: []LayerRequest{{LayerID: "a"}}},
		{Site: orb.Point{151, -33}, Layers: []LayerRequest{{LayerID: "a", ReleaseID: "r", MaxFeatures: -1}}},
	}
	for i, req := range bad {
		if _, err := e.Query(context.Background(), req); err == nil {
			t.Errorf("request %d accepted", i)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Query(ctx, Request{Site: orb.Point{151, -33}, Layers: []LayerRequest{ok}}); err == nil {
		t.Errorf("cancelled context accepted")
	}
}
