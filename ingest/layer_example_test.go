package ingest_test

import (
	"os"
	"slices"
	"testing"

	"siteenv/ingest"
	"siteenv/tiles"
)

// TestLayerExample: docs/layer.example.json, the README's starting point for
// a new layer, is a valid layer.json, with every kind of field it shows.
func TestLayerExample(t *testing.T) {
	b, err := os.ReadFile("../docs/layer.example.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ingest.ParseLayerDef(b)
	if err != nil {
		t.Fatalf("docs/layer.example.json: %v", err)
	}
	if d.Coverage == nil || len(d.Sources) != 1 || len(d.Jurisdictions) == 0 || len(d.GeometryTypes) == 0 {
		t.Errorf("the example should show coverage, a source, jurisdictions and geometry_types: %+v", d)
	}
	if len(d.Schema) != len(d.FieldSchema) || len(d.Units) != len(d.FieldSchema) {
		t.Errorf("field_schema %d fields, parsed %d, units %d", len(d.FieldSchema), len(d.Schema), len(d.Units))
	}
	want := map[string]tiles.FieldType{}
	for _, f := range d.Schema {
		want[f.Name] = f.Type
	}
	for _, f := range []string{"site_name", "status", "notified_on", "area_m2", "contaminants", "remediated"} {
		if _, ok := want[f]; !ok {
			t.Errorf("field %s missing from the parsed schema", f)
		}
	}
	if i := slices.IndexFunc(d.Schema, func(f tiles.Field) bool { return f.Name == "status" }); i < 0 || len(d.Schema[i].Enum) != 3 {
		t.Error("status should keep its enum")
	}
}
