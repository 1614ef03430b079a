package tiles

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/paulmach/orb"
)

// The official GeoParquet 1.1.0 metadata schema (format-specs/schema.json of
// opengeospatial/geoparquet) is in testdata. It is written in JSON Schema
// draft-07, while kin-openapi validates JSON Schema 2020-12 and cannot load
// draft-07 tuple "items" arrays into an openapi3.Schema. geoParquetValidator
// therefore translates the two draft-07 constructs the file uses, keeping
// their meaning:
//
//   - "items": [a, b] with "additionalItems": false becomes
//     "prefixItems": [a, b] with "maxItems": 2;
//   - the external $ref to https://proj.org/schemas/v0.5/projjson.schema.json
//     (not reachable offline) becomes a local stand-in requiring a PROJJSON
//     object with a known "type"; TestTileGeoMetadataCRS checks the CRS itself.
//
// Negative tests below prove the translated schema still rejects what the
// official one rejects.
func geoParquetValidator(t testing.TB) *openapi3.Schema {
	t.Helper()
	data, err := os.ReadFile("testdata/geoparquet-1.1.0.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	doc["$defs"] = map[string]any{"projjson": map[string]any{
		"type":     "object",
		"required": []any{"type"},
		"properties": map[string]any{"type": map[string]any{"enum": []any{
			"GeographicCRS", "GeodeticCRS", "ProjectedCRS", "CompoundCRS", "BoundCRS", "VerticalCRS",
			"EngineeringCRS", "TemporalCRS", "ParametricCRS", "DerivedGeographicCRS", "DerivedGeodeticCRS",
			"DerivedProjectedCRS", "DerivedVerticalCRS", "DerivedEngineeringCRS", "DerivedTemporalCRS",
			"DerivedParametricCRS",
		}}},
	}}
	var translate func(v any) any
	translate = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, "https://proj.org/schemas/") {
				x["$ref"] = "#/$defs/projjson"
			}
			if items, ok := x["items"].([]any); ok {
				delete(x, "items")
				x["prefixItems"] = items
				if ai, ok := x["additionalItems"].(bool); ok && !ai {
					delete(x, "additionalItems")
					x["maxItems"] = float64(len(items))
				}
			}
			for k, e := range x {
				x[k] = translate(e)
			}
		case []any:
			for i, e := range x {
				x[i] = translate(e)
			}
		}
		return v
	}
	translate(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var s openapi3.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("kin-openapi cannot load the translated schema: %v", err)
	}
	return &s
}

