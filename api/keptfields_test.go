package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"siteenv/ingest"
	"siteenv/tiles"
)

// A publisher's columns outside the layer's schema, kept by the layer file
// ("unknown_fields": "keep"), are in the layer's schema and the query
// answer as strings under their own names, as a client reads them.
func TestKeptColumnsReachTheAPI(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, true)
	if err := qh.led.SetSection(qh.ctx, "water", "Section water", 0); err != nil {
		t.Fatal(err)
	}
	def := &ingest.LayerDef{
		LayerID: "nsw.kept", SectionKey: "water", Name: "Layer nsw.kept", SchemaVersion: "1",
		FieldSchema:   map[string]json.RawMessage{"depth_m": json.RawMessage(`{"type":["number","null"]}`)},
		Units:         map[string]*string{"depth_m": ptrTo("m")},
		RadiusMaxM:    5000,
		Sources:       []tiles.Source{{SourceVariantID: "v1", Provider: "Test Survey", Licence: "CC-BY-4.0", Attribution: "© Test"}},
		Jurisdictions: []string{"NSW"}, GeometryTypes: []string{"Point"}, UnknownFields: ingest.UnknownFieldsKeep,
	}
	raw, _ := json.Marshal(def)
	def, err := ingest.ParseLayerDef(raw)
	if err != nil {
		t.Fatal(err)
	}
	p := east(100)
	in := filepath.Join(t.TempDir(), "bores.csv")
	csv := fmt.Sprintf("lon,lat,depth_m,BORE_NO,drilled_by\n%v,%v,12.5,GW0042,Acme\n", p[0], p[1])
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := ingest.Run(qh.ctx, ingest.Options{Layer: def, Store: qh.store, Publisher: ingest.LedgerPublisher{Ledger: qh.led}, TempDir: t.TempDir()}, in)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sum.KeptFields) != "[BORE_NO drilled_by]" {
		t.Fatalf("kept %v", sum.KeptFields)
	}
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write", "layers:read")

	sr := qh.do("GET", "/layers/nsw.kept/schema", k.Secret, nil)
	sch := sr.json(t)
	props, _ := sch["properties"].(map[string]any)
	if props == nil {
		t.Fatalf("layer schema: %d %s", sr.status, sr.body)
	}
	for _, name := range []string{"BORE_NO", "drilled_by"} {
		f, _ := props[name].(map[string]any)
		if f == nil || fmt.Sprint(f["type"]) != "[string null]" || f["title"] != name {
			t.Errorf("layer schema %s: %v", name, f)
		}
	}

	site := map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}
	r := qh.query(k.Secret, map[string]any{"site": site, "layer_ids": []string{"nsw.kept"}, "radius_m": 1000}, "Prefer", "wait=3")
	if r.status != 200 {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	m := r.json(t)
	feats, _ := m["features"].([]any)
	if len(feats) != 1 {
		t.Fatalf("result %s", r.body)
	}
	got := feats[0].(map[string]any)["properties"].(map[string]any)
	if got["BORE_NO"] != "GW0042" || got["drilled_by"] != "Acme" || got["depth_m"] != 12.5 {
		t.Errorf("feature properties %v", got)
	}
	qid := m["query_id"].(string)
	frozen := qh.do("GET", "/queries/"+qid+"/layers/nsw.kept/schema", k.Secret, nil).json(t)
	if frozen["properties"].(map[string]any)["BORE_NO"] == nil {
		t.Errorf("the query's frozen schema %v", frozen)
	}
}
