package ledger_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"siteenv/ledger"
)

// TestLayersForQuery proves the one-round-trip read POST /queries freezes
// from agrees with Layer and Release read one by one, and leaves unknown
// ids out.
func TestLayersForQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i, id := range []string{"lfq-a", "lfq-b"} {
		y := ledger.Layer{ID: id, SectionKey: "lfq", Name: id, SchemaVersion: "1", FieldSchema: json.RawMessage(`{"x":{"type":"string"}}`),
			Units: json.RawMessage(`{"x":null}`), RadiusMaxM: 1000 * float64(i+1), Sources: json.RawMessage(`[]`), GeometryTypes: []string{"Point"}, Jurisdictions: []string{"NSW"}}
		if i == 1 {
			y.Coverage = json.RawMessage(`{"type":"Polygon","coordinates":[[[150,-34],[151,-34],[151,-33],[150,-34]]]}`)
		}
		rel := ledger.Release{LayerID: id, ReleaseID: "r_" + id, SchemaVersion: "1.1", FieldSchema: y.FieldSchema, Units: y.Units,
			Sources: json.RawMessage(`[{"provider":"p"}]`), Coverage: y.Coverage, ManifestKey: "releases/" + id + "/m.json",
			FeatureCount: int64(10 + i), TileCount: 1 + i, Bytes: 100}
		if err := b.led.PublishRelease(b.ctx, y, rel); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.led.LayersForQuery(b.ctx, []string{"lfq-a", "lfq-b", "lfq-missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d layers, want 2: %+v", len(got), got)
	}
	for _, id := range []string{"lfq-a", "lfq-b"} {
		y, err := b.led.Layer(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := b.led.Release(b.ctx, id, *y.CurrentReleaseID)
		if err != nil {
			t.Fatal(err)
		}
		lr := got[id]
		if !reflect.DeepEqual(lr.Layer, y) {
			t.Errorf("%s layer:\n%+v\nwant\n%+v", id, lr.Layer, y)
		}
		if lr.Release == nil || !reflect.DeepEqual(*lr.Release, rel) {
			t.Errorf("%s release:\n%+v\nwant\n%+v", id, lr.Release, rel)
		}
	}
}
