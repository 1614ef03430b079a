package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"
	"github.com/paulmach/orb/geojson"

	"siteenv/tiles"
)

// sampleFeatures has every geometry type and every property type, with
// nulls, awkward strings, integers beyond float64 precision and a
// polygon whose hole touches its exterior ring at one point (valid).
func sampleFeatures() []tiles.Feature {
	p := func(name string, count, area, active, opened, updated any) map[string]any {
		return map[string]any{"name": name, "count": count, "area": area, "active": active, "opened": opened, "updated": updated}
	}
	return []tiles.Feature{
		{ID: "pt", Geometry: orb.Point{151.2093456789012, -33.8688197},
			Properties: p("Café, \"quoted\"\nsecond line", int64(9007199254740993), 0.1, true, "2024-02-29", "2024-06-01T10:20:30.123456+10:00")},
		{ID: "mpt", Geometry: orb.MultiPoint{{151.1, -33.8}, {151.2, -33.9}, {151.3000001, -33.95}},
			Properties: p("multi point", int64(-42), -1.5e-7, false, "1901-01-01", "1970-01-01T00:00:00Z")},
		{ID: "ls", Geometry: orb.LineString{{150.9, -34.0}, {151.0, -34.1}, {151.05, -34.05}},
			Properties: p("line with nulls", nil, nil, nil, nil, nil)},
		{ID: "mls", Geometry: orb.MultiLineString{{{150.1, -33.1}, {150.2, -33.2}}, {{150.3, -33.3}, {150.4, -33.35}, {150.5, -33.3}}},
			Properties: p("multi line", int64(0), 1e300, true, nil, "2023-12-31T23:59:59.999999Z")},
		{ID: "poly", Geometry: orb.Polygon{
			ring([2]float64{150.0, -34.0}, [2]float64{150.1, -34.0}, [2]float64{150.1, -33.9}, [2]float64{150.0, -33.9}, [2]float64{150.0, -34.0}),
			ring([2]float64{150.02, -33.98}, [2]float64{150.02, -33.95}, [2]float64{150.05, -33.95}, [2]float64{150.02, -33.98}),
		}, Properties: p("polygon with a hole", int64(7), 12345.678, false, "2000-01-01", nil)},
		{ID: "mpoly", Geometry: orb.MultiPolygon{
			{ring([2]float64{149.0, -35.0}, [2]float64{149.1, -35.0}, [2]float64{149.1, -34.9}, [2]float64{149.0, -35.0})},
			{ring([2]float64{149.2, -35.0}, [2]float64{149.3, -35.0}, [2]float64{149.3, -34.9}, [2]float64{149.2, -34.9}, [2]float64{149.2, -35.0})},
		}, Properties: p("multi polygon", int64(-9223372036854775808), -0.0, nil, "2099-12-31", nil)},
		{ID: "touching-hole", Geometry: orb.Polygon{
			ring([2]float64{152.0, -31.0}, [2]float64{152.1, -31.0}, [2]float64{152.1, -30.9}, [2]float64{152.0, -30.9}, [2]float64{152.0, -31.0}),
			ring([2]float64{152.0, -31.0}, [2]float64{152.05, -30.95}, [2]float64{152.08, -30.98}, [2]float64{152.0, -31.0}),
		}, Properties: p("hole touching the exterior", int64(1), 2.5, true, nil, nil)},
		{ID: "perth", Geometry: orb.Point{115.8605, -31.9505},
			Properties: p("far away", int64(9223372036854775807), 6.02214076e23, false, "2024-01-01", "2024-01-01T00:00:00.5Z")},
	}
}

// expected returns the canonical properties of f.
func expected(t *testing.T, schema tiles.FieldSchema, f tiles.Feature) map[string]any {
	t.Helper()
	n, err := schema.Normalize(f.Properties)
	if err != nil {
		t.Fatalf("%s: %v", f.ID, err)
	}
	return n
}

func geojsonFeature(f tiles.Feature) *geojson.Feature {
	gf := geojson.NewFeature(f.Geometry)
	gf.ID = f.ID
	gf.Properties = geojson.Properties(f.Properties)
	return gf
}

