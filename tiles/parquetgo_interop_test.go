package tiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
)

// TestTileReadByParquetGo reads a tile written by WriteTile with a second,
// independent Parquet implementation (parquet-go, which shares no code with
// arrow-go), so interoperability is proven rather than assumed: the "geo"
// file metadata passes the GeoParquet 1.1.0 schema and points at columns
// that exist with the right types, and every row reads back equal to what
// was written.
func TestTileReadByParquetGo(t *testing.T) {
	schema := testSchema(t)
	feats := append(everyGeometry(), randomPoints(37, 7)...)
	// Small row groups, so the reader crosses row-group boundaries.
	data, info := writeTile(t, schema, feats, WriterOptions{RowGroupRows: 8, Compression: CompressionSnappy})

	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet-go cannot open the tile: %v", err)
	}
	if f.NumRows() != int64(len(feats)) || len(f.RowGroups()) != (len(feats)+7)/8 {
		t.Fatalf("parquet-go sees %d rows in %d row groups, want %d in %d", f.NumRows(), len(f.RowGroups()), len(feats), (len(feats)+7)/8)
	}

	// The geo metadata, against the official schema and the spec's rules
	// the schema cannot express.
	geo, ok := f.Lookup(GeoMetadataKey)
	if !ok {
		t.Fatal("no geo key in the file's key/value metadata")
	}
	if err := validateGeoJSON(t, geoParquetValidator(t), []byte(geo)); err != nil {
		t.Fatalf("geo metadata fails the GeoParquet 1.1.0 schema: %v\n%s", err, geo)
	}
	var meta struct {
		Version       string `json:"version"`
		PrimaryColumn string `json:"primary_column"`
		Columns       map[string]struct {
			Encoding      string          `json:"encoding"`
			GeometryTypes []string        `json:"geometry_types"`
			BBox          []float64       `json:"bbox"`
			CRS           json.RawMessage `json:"crs"`
			RawCovering   struct {
				BBox map[string][]string `json:"bbox"`
			} `json:"covering"`
		} `json:"columns"`
	}
	if err := json.Unmarshal([]byte(geo), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Version != "1.1.0" {
		t.Errorf("version %q", meta.Version)
	}
	col, ok := meta.Columns[meta.PrimaryColumn]
	if !ok {
		t.Fatalf("primary_column %q is not among columns %v", meta.PrimaryColumn, meta.Columns)
	}
	if col.Encoding != "WKB" {
		t.Errorf("encoding %q", col.Encoding)
	}
	if got, want := strings.Join(col.GeometryTypes, ","), "LineString,MultiLineString,MultiPoint,MultiPolygon,Point,Polygon"; got != want {
		t.Errorf("geometry_types %s, want %s", got, want)
	}
	var bound orb.Bound
	for i, ft := range feats {
		if i == 0 {
			bound = ft.Geometry.Bound()
		}
		bound = bound.Union(ft.Geometry.Bound())
	}
	if want := []float64{bound.Min[0], bound.Min[1], bound.Max[0], bound.Max[1]}; !slices.Equal(col.BBox, want) {
		t.Errorf("bbox %v, want %v", col.BBox, want)
	}
	if info.BBox != bound {
		t.Errorf("TileInfo.BBox %v, want %v", info.BBox, bound)
	}
	// crs: absent or null means OGC:CRS84; otherwise PROJJSON naming it.
	if len(col.CRS) != 0 && string(col.CRS) != "null" {
		var crs struct {
			Type string `json:"type"`
			ID   struct {
				Authority string `json:"authority"`
				Code      any    `json:"code"`
			} `json:"id"`
		}
		if err := json.Unmarshal(col.CRS, &crs); err != nil || crs.Type != "GeographicCRS" || crs.ID.Authority != "OGC" || crs.ID.Code != "CRS84" {
			t.Errorf("crs is neither absent nor the PROJJSON of OGC:CRS84: %s", col.CRS)
		}
	}

	// Columns as parquet-go reads them: the geometry is BYTE_ARRAY, and
	// the covering names the DOUBLE fields of the bbox struct column.
	leaf := func(path ...string) parquet.LeafColumn {
		t.Helper()
		lc, ok := f.Schema().Lookup(path...)
		if !ok {
			t.Fatalf("no column %s in %v", strings.Join(path, "."), f.Schema().Columns())
		}
		return lc
	}
	if k := leaf(meta.PrimaryColumn).Node.Type().Kind(); k != parquet.ByteArray {
		t.Errorf("geometry column is %v, want BYTE_ARRAY", k)
	}
	for _, c := range []string{"xmin", "ymin", "xmax", "ymax"} {
		path := col.RawCovering.BBox[c]
		if len(path) != 2 || path[1] != c {
			t.Fatalf("covering.bbox.%s = %v", c, path)
		}
		if k := leaf(path...).Node.Type().Kind(); k != parquet.Double {
			t.Errorf("covering column %v is %v, want DOUBLE", path, k)
		}
	}
	for name, want := range map[string]string{
		"feature_id": "STRING", "name": "STRING", "code": "STRING",
		"listed":  "DATE",
		"updated": "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)",
	} {
		var got string
		if lt := leaf(name).Node.Type().LogicalType(); lt != nil {
			got = lt.String()
		}
		if got != want {
			t.Errorf("%s: logical type %q, want %s", name, got, want)
		}
	}

	// Every row, decoded by parquet-go, equals what was written.
	columns := f.Schema().Columns()
	want := map[string]Feature{}
	for _, ft := range feats {
		want[ft.ID] = ft
	}
	seen := 0
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 5)
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				got := map[string]parquet.Value{}
				for _, v := range row {
					got[strings.Join(columns[v.Column()], ".")] = v
				}
				id := string(got["feature_id"].ByteArray())
				ft, ok := want[id]
				if !ok {
					t.Errorf("row with unknown feature_id %q", id)
					continue
				}
				delete(want, id)
				seen++
				checkRow(t, schema, ft, got)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if seen != len(feats) || len(want) != 0 {
		t.Errorf("read %d rows; features never read: %d", seen, len(want))
	}
}

