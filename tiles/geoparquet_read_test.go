package tiles

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
)

func readAllGeoParquet(t *testing.T, data []byte) []Feature {
	t.Helper()
	var out []Feature
	err := ReadGeoParquet(context.Background(), bytes.NewReader(data), int64(len(data)), func(f Feature) error {
		out = append(out, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadGeoParquetOwnTile(t *testing.T) {
	schema := testSchema(t)
	feats := everyGeometry()
	data := mustWrite(t, schema, feats)
	got := readAllGeoParquet(t, data)
	if len(got) != len(feats) {
		t.Fatalf("read %d features, want %d", len(got), len(feats))
	}
	want := map[string]Feature{}
	for _, f := range feats {
		want[f.ID] = f
	}
	for _, f := range got {
		w, ok := want[f.ID]
		if !ok {
			t.Fatalf("unexpected id %q", f.ID)
		}
		if !reflect.DeepEqual(f.Geometry, w.Geometry) {
			t.Errorf("%s: geometry %v, want %v", f.ID, f.Geometry, w.Geometry)
		}
		wp, _ := schema.Normalize(w.Properties)
		if !reflect.DeepEqual(f.Properties, wp) {
			t.Errorf("%s: properties\n got %#v\nwant %#v", f.ID, f.Properties, wp)
		}
		if _, has := f.Properties["bbox"]; has {
			t.Errorf("bbox covering leaked into properties")
		}
	}
	info, err := InspectGeoParquet(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != "1.1.0" || info.PrimaryColumn != "geometry" || info.CRS != "OGC:CRS84" || info.Rows != int64(len(feats)) {
		t.Fatalf("info = %+v", info)
	}
}

// foreignFile writes a GeoParquet file the way another tool might: geometry
// column "geom", assorted Arrow types, no covering, given geo metadata (or
// none).
func foreignFile(t *testing.T, geo string, geomName string) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	var md arrow.Metadata
	if geo != "" {
		md = arrow.NewMetadata([]string{"geo"}, []string{geo})
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "name", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: geomName, Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "tsz", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "Australia/Sydney"}, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, &md)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	p1, _ := wkb.Marshal(orb.Point{151, -33})
	p2, _ := wkb.Marshal(orb.LineString{{1, 2}, {3, 4}})
	b.Field(0).(*array.LargeStringBuilder).AppendValues([]string{"one", ""}, []bool{true, false})
	b.Field(1).(*array.BinaryBuilder).AppendValues([][]byte{p1, p2}, nil)
	b.Field(2).(*array.Int32Builder).AppendValues([]int32{42, -1}, nil)
	b.Field(3).(*array.Float32Builder).AppendValues([]float32{1.5, 0}, []bool{true, false})
	b.Field(4).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(time.Date(2024, 1, 2, 3, 4, 5, 6e6, time.UTC).UnixMilli()), 0}, nil)
	b.Field(5).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).Unix()), 0}, []bool{true, false})
	b.Field(6).(*array.Date32Builder).AppendValues([]arrow.Date32{arrow.Date32FromTime(time.Date(2020, 2, 29, 0, 0, 0, 0, time.UTC)), 0}, nil)
	lb := b.Field(7).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	lb.AppendNull()
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadGeoParquetForeignFile(t *testing.T) {
	const gda2020 = `{"type":"GeographicCRS","name":"GDA2020","id":{"authority":"EPSG","code":7844}}`
	tests := []struct {
		name     string
		geo      string
		geomName string
		wantCRS  string
		wantVer  string
	}{
		{"1.0 with null crs", `{"version":"1.0.0","primary_column":"geom","columns":{"geom":{"encoding":"WKB","geometry_types":["Point","LineString"],"crs":null}}}`, "geom", "", "1.0.0"},
		{"1.1 with EPSG:7844", `{"version":"1.1.0","primary_column":"geom","columns":{"geom":{"encoding":"WKB","geometry_types":[],"crs":` + gda2020 + `}}}`, "geom", "EPSG:7844", "1.1.0"},
		{"crs omitted", `{"version":"1.1.0","primary_column":"geom","columns":{"geom":{"encoding":"WKB","geometry_types":[]}}}`, "geom", "OGC:CRS84", "1.1.0"},
		{"no geo metadata", "", "geometry", "OGC:CRS84", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := foreignFile(t, tc.geo, tc.geomName)
			info, err := InspectGeoParquet(context.Background(), bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if info.CRS != tc.wantCRS || info.Version != tc.wantVer || info.PrimaryColumn != tc.geomName || info.Rows != 2 {
				t.Fatalf("info = %+v", info)
			}
			got := readAllGeoParquet(t, data)
			if len(got) != 2 {
				t.Fatalf("read %d features", len(got))
			}
			want := []Feature{
				{Geometry: orb.Point{151, -33}, Properties: map[string]any{
					"name": "one", "n": int64(42), "x": 1.5, "ts": "2024-01-02T03:04:05.006",
					"tsz": "2024-01-02T03:04:05Z", "d": "2020-02-29", "tags": []any{"a", "b"}}},
				{Geometry: orb.LineString{{1, 2}, {3, 4}}, Properties: map[string]any{
					"name": nil, "n": int64(-1), "x": nil, "ts": "1970-01-01T00:00:00",
					"tsz": nil, "d": "1970-01-01", "tags": nil}},
			}
			for i := range want {
				if got[i].ID != "" {
					t.Errorf("foreign feature got id %q", got[i].ID)
				}
				if !reflect.DeepEqual(got[i].Geometry, want[i].Geometry) {
					t.Errorf("row %d geometry %v, want %v", i, got[i].Geometry, want[i].Geometry)
				}
				if !reflect.DeepEqual(got[i].Properties, want[i].Properties) {
					t.Errorf("row %d properties\n got %#v\nwant %#v", i, got[i].Properties, want[i].Properties)
				}
			}
		})
	}
}