func writeFC(t *testing.T, path string, feats []tiles.Feature) {
	t.Helper()
	fc := geojson.NewFeatureCollection()
	for _, f := range feats {
		fc.Append(geojsonFeature(f))
	}
	b, err := json.MarshalIndent(fc, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeLines(t *testing.T, path string, feats []tiles.Feature, prefix string) {
	t.Helper()
	var buf bytes.Buffer
	for _, f := range feats {
		b, err := json.Marshal(geojsonFeature(f))
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString(prefix)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// csvCell formats a property value as a CSV cell (null: empty).
func csvCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("csvCell %T", v))
}

func csvQuote(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

var propNames = []string{"name", "count", "area", "active", "opened", "updated"}

func writeCSV(t *testing.T, path string, feats []tiles.Feature, geomCols []string, geom func(orb.Geometry) []string) {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("fid," + strings.Join(geomCols, ",") + "," + strings.Join(propNames, ",") + "\r\n")
	for _, f := range feats {
		cells := []string{f.ID}
		cells = append(cells, geom(f.Geometry)...)
		for _, n := range propNames {
			cells = append(cells, csvCell(f.Properties[n]))
		}
		for i := range cells {
			cells[i] = csvQuote(cells[i])
		}
		buf.WriteString(strings.Join(cells, ",") + "\r\n")
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	all := sampleFeatures()
	var points []tiles.Feature
	for _, f := range all {
		if _, ok := f.Geometry.(orb.Point); ok {
			points = append(points, f)
		}
	}
	tests := []struct {
		name   string
		file   string
		feats  []tiles.Feature
		idProp string
		write  func(t *testing.T, path string, feats []tiles.Feature, schema tiles.FieldSchema)
	}{
		{"FeatureCollection", "in.geojson", all, "", func(t *testing.T, p string, fs []tiles.Feature, _ tiles.FieldSchema) { writeFC(t, p, fs) }},
		{"FeatureCollection .JSON", "IN.JSON", all, "", func(t *testing.T, p string, fs []tiles.Feature, _ tiles.FieldSchema) { writeFC(t, p, fs) }},
		{"NDJSON", "in.ndjson", all, "", func(t *testing.T, p string, fs []tiles.Feature, _ tiles.FieldSchema) { writeLines(t, p, fs, "") }},
		{"GeoJSONL with RS", "in.geojsonl", all, "", func(t *testing.T, p string, fs []tiles.Feature, _ tiles.FieldSchema) { writeLines(t, p, fs, "\x1e") }},
		{"GeoJSON text sequence", "in.geojsons", all, "", func(t *testing.T, p string, fs []tiles.Feature, _ tiles.FieldSchema) { writeLines(t, p, fs, "\x1e") }},
		{"CSV WKT", "in.csv", all, "fid", func(t *testing.T, p string, fs []tiles.Feature, _ tiles.FieldSchema) {
			writeCSV(t, p, fs, []string{"WKT"}, func(g orb.Geometry) []string { return []string{wkt.MarshalString(g)} })
		}},
		{"CSV lon/lat", "in.csv", points, "fid", func(t *testing.T, p string, fs []tiles.Feature, _ tiles.FieldSchema) {
			writeCSV(t, p, fs, []string{"lon", "lat"}, func(g orb.Geometry) []string {
				pt := g.(orb.Point)
				return []string{strconv.FormatFloat(pt[0], 'g', -1, 64), strconv.FormatFloat(pt[1], 'g', -1, 64)}
			})
		}},
		{"GeoParquet", "in.parquet", all, "", func(t *testing.T, p string, fs []tiles.Feature, schema tiles.FieldSchema) {
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := tiles.WriteTile(f, schema, fs, tiles.WriterOptions{RowGroupRows: 3}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			path := filepath.Join(b.dir, tc.file)
			tc.write(t, path, tc.feats, b.def.Schema)
			opt := b.opts()
			opt.IDProperty = tc.idProp
			sum, err := Run(context.Background(), opt, path)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Features != int64(len(tc.feats)) || sum.Rejected != 0 || sum.AlreadyPublished || sum.Tiles < 1 || sum.Bytes <= 0 {
				t.Fatalf("summary %+v", sum)
			}
			got, m := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
			if len(got) != len(tc.feats) {
				t.Fatalf("got %d features, want %d", len(got), len(tc.feats))
			}
			for _, want := range tc.feats {
				g, ok := got[want.ID]
				if !ok {
					t.Errorf("feature %q missing", want.ID)
					continue
				}
				if !orb.Equal(g.Geometry, want.Geometry) {
					t.Errorf("%s: geometry\n got %v\nwant %v", want.ID, g.Geometry, want.Geometry)
				}
				if w := expected(t, b.def.Schema, want); !reflect.DeepEqual(g.Properties, w) {
					t.Errorf("%s: properties\n got %#v\nwant %#v", want.ID, g.Properties, w)
				}
			}
			// The manifest carries the layer's fields and the clock.
			if m.SchemaVersion != "1" || len(m.Sources) != 1 || m.Sources[0].SourceVariantID != "test-v1" ||
				!m.IngestedAt.Equal(testClock()) || m.CreatedBy != DefaultCreatedBy || m.Coverage != nil ||
				*m.Units["area"] != "m2" || m.BBox == nil {
				t.Errorf("manifest %+v", m)
			}
			if n := b.pub.count(); n != 1 {
				t.Errorf("Publish called %d times", n)
			}
			if b.pub.calls[0].ReleaseID != sum.ReleaseID {
				t.Errorf("published %s, summary says %s", b.pub.calls[0].ReleaseID, sum.ReleaseID)
			}
		})
	}
}

// TestRoundTripSameRelease: the same features from every format make the
// same release (ids and values agree, so tiles are byte-identical).
func TestRoundTripSameRelease(t *testing.T) {
	t.Parallel()
	feats := sampleFeatures()
	ids := map[string]bool{}
	for _, name := range []string{"a.geojson", "a.ndjson", "a.geojsons", "a.parquet", "a.csv"} {
		b := setup(t)
		path := filepath.Join(b.dir, name)
		opt := b.opts()
		switch filepath.Ext(name) {
		case ".geojson":
			writeFC(t, path, feats)
		case ".ndjson":
			writeLines(t, path, feats, "")
		case ".geojsons":
			writeLines(t, path, feats, "\x1e")
		case ".parquet":
			f, _ := os.Create(path)
			if _, err := tiles.WriteTile(f, b.def.Schema, feats, tiles.WriterOptions{}); err != nil {
				t.Fatal(err)
			}
			f.Close()
		case ".csv":
			writeCSV(t, path, feats, []string{"wkt"}, func(g orb.Geometry) []string { return []string{wkt.MarshalString(g)} })
			opt.IDProperty = "fid"
		}
		sum, err := Run(context.Background(), opt, path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ids[sum.ReleaseID] = true
	}
	if len(ids) != 1 {
		t.Errorf("release ids differ across formats: %v", ids)
	}
}

func TestMultipleFilesAndDefaultIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// No id member: ids default to <file base name>:<row>.
	a := b.write("a.ndjson", `{"type":"Feature","geometry":{"type":"Point","coordinates":[151,-33]},"properties":{"name":"a1"}}
{"type":"Feature","geometry":{"type":"Point","coordinates":[151.1,-33]},"properties":{"name":"a2"}}
`)
	c := b.write("c.csv", "lng,lat,name\n151.2,-33,c1\n")
	sum, err := Run(context.Background(), b.opts(), a, c)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
	for id, name := range map[string]string{"a.ndjson:1": "a1", "a.ndjson:2": "a2", "c.csv:1": "c1"} {
		if got[id].Properties["name"] != name {
			t.Errorf("%s: %v", id, got[id].Properties)
		}
	}
}

func TestIDProperty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The id property is not in the schema: it is taken out of the
	// properties. Numeric ids are kept in decimal.
	p := b.write("a.geojson", `{"type":"FeatureCollection","features":[
{"type":"Feature","id":"ignored","geometry":{"type":"Point","coordinates":[151,-33]},"properties":{"name":"a","gid":17}},
{"type":"Feature","geometry":{"type":"Point","coordinates":[151,-33.1]},"properties":{"name":"b","gid":"x-2"}},
{"type":"Feature","geometry":{"type":"Point","coordinates":[151,-33.2]},"properties":{"name":"c"}}]}`)
	opt := b.opts()
	opt.IDProperty = "gid"
	opt.MaxRejects = 1
	opt.RejectsPath = filepath.Join(t.TempDir(), "rejects.csv")
	sum, err := Run(context.Background(), opt, p)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Features != 2 || sum.Rejected != 1 {
		t.Fatalf("%+v", sum)
	}
	got, _ := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
	if got["17"].Properties["name"] != "a" || got["x-2"].Properties["name"] != "b" {
		t.Errorf("features %v", got)
	}
	rows := readRejects(t, opt.RejectsPath)
	if len(rows) != 2 || rows[1][1] != "3" || !strings.Contains(rows[1][2], `id property "gid" is missing`) {
		t.Errorf("rejects %q", rows)
	}
}
