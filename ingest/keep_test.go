package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/engine"
	"siteenv/tiles"
)

// onlyNameLayer is testLayerJSON with "name" its only field, so that the
// publishers' fixtures (name, count, area, active, opened) have columns
// outside it.
func onlyNameLayer(t *testing.T, extra string) *LayerDef {
	t.Helper()
	lj := strings.Replace(testLayerJSON, `"coverage": null`, `"coverage": null`+extra, 1)
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lj), &m); err != nil {
		t.Fatal(err)
	}
	m["field_schema"] = json.RawMessage(`{"name": {"type": "string"}}`)
	m["units"] = json.RawMessage(`{"name": null}`)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	def, err := ParseLayerDef(b)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// Columns outside the schema kept as string fields ("unknown_fields":
// "keep", --keep-unknown-fields): a publisher's extra columns reach the
// tiles, the manifest's and the catalogue's field_schema, and a query
// answer, from a CSV, GeoJSON, newline-delimited GeoJSON, a GeoPackage and
// a Shapefile made by ogr2ogr.
func TestKeepUnknownColumns(t *testing.T) {
	t.Parallel()
	pub := filepath.Join("testdata", "publishers")
	type want struct {
		at    orb.Point
		id    string
		props map[string]any // the kept columns' values (nil: null)
	}
	for _, tc := range []struct {
		name    string
		file    string // a name under the bundle's inputs, or a path
		content string // "" for a fixture
		table   string
		flag    bool // Options.KeepUnknownFields, not the layer file
		kept    []string
		want    []want
	}{
		{
			name:    "csv",
			file:    "sites.csv",
			content: "WKT,name,lat,lon,Zone_code\n\"POINT (151 -33.9)\",Alpha,-33.9,151,R2\n\"POINT (151.1 -33.8)\",Beta,,151.1,\n",
			kept:    []string{"lat", "lon", "Zone_code"},
			want: []want{
				{orb.Point{151, -33.9}, "sites.csv:1", map[string]any{"lat": "-33.9", "lon": "151", "Zone_code": "R2"}},
				{orb.Point{151.1, -33.8}, "sites.csv:2", map[string]any{"lat": nil, "lon": "151.1", "Zone_code": nil}},
			},
		},
		{
			name: "geojson",
			file: "sites.geojson",
			content: `{"type":"FeatureCollection","features":[
{"type":"Feature","id":"g1","geometry":{"type":"Point","coordinates":[151,-33.9]},"properties":{"name":"Gamma","zone":"R2","lots":3,"flag":true,"extra":{"a":[1,2]}}},
{"type":"Feature","id":"g2","geometry":{"type":"Point","coordinates":[151.1,-33.8]},"properties":{"height_m":12.5,"name":"Delta","zone":null}}]}`,
			flag: true,
			kept: []string{"zone", "lots", "flag", "extra", "height_m"},
			want: []want{
				{orb.Point{151, -33.9}, "g1", map[string]any{"zone": "R2", "lots": "3", "flag": "true", "extra": `{"a":[1,2]}`, "height_m": nil}},
				{orb.Point{151.1, -33.8}, "g2", map[string]any{"zone": nil, "lots": nil, "height_m": "12.5"}},
			},
		},
		{
			name:    "ndjson",
			file:    "sites.ndjson",
			content: `{"type":"Feature","id":"n1","geometry":{"type":"Point","coordinates":[151,-33.9]},"properties":{"name":"Eta","lat":-33.9,"lon":151}}` + "\n",
			kept:    []string{"lat", "lon"},
			want:    []want{{orb.Point{151, -33.9}, "n1", map[string]any{"lat": "-33.9", "lon": "151"}}},
		},
		{
			name:  "geopackage",
			file:  filepath.Join(pub, "gpkg", "publishers_7844.gpkg"),
			table: "points",
			kept:  []string{"count", "area", "active", "opened"},
			want: []want{
				{orb.Point{151.2093, -33.8688}, "publishers_7844.gpkg:1", map[string]any{"count": "7", "area": nil, "active": "true", "opened": "2010-10-10"}},
				{orb.Point{152.9, -31.4321}, "publishers_7844.gpkg:2", map[string]any{"count": nil, "area": "3.75", "active": nil, "opened": nil}},
			},
		},
		{
			name: "shapefile",
			file: filepath.Join(pub, "shp", "points_7844.shp"),
			flag: true,
			want: []want{
				// GDAL writes a boolean as N(1): kept as the .dbf's text.
				{orb.Point{153.55, -28.17}, "points_7844.shp:3", map[string]any{"count": "0", "active": "0", "opened": "2024-02-29"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			in := tc.file
			if tc.content != "" {
				in = b.write(tc.file, tc.content)
			}
			opt := b.opts()
			opt.Table = tc.table
			if tc.flag {
				opt.Layer = onlyNameLayer(t, "")
				opt.KeepUnknownFields = true
			} else {
				opt.Layer = onlyNameLayer(t, `, "unknown_fields": "keep"`)
			}
			// Without keeping, the extra columns are refused.
			plain := b.opts()
			plain.Layer, plain.Table = onlyNameLayer(t, ""), tc.table
			if _, err := Run(context.Background(), plain, in); err == nil {
				t.Fatal("ingested without a policy for the extra columns")
			}
			b.assertNothingPublished()

			sum, err := Run(context.Background(), opt, in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.kept != nil && !slices.Equal(sum.KeptFields, tc.kept) {
				t.Errorf("kept %v, want %v (source order)", sum.KeptFields, tc.kept)
			}
			got, m := releaseFeatures(t, b.store, opt.Layer.LayerID, sum.ReleaseID)
			pubDef := b.pub.defs[len(b.pub.defs)-1]
			for _, k := range sum.KeptFields {
				f, ok := m.FieldSchema.Lookup(k)
				if !ok || f.Type != tiles.TypeString || !f.Nullable || f.Title != k {
					t.Errorf("manifest field %q: %+v, %v; want a nullable string titled %q", k, f, ok, k)
				}
				if u, ok := m.Units[k]; !ok || u != nil {
					t.Errorf("manifest unit of %q: %v, %v; want null", k, u, ok)
				}
				var frag struct {
					Type  []string `json:"type"`
					Title string   `json:"title"`
				}
				if err := json.Unmarshal(pubDef.FieldSchema[k], &frag); err != nil || !slices.Equal(frag.Type, []string{"string", "null"}) || frag.Title != k {
					t.Errorf("published field_schema[%q] = %s", k, pubDef.FieldSchema[k])
				}
			}
			if _, ok := m.FieldSchema.Lookup("name"); !ok {
				t.Error("the layer's own field is gone from the release's schema")
			}
			eng, err := engine.New(b.store, engine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if _, ok := got[w.id]; !ok {
					t.Fatalf("no feature %q in the release (%d features)", w.id, len(got))
				}
				res, err := eng.Query(context.Background(), engine.Request{Site: w.at, RadiusM: 1,
					Layers: []engine.LayerRequest{{LayerID: opt.Layer.LayerID, ReleaseID: sum.ReleaseID}}})
				if err != nil {
					t.Fatal(err)
				}
				var props map[string]any
				for i := range res[0].Features {
					if res[0].Features[i].ID == w.id {
						props = res[0].Features[i].Properties()
					}
				}
				if props == nil {
					t.Fatalf("query at %v: %q not found (%d features)", w.at, w.id, len(res[0].Features))
				}
				for k, v := range w.props {
					if props[k] != v {
						t.Errorf("%s: query answer %q = %#v, want %#v", w.id, k, props[k], v)
					}
				}
			}

			// Again: the digest's no-op publishes the same schema.
			again, err := Run(context.Background(), opt, in)
			if err != nil || !again.SameInput || !slices.Equal(again.KeptFields, sum.KeptFields) {
				t.Fatalf("again: %+v, %v", again, err)
			}
			if d := b.pub.defs[len(b.pub.defs)-1]; len(d.FieldSchema) != len(pubDef.FieldSchema) {
				t.Errorf("the no-op published %d fields, the ingest %d", len(d.FieldSchema), len(pubDef.FieldSchema))
			}
		})
	}
}

// A column that cannot be kept as a field is refused with its name and
// why, and nothing is published.
func TestKeepUnknownColumnsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, content, extra, want string
	}{
		{"not a field name", "a.csv", "WKT,name,Zone code\n\"POINT (151 -33.9)\",A,R2\n", "", `"Zone code" cannot be kept as a field: a field name is`},
		{"reserved", "b.ndjson", `{"type":"Feature","geometry":{"type":"Point","coordinates":[151,-33.9]},"properties":{"name":"A","bbox":"1,2"}}` + "\n", "", `"bbox" cannot be kept`},
		{"case of a field", "c.csv", "WKT,Name\n\"POINT (151 -33.9)\",A\n", "", `"Name" cannot be kept as a field: its name differs from field "name"`},
		{"case of another column", "d.ndjson", `{"type":"Feature","geometry":{"type":"Point","coordinates":[151,-33.9]},"properties":{"name":"A","zone":"x","Zone":"y"}}` + "\n", "", `columns "zone" and "Zone" cannot both be kept`},
		{"mapped beside its target", "e.csv", "WKT,name,site_name\n\"POINT (151 -33.9)\",A,B\n", `, "field_map": {"site_name": "name"}`, `column "site_name" is mapped to field "name" by field_map, and the file also has a column "name"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			in := b.write(tc.file, tc.content)
			opt := b.opts()
			opt.Layer = onlyNameLayer(t, `, "unknown_fields": "keep"`+tc.extra)
			_, err := Run(context.Background(), opt, in)
			var fe *FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a *FileError saying %s", err, tc.want)
			}
			b.assertNothingPublished()
		})
	}

	b := setup(t)
	opt := b.opts()
	opt.DropUnknownFields, opt.KeepUnknownFields = true, true
	if _, err := Run(context.Background(), opt, b.write("x.csv", "WKT,name\n\"POINT (151 -33.9)\",A\n")); err == nil {
		t.Error("drop and keep together accepted")
	}
	opt = b.opts()
	opt.KeepUnknownFields = true
	if _, err := RunRows(context.Background(), opt, func(func(Row) error) error { return nil }); err == nil {
		t.Error("RunRows accepted keep: it has no columns before its rows")
	}
	if _, err := ParseLayerDef([]byte(strings.Replace(testLayerJSON, `"coverage": null`, `"coverage": null, "unknown_fields": "keep"`, 1))); err != nil {
		t.Errorf("layer with unknown_fields keep: %v", err)
	}
}

// FuzzPropertyNames: the pre-scan of kept columns names exactly the
// properties the ingest parses from a feature, and never panics.
func FuzzPropertyNames(f *testing.F) {
	f.Add([]byte(`{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":1,"b\u00e9":{"c":[1,{"d":2}]},"e":null}}`))
	f.Add([]byte(`{"properties":{},"type":"Feature","geometry":null}`))
	f.Add([]byte(`{"properties":null,"x":{"properties":{"no":1}}}`))
	f.Add([]byte(`{"properties":{"a":1,"a":2}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var names []string
		propertyNames(raw, func(s string) { names = append(names, s) })
		pf, err := parseFeature(raw, 1000, nil)
		if err != nil {
			return
		}
		for k := range pf.props {
			if !slices.Contains(names, k) {
				t.Fatalf("%q: property %q not named by the pre-scan (it named %q)", raw, k, names)
			}
		}
		for _, k := range names {
			if _, ok := pf.props[k]; !ok {
				t.Fatalf("%q: the pre-scan named %q, which the feature does not have", raw, k)
			}
		}
	})
}