func TestReadGeoParquetErrors(t *testing.T) {
	data := mustWrite(t, testSchema(t), everyGeometry())
	stop := errors.New("stop")
	n := 0
	err := ReadGeoParquet(context.Background(), bytes.NewReader(data), int64(len(data)), func(Feature) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("callback error not returned as is: %v after %d calls", err, n)
	}
	native := foreignFile(t, `{"version":"1.1.0","primary_column":"geom","columns":{"geom":{"encoding":"point","geometry_types":["Point"]}}}`, "geom")
	if err := ReadGeoParquet(context.Background(), bytes.NewReader(native), int64(len(native)), func(Feature) error { return nil }); !errors.Is(err, ErrInvalidTile) {
		t.Fatalf("native encoding err = %v, want ErrInvalidTile", err)
	}
	broken := foreignFile(t, `{"version":"1.1.0","columns":{"geom":{"encoding":"WKB","geometry_types":[]}}}`, "geom")
	if err := ReadGeoParquet(context.Background(), bytes.NewReader(broken), int64(len(broken)), func(Feature) error { return nil }); !errors.Is(err, ErrInvalidTile) {
		t.Fatalf("missing primary_column err = %v, want ErrInvalidTile", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ReadGeoParquet(ctx, bytes.NewReader(data), int64(len(data)), func(Feature) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled err = %v", err)
	}
	// ReadTile refuses files that are not siteenv tiles.
	foreign := foreignFile(t, "", "geometry")
	if _, err := ReadTile(context.Background(), bytes.NewReader(foreign), int64(len(foreign))); !errors.Is(err, ErrInvalidTile) {
		t.Fatalf("ReadTile(foreign) err = %v, want ErrInvalidTile", err)
	}
}

func BenchmarkReadGeoParquet(b *testing.B) {
	data := mustWrite(b, testSchema(b), randomPoints(10000, 1))
	b.ReportAllocs()
	for b.Loop() {
		if err := ReadGeoParquet(context.Background(), bytes.NewReader(data), int64(len(data)), func(Feature) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