// checkRow compares one row read by parquet-go with the feature written.
func checkRow(t *testing.T, schema FieldSchema, ft Feature, got map[string]parquet.Value) {
	t.Helper()
	g, err := wkb.Unmarshal(got["geometry"].ByteArray())
	if err != nil {
		t.Errorf("%s: geometry is not WKB: %v", ft.ID, err)
	} else if !orb.Equal(g, ft.Geometry) {
		t.Errorf("%s: geometry %v, want %v", ft.ID, g, ft.Geometry)
	}
	b := ft.Geometry.Bound()
	for c, w := range map[string]float64{"xmin": b.Min[0], "ymin": b.Min[1], "xmax": b.Max[0], "ymax": b.Max[1]} {
		if v := got["bbox."+c]; v.IsNull() || v.Double() != w {
			t.Errorf("%s: bbox.%s = %v, want %v", ft.ID, c, v, w)
		}
	}
	for _, fd := range schema {
		v, ok := got[fd.Name]
		if !ok {
			t.Errorf("%s: no value for column %s", ft.ID, fd.Name)
			continue
		}
		wantV := ft.Properties[fd.Name]
		var gotV any
		if !v.IsNull() {
			switch {
			case fd.Type == TypeInteger:
				gotV = v.Int64()
			case fd.Type == TypeNumber:
				gotV = v.Double()
			case fd.Type == TypeBoolean:
				gotV = v.Boolean()
			case fd.Format == FormatDate:
				gotV = time.Unix(int64(v.Int32())*86400, 0).UTC().Format(time.DateOnly)
			case fd.Format == FormatDateTime:
				gotV = time.UnixMicro(v.Int64()).UTC().Format(time.RFC3339Nano)
			default:
				gotV = string(v.ByteArray())
			}
		}
		if fmt.Sprint(gotV) != fmt.Sprint(wantV) || (gotV == nil) != (wantV == nil) {
			t.Errorf("%s.%s = %#v, want %#v", ft.ID, fd.Name, gotV, wantV)
		}
	}
}