func validateGeoJSON(t testing.TB, s *openapi3.Schema, geo []byte) error {
	t.Helper()
	var v any
	if err := json.Unmarshal(geo, &v); err != nil {
		t.Fatal(err)
	}
	return s.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// tileGeo writes a small tile and returns its "geo" metadata.
func tileGeo(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	feats := []Feature{
		{ID: "a", Geometry: orb.Polygon{{{150, -34}, {151, -34}, {151, -33}, {150, -34}}}},
		{ID: "b", Geometry: orb.MultiPolygon{{{{152, -30}, {153, -30}, {153, -29}, {152, -30}}}}},
	}
	if _, err := WriteTile(&buf, nil, feats, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	pf, err := openParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	v := pf.MetaData().KeyValueMetadata().FindValue(GeoMetadataKey)
	if v == nil {
		t.Fatal("no geo metadata")
	}
	return []byte(*v)
}

func TestTileGeoMetadataMatchesOfficialSchema(t *testing.T) {
	s := geoParquetValidator(t)
	geo := tileGeo(t)
	if err := validateGeoJSON(t, s, geo); err != nil {
		t.Fatalf("tile geo metadata fails the GeoParquet 1.1.0 schema: %v\n%s", err, geo)
	}
	var m geoMetadata
	if err := json.Unmarshal(geo, &m); err != nil {
		t.Fatal(err)
	}
	if err := validateGeoMetadata(m); err != nil {
		t.Fatal(err)
	}
	col := m.Columns["geometry"]
	if got := strings.Join(col.GeometryTypes, ","); got != "MultiPolygon,Polygon" {
		t.Errorf("geometry_types = %s", got)
	}
	if want := []float64{150, -34, 153, -29}; len(col.BBox) != 4 || col.BBox[0] != want[0] || col.BBox[1] != want[1] || col.BBox[2] != want[2] || col.BBox[3] != want[3] {
		t.Errorf("bbox = %v, want %v", col.BBox, want)
	}
}

func TestTileGeoMetadataCRS(t *testing.T) {
	var m geoMetadata
	if err := json.Unmarshal(tileGeo(t), &m); err != nil {
		t.Fatal(err)
	}
	id, err := crsID(m.Columns["geometry"].CRS)
	if err != nil || id != "OGC:CRS84" {
		t.Fatalf("crs id = %q, %v; want OGC:CRS84", id, err)
	}
	var crs struct {
		Type             string `json:"type"`
		CoordinateSystem struct {
			Axis []struct{ Direction string } `json:"axis"`
		} `json:"coordinate_system"`
	}
	if err := json.Unmarshal(m.Columns["geometry"].CRS, &crs); err != nil {
		t.Fatal(err)
	}
	if crs.Type != "GeographicCRS" || len(crs.CoordinateSystem.Axis) != 2 ||
		crs.CoordinateSystem.Axis[0].Direction != "east" || crs.CoordinateSystem.Axis[1].Direction != "north" {
		t.Fatalf("crs is not longitude, latitude: %+v", crs)
	}
}

func TestGeoSchemaRejectsBrokenMetadata(t *testing.T) {
	s := geoParquetValidator(t)
	good := tileGeo(t)
	tests := []struct {
		name   string
		mutate func(m map[string]any)
	}{
		{"wrong version", func(m map[string]any) { m["version"] = "1.0.0" }},
		{"dev version", func(m map[string]any) { m["version"] = "1.1.0-dev" }},
		{"missing version", func(m map[string]any) { delete(m, "version") }},
		{"missing primary_column", func(m map[string]any) { delete(m, "primary_column") }},
		{"empty primary_column", func(m map[string]any) { m["primary_column"] = "" }},
		{"missing columns", func(m map[string]any) { delete(m, "columns") }},
		{"no columns", func(m map[string]any) { m["columns"] = map[string]any{} }},
		{"bad encoding", func(m map[string]any) { geomCol(m)["encoding"] = "WKT" }},
		{"missing encoding", func(m map[string]any) { delete(geomCol(m), "encoding") }},
		{"missing geometry_types", func(m map[string]any) { delete(geomCol(m), "geometry_types") }},
		{"bad geometry type", func(m map[string]any) { geomCol(m)["geometry_types"] = []any{"Polygons"} }},
		{"repeated geometry type", func(m map[string]any) { geomCol(m)["geometry_types"] = []any{"Point", "Point"} }},
		{"bbox of 5", func(m map[string]any) { geomCol(m)["bbox"] = []any{1.0, 2.0, 3.0, 4.0, 5.0} }},
		{"bad edges", func(m map[string]any) { geomCol(m)["edges"] = "curved" }},
		{"bad orientation", func(m map[string]any) { geomCol(m)["orientation"] = "clockwise" }},
		{"crs not an object", func(m map[string]any) { geomCol(m)["crs"] = "EPSG:4326" }},
		{"covering wrong field", func(m map[string]any) {
			geomCol(m)["covering"].(map[string]any)["bbox"].(map[string]any)["xmin"] = []any{"bbox", "ymin"}
		}},
		{"covering extra item", func(m map[string]any) {
			geomCol(m)["covering"].(map[string]any)["bbox"].(map[string]any)["xmax"] = []any{"bbox", "xmax", "x"}
		}},
		{"covering missing ymax", func(m map[string]any) {
			delete(geomCol(m)["covering"].(map[string]any)["bbox"].(map[string]any), "ymax")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			tc.mutate(m)
			b, _ := json.Marshal(m)
			if err := validateGeoJSON(t, s, b); err == nil {
				t.Fatalf("official schema accepted broken metadata: %s", b)
			}
		})
	}
	// The reader's own check agrees on the structural cases it covers.
	for _, tc := range tests[3:] {
		var m map[string]any
		json.Unmarshal(good, &m)
		tc.mutate(m)
		b, _ := json.Marshal(m)
		var gm geoMetadata
		if json.Unmarshal(b, &gm) != nil {
			continue // wrong JSON types: rejected while decoding
		}
		if tc.name == "crs not an object" {
			continue // checked when the crs id is read
		}
		if err := validateGeoMetadata(gm); err == nil {
			t.Errorf("validateGeoMetadata accepted %q", tc.name)
		}
	}
}

func geomCol(m map[string]any) map[string]any {
	return m["columns"].(map[string]any)["geometry"].(map[string]any)
}
