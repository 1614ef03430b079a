package tiles

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"siteenv/store"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/paulmach/orb"
)

// testSchema has one field of every type and format, nullable and not.
func testSchema(t testing.TB) FieldSchema {
	t.Helper()
	fs, err := ParseFieldSchema(map[string]any{
		"name":    map[string]any{"type": "string", "description": "display name"},
		"code":    map[string]any{"type": []any{"string", "null"}},
		"count":   map[string]any{"type": []any{"integer", "null"}},
		"area_m2": map[string]any{"type": "number", "minimum": 0},
		"active":  map[string]any{"type": []any{"boolean", "null"}},
		"listed":  map[string]any{"type": []any{"string", "null"}, "format": "date"},
		"updated": map[string]any{"type": []any{"string", "null"}, "format": "date-time"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func ptr[T any](v T) *T { return &v }

// everyGeometry has one feature of each geometry type, with every property
// type, nulls included.
func everyGeometry() []Feature {
	return []Feature{
		{ID: "point", Geometry: orb.Point{151.2093, -33.8688}, Properties: map[string]any{
			"name": "Sydney", "code": "SYD", "count": int64(5), "area_m2": 12.5, "active": true,
			"listed": "2021-03-04", "updated": "2024-05-06T07:08:09.123456Z"}},
		{ID: "multipoint", Geometry: orb.MultiPoint{{144.9631, -37.8136}, {145.0, -37.9}}, Properties: map[string]any{
			"name": "Melbourne pair", "code": nil, "count": nil, "area_m2": 0.0, "active": nil,
			"listed": nil, "updated": nil}},
		{ID: "linestring", Geometry: orb.LineString{{153.0251, -27.4698}, {153.1, -27.5}, {153.2, -27.45}}, Properties: map[string]any{
			"name": "Brisbane line", "area_m2": 1e-9, "count": int64(-9007199254740993)}},
		{ID: "multilinestring", Geometry: orb.MultiLineString{{{115.86, -31.95}, {115.9, -32.0}}, {{116, -32}, {116.1, -32.1}}}, Properties: map[string]any{
			"name": "Perth lines", "area_m2": 3.0, "active": false, "count": int64(math.MaxInt64), "listed": "1900-01-01"}},
		{ID: "polygon-with-hole", Geometry: orb.Polygon{
			{{138.5, -35.0}, {138.7, -35.0}, {138.7, -34.8}, {138.5, -34.8}, {138.5, -35.0}},
			{{138.55, -34.95}, {138.55, -34.85}, {138.65, -34.85}, {138.65, -34.95}, {138.55, -34.95}},
		}, Properties: map[string]any{"name": "Adelaide block", "area_m2": 4.0e8, "updated": "1969-12-31T23:59:59.999999Z"}},
		{ID: "multipolygon", Geometry: orb.MultiPolygon{
			{{{147.3, -42.9}, {147.4, -42.9}, {147.4, -42.8}, {147.3, -42.9}}},
			{{{147.5, -42.7}, {147.6, -42.7}, {147.6, -42.6}, {147.5, -42.7}}},
		}, Properties: map[string]any{"name": "Hobart parts", "area_m2": 2.5, "code": "", "count": int64(0)}},
	}
}

// randomPoints makes n point features spread over mainland Australia.
func randomPoints(n int, seed uint64) []Feature {
	r := rand.New(rand.NewPCG(seed, 1))
	feats := make([]Feature, n)
	for i := range feats {
		feats[i] = Feature{
			ID:       fmt.Sprintf("pt-%06d", i),
			Geometry: orb.Point{113 + r.Float64()*40, -39 + r.Float64()*29},
			Properties: map[string]any{
				"name":    fmt.Sprintf("point %d", i),
				"area_m2": r.Float64() * 1000,
				"count":   int64(r.IntN(1000)),
			},
		}
	}
	return feats
}

func writeTile(t testing.TB, schema FieldSchema, feats []Feature, opt WriterOptions) ([]byte, TileInfo) {
	t.Helper()
	var buf bytes.Buffer
	info, err := WriteTile(&buf, schema, feats, opt)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), info
}

func mustRead(t testing.TB, data []byte) *Tile {
	t.Helper()
	tile, err := ReadTile(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return tile
}

func TestTileRoundTrip(t *testing.T) {
	schema := testSchema(t)
	tests := []struct {
		name  string
		feats []Feature
		types []string
	}{
		{"every geometry type", everyGeometry(), []string{"LineString", "MultiLineString", "MultiPoint", "MultiPolygon", "Point", "Polygon"}},
		{"many points", randomPoints(5000, 7), []string{"Point"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, info := writeTile(t, schema, tc.feats, WriterOptions{RowGroupRows: 1000})
			if info.Rows != len(tc.feats) || info.Bytes != int64(len(data)) {
				t.Fatalf("info = %+v for %d features, %d bytes", info, len(tc.feats), len(data))
			}
			sum := sha256.Sum256(data)
			if info.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatal("TileInfo.SHA256 is not the SHA-256 of the written bytes")
			}
			if !reflect.DeepEqual(info.GeometryTypes, tc.types) {
				t.Fatalf("GeometryTypes = %v, want %v", info.GeometryTypes, tc.types)
			}
			tile := mustRead(t, data)
			if tile.Len() != len(tc.feats) {
				t.Fatalf("read %d features, wrote %d", tile.Len(), len(tc.feats))
			}
			if !reflect.DeepEqual(tile.Schema, schema) {
				t.Fatalf("schema not recovered:\n got %+v\nwant %+v", tile.Schema, schema)
			}
			byID := map[string]int{}
			for i, id := range tile.IDs {
				byID[id] = i
			}
			want := orb.Bound{}
			for k, f := range tc.feats {
				i, ok := byID[f.ID]
				if !ok {
					t.Fatalf("feature %q missing", f.ID)
				}
				g, err := tile.Geometry(i)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(g, f.Geometry) {
					t.Errorf("%s: geometry %v, want %v", f.ID, g, f.Geometry)
				}
				if tile.Bounds[i] != f.Geometry.Bound() {
					t.Errorf("%s: bound %v, want %v", f.ID, tile.Bounds[i], f.Geometry.Bound())
				}
				wantProps, err := schema.Normalize(f.Properties)
				if err != nil {
					t.Fatal(err)
				}
				if got := tile.Properties(i); !reflect.DeepEqual(got, wantProps) {
					t.Errorf("%s: properties\n got %#v\nwant %#v", f.ID, got, wantProps)
				}
				if k == 0 {
					want = f.Geometry.Bound()
				} else {
					want = want.Union(f.Geometry.Bound())
				}
			}
			if info.BBox != want {
				t.Errorf("BBox = %v, want %v", info.BBox, want)
			}
			if tile.Bytes() <= 0 {
				t.Error("Bytes() is not positive")
			}
		})
	}
}

func TestTilePropertyValuesExact(t *testing.T) {
	schema := testSchema(t)
	tile := mustRead(t, mustWrite(t, schema, everyGeometry()))
	idx := map[string]int{}
	for i, id := range tile.IDs {
		idx[id] = i
	}
	tests := []struct {
		id, field string
		want      any
	}{
		{"point", "name", "Sydney"},
		{"point", "count", int64(5)},
		{"point", "area_m2", 12.5},
		{"point", "active", true},
		{"point", "listed", "2021-03-04"},
		{"point", "updated", "2024-05-06T07:08:09.123456Z"},
		{"multipoint", "code", nil},
		{"multipoint", "active", nil},
		{"linestring", "count", int64(-9007199254740993)},
		{"linestring", "area_m2", 1e-9},
		{"multilinestring", "count", int64(math.MaxInt64)},
		{"multilinestring", "active", false},
		{"multilinestring", "listed", "1900-01-01"},
		{"polygon-with-hole", "updated", "1969-12-31T23:59:59.999999Z"},
		{"polygon-with-hole", "code", nil},
		{"multipolygon", "code", ""},
		{"multipolygon", "count", int64(0)},
	}
	for _, tc := range tests {
		got, ok := tile.Property(idx[tc.id], tc.field)
		if !ok || got != tc.want {
			t.Errorf("%s.%s = %#v (%v), want %#v", tc.id, tc.field, got, ok, tc.want)
		}
	}
	if _, ok := tile.Property(0, "nope"); ok {
		t.Error("Property found an unknown field")
	}
}

func mustWrite(t testing.TB, schema FieldSchema, feats []Feature) []byte {
	data, _ := writeTile(t, schema, feats, WriterOptions{})
	return data
}

func TestTileDeterministic(t *testing.T) {
	schema := testSchema(t)
	feats := randomPoints(3000, 3)
	a, ia := writeTile(t, schema, feats, WriterOptions{})
	// Same features in another order give the same bytes.
	rev := append([]Feature(nil), feats...)
	sort.Slice(rev, func(i, j int) bool { return rev[i].ID > rev[j].ID })
	b, ib := writeTile(t, schema, rev, WriterOptions{})
	if !bytes.Equal(a, b) || ia.SHA256 != ib.SHA256 {
		t.Fatal("equal input produced different tiles")
	}
}

func TestTileHilbertOrder(t *testing.T) {
	data, info := writeTile(t, testSchema(t), randomPoints(4000, 11), WriterOptions{})
	tile := mustRead(t, data)
	var prev uint64
	for i, b := range tile.Bounds {
		h := hilbertIndex(info.BBox, b.Center())
		if i > 0 && h < prev {
			t.Fatalf("row %d has Hilbert index %d after %d", i, h, prev)
		}
		prev = h
	}
	// Hilbert order keeps neighbours together: consecutive rows are on
	// average far closer than random pairs.
	var step float64
	for i := 1; i < tile.Len(); i++ {
		step += dist(tile.Bounds[i].Center(), tile.Bounds[i-1].Center())
	}
	step /= float64(tile.Len() - 1)
	if step > 1.0 {
		t.Fatalf("mean step between consecutive rows is %.3f degrees; rows are not spatially sorted", step)
	}
}

func dist(a, b orb.Point) float64 { return math.Hypot(a[0]-b[0], a[1]-b[1]) }

func TestHilbertCurveIsContinuous(t *testing.T) {
	const n = 32
	cells := make([][2]uint32, n*n)
	seen := make([]bool, n*n)
	for x := uint32(0); x < n; x++ {
		for y := uint32(0); y < n; y++ {
			d := hilbertXY(n, x, y)
			if d >= n*n || seen[d] {
				t.Fatalf("d=%d for (%d,%d) is out of range or repeated", d, x, y)
			}
			seen[d] = true
			cells[d] = [2]uint32{x, y}
		}
	}
	for d := 1; d < len(cells); d++ {
		a, b := cells[d-1], cells[d]
		if absDiff(a[0], b[0])+absDiff(a[1], b[1]) != 1 {
			t.Fatalf("cells %v and %v at d=%d,%d are not adjacent", a, b, d-1, d)
		}
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// countingReaderAt counts bytes read.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func TestReadTileBBoxPrunesRowGroups(t *testing.T) {
	schema := testSchema(t)
	feats := randomPoints(20000, 5)
	data, _ := writeTile(t, schema, feats, WriterOptions{RowGroupRows: 1024})
	full := mustRead(t, data)
	if full.RowGroupsTotal < 10 {
		t.Fatalf("only %d row groups", full.RowGroupsTotal)
	}
	sydney := orb.Bound{Min: orb.Point{150.5, -34.2}, Max: orb.Point{151.5, -33.5}}

	cr := &countingReaderAt{r: bytes.NewReader(data)}
	part, err := ReadTileBBox(context.Background(), cr, int64(len(data)), sydney)
	if err != nil {
		t.Fatal(err)
	}
	if part.RowGroupsRead == 0 || part.RowGroupsRead*3 > part.RowGroupsTotal {
		t.Fatalf("read %d of %d row groups for a small box", part.RowGroupsRead, part.RowGroupsTotal)
	}
	if part.Len() >= full.Len()/3 {
		t.Fatalf("pruned read returned %d of %d rows", part.Len(), full.Len())
	}
	fullCR := &countingReaderAt{r: bytes.NewReader(data)}
	if _, err := ReadTile(context.Background(), fullCR, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if cr.n.Load()*2 > fullCR.n.Load() {
		t.Fatalf("pruned read fetched %d bytes, full read %d", cr.n.Load(), fullCR.n.Load())
	}
	// Nothing inside the box is lost.
	got := map[string]bool{}
	for _, id := range part.IDs {
		got[id] = true
	}
	inside := 0
	for i, b := range full.Bounds {
		if b.Intersects(sydney) {
			inside++
			if !got[full.IDs[i]] {
				t.Fatalf("feature %s inside the box was pruned", full.IDs[i])
			}
		}
	}
	if inside == 0 {
		t.Fatal("test box holds no features")
	}
	// A box far away reads nothing.
	none, err := ReadTileBBox(context.Background(), bytes.NewReader(data), int64(len(data)), orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if none.Len() != 0 || none.RowGroupsRead != 0 {
		t.Fatalf("far box read %d rows in %d row groups", none.Len(), none.RowGroupsRead)
	}
}

func TestWriteTileRejects(t *testing.T) {
	schema := testSchema(t)
	ok := func(id string, g orb.Geometry) Feature {
		return Feature{ID: id, Geometry: g, Properties: map[string]any{"name": "x", "area_m2": 1.0}}
	}
	tests := []struct {
		name    string
		feats   []Feature
		opt     WriterOptions
		wantErr error
		field   string // for property errors
	}{
		{"no features", nil, WriterOptions{}, ErrInvalidFeature, ""},
		{"empty id", []Feature{ok("", orb.Point{1, 2})}, WriterOptions{}, ErrInvalidFeature, ""},
		{"duplicate id", []Feature{ok("a", orb.Point{1, 2}), ok("a", orb.Point{2, 3})}, WriterOptions{}, ErrInvalidFeature, ""},
		{"nil geometry", []Feature{ok("a", nil)}, WriterOptions{}, ErrInvalidFeature, ""},
		{"empty polygon", []Feature{ok("a", orb.Polygon{})}, WriterOptions{}, ErrInvalidFeature, ""},
		{"empty collection", []Feature{ok("a", orb.MultiPoint{})}, WriterOptions{}, ErrInvalidFeature, ""},
		{"NaN coordinate", []Feature{ok("a", orb.Point{math.NaN(), 1})}, WriterOptions{}, ErrInvalidFeature, ""},
		{"infinite coordinate", []Feature{ok("a", orb.LineString{{1, 1}, {math.Inf(1), 1}})}, WriterOptions{}, ErrInvalidFeature, ""},
		{"missing required", []Feature{{ID: "a", Geometry: orb.Point{1, 2}, Properties: map[string]any{"area_m2": 1.0}}}, WriterOptions{}, ErrInvalidProperties, "name"},
		{"unknown property", []Feature{{ID: "a", Geometry: orb.Point{1, 2}, Properties: map[string]any{"name": "x", "area_m2": 1.0, "colour": "red"}}}, WriterOptions{}, ErrInvalidProperties, "colour"},
		{"wrong type", []Feature{{ID: "a", Geometry: orb.Point{1, 2}, Properties: map[string]any{"name": 7, "area_m2": 1.0}}}, WriterOptions{}, ErrInvalidProperties, "name"},
		{"below minimum", []Feature{{ID: "a", Geometry: orb.Point{1, 2}, Properties: map[string]any{"name": "x", "area_m2": -1.0}}}, WriterOptions{}, ErrInvalidProperties, "area_m2"},
		{"bad row group size", []Feature{ok("a", orb.Point{1, 2})}, WriterOptions{RowGroupRows: -1}, nil, ""},
		{"bad compression", []Feature{ok("a", orb.Point{1, 2})}, WriterOptions{Compression: "lzma"}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := WriteTile(io.Discard, schema, tc.feats, tc.opt)
			if err == nil {
				t.Fatal("WriteTile succeeded")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			var pe *PropertyError
			if tc.field != "" && (!errors.As(err, &pe) || pe.Field != tc.field) {
				t.Fatalf("err = %v, want a PropertyError for %q", err, tc.field)
			}
		})
	}
}

func TestWriteTileConvertsRingAndBound(t *testing.T) {
	ring := orb.Ring{{1, 1}, {2, 1}, {2, 2}, {1, 1}}
	bound := orb.Bound{Min: orb.Point{3, 3}, Max: orb.Point{4, 4}}
	data := mustWrite(t, nil, []Feature{{ID: "r", Geometry: ring}, {ID: "b", Geometry: bound}})
	tile := mustRead(t, data)
	for i := range tile.IDs {
		g, err := tile.Geometry(i)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := g.(orb.Polygon); !ok {
			t.Errorf("%s decoded as %T, want Polygon", tile.IDs[i], g)
		}
	}
}

func TestCompressionOptions(t *testing.T) {
	feats := randomPoints(500, 2)
	for _, c := range []Compression{CompressionZstd, CompressionSnappy, CompressionUncompressed} {
		t.Run(string(c), func(t *testing.T) {
			for _, gc := range []Compression{"", CompressionZstd, CompressionSnappy} {
				data, _ := writeTile(t, testSchema(t), feats, WriterOptions{Compression: c, GeometryCompression: gc})
				if tile := mustRead(t, data); tile.Len() != len(feats) {
					t.Fatalf("read %d rows", tile.Len())
				}
				// Each column carries the codec asked for; the geometry's
				// default is none.
				want := map[string]Compression{colGeometry: cmp.Or(gc, CompressionUncompressed), colFeatureID: c}
				pf, err := openParquet(bytes.NewReader(data), int64(len(data)))
				if err != nil {
					t.Fatal(err)
				}
				rg := pf.MetaData().RowGroup(0)
				checked := 0
				for i := range rg.NumColumns() {
					cc, err := rg.ColumnChunk(i)
					if err != nil {
						t.Fatal(err)
					}
					name := cc.PathInSchema().String()
					if w, ok := want[name]; ok {
						checked++
						if cc.Compression() != w.codec() {
							t.Errorf("column %s: %v, want %v", name, cc.Compression(), w)
						}
					}
				}
				if checked != len(want) {
					t.Errorf("found %d of the columns %v", checked, want)
				}
				pf.Close()
			}
		})
	}
}

func TestReadTileErrors(t *testing.T) {
	data := mustWrite(t, testSchema(t), everyGeometry())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadTile(ctx, bytes.NewReader(data), int64(len(data))); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ReadTile err = %v", err)
	}
	junk := []byte("this is not a parquet file at all, just some bytes")
	if _, err := ReadTile(context.Background(), bytes.NewReader(junk), int64(len(junk))); !errors.Is(err, ErrInvalidTile) {
		t.Errorf("junk err = %v, want ErrInvalidTile", err)
	}
	trunc := data[:len(data)/2]
	if _, err := ReadTile(context.Background(), bytes.NewReader(trunc), int64(len(trunc))); !errors.Is(err, ErrInvalidTile) {
		t.Errorf("truncated err = %v, want ErrInvalidTile", err)
	}
}

func TestReadTileFromStoreObject(t *testing.T) {
	s, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data, _ := writeTile(t, testSchema(t), everyGeometry(), WriterOptions{})
	if err := s.Put(ctx, "t.parquet", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	octx, cancel := context.WithCancel(ctx)
	obj, err := s.Open(octx, "t.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if tile, err := ReadTile(ctx, obj, obj.Size()); err != nil || tile.Len() != 6 {
		t.Fatalf("ReadTile from store: %v", err)
	}
	cancel() // the Open context bounds reads
	if _, err := ReadTile(ctx, obj, obj.Size()); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after Open context cancelled: %v", err)
	}
}

func BenchmarkWriteTile(b *testing.B) {
	schema := testSchema(b)
	feats := randomPoints(10000, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := WriteTile(io.Discard, schema, feats, WriterOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadTile(b *testing.B) {
	data := mustWrite(b, testSchema(b), randomPoints(10000, 1))
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadTile(context.Background(), bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadTileBBox(b *testing.B) {
	data := mustWrite(b, testSchema(b), randomPoints(10000, 1))
	box := orb.Bound{Min: orb.Point{150.5, -34.2}, Max: orb.Point{151.5, -33.5}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadTileBBox(context.Background(), bytes.NewReader(data), int64(len(data)), box); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTileProperties(b *testing.B) {
	tile := mustRead(b, mustWrite(b, testSchema(b), randomPoints(1000, 1)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = tile.Properties(i % tile.Len())
	}
}

func BenchmarkHilbertIndex(b *testing.B) {
	ext := orb.Bound{Min: orb.Point{113, -44}, Max: orb.Point{154, -10}}
	p := orb.Point{151.2, -33.9}
	b.ReportAllocs()
	for b.Loop() {
		_ = hilbertIndex(ext, p)
	}
}

// manyVertices is a closed ring of n vertices around (lon, lat).
func manyVertices(lon, lat float64, n int) orb.Ring {
	r := make(orb.Ring, n+1)
	for i := range n {
		a := 2 * math.Pi * float64(i) / float64(n)
		r[i] = orb.Point{lon + 0.01*math.Cos(a), lat + 0.01*math.Sin(a)}
	}
	r[n] = r[0]
	return r
}

// TestReadTileMatchesArrowReader checks ReadTile, which decodes column
// chunks concurrently into Go slices, against the Arrow-based reader it
// replaced, on tiles with several row groups, multi-page chunks, nulls and
// dictionary-encoded strings.
func TestReadTileMatchesArrowReader(t *testing.T) {
	schema := testSchema(t)
	repeated := func(n int) []Feature {
		feats := randomPoints(n, 9)
		long := strings.Repeat("a long repeated string ", 20)
		for i := range feats {
			p := feats[i].Properties
			p["name"] = long // dictionary-encoded: values outgrow the chunk's size
			if i%3 == 0 {
				p["code"] = fmt.Sprintf("c%d", i%7)
			}
			if i%5 == 0 {
				p["active"] = i%2 == 0
				p["listed"] = "2020-02-29"
				p["updated"] = "2001-02-03T04:05:06.000007Z"
			}
		}
		return feats
	}
	bigPolygons := func(n int) []Feature {
		feats := make([]Feature, n)
		for i := range feats {
			feats[i] = Feature{
				ID:         fmt.Sprintf("poly-%03d", i),
				Geometry:   orb.Polygon{manyVertices(150+float64(i)*0.1, -30, 5000)},
				Properties: map[string]any{"name": fmt.Sprintf("p%d", i), "area_m2": float64(i)},
			}
		}
		return feats
	}
	tests := []struct {
		name   string
		schema FieldSchema
		feats  []Feature
		opt    WriterOptions
	}{
		{"every geometry, one row group", schema, everyGeometry(), WriterOptions{}},
		{"every geometry, row groups of 2", schema, everyGeometry(), WriterOptions{RowGroupRows: 2}},
		{"points, row groups of 1000", schema, randomPoints(5000, 3), WriterOptions{RowGroupRows: 1000}},
		{"points, uneven row groups", schema, randomPoints(4321, 4), WriterOptions{RowGroupRows: 1000}},
		{"nulls and repeated strings", schema, repeated(3000), WriterOptions{RowGroupRows: 700}},
		{"multi-page polygons", schema, bigPolygons(40), WriterOptions{RowGroupRows: 16}},
		{"snappy", schema, repeated(1500), WriterOptions{Compression: CompressionSnappy, RowGroupRows: 500}},
		{"uncompressed", schema, randomPoints(1500, 5), WriterOptions{Compression: CompressionUncompressed, RowGroupRows: 500}},
		{"no properties", nil, []Feature{{ID: "a", Geometry: orb.Point{1, 2}}, {ID: "b", Geometry: orb.LineString{{1, 2}, {3, 4}}}}, WriterOptions{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := writeTile(t, tc.schema, tc.feats, tc.opt)
			want, err := readTileArrow(context.Background(), bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			// Several reads: chunks finish in a different order each time.
			for range 3 {
				got := mustRead(t, data)
				if got.Len() != len(want.IDs) || len(got.WKB) != len(want.IDs) || len(got.Bounds) != len(want.IDs) {
					t.Fatalf("read %d/%d/%d rows, want %d", got.Len(), len(got.WKB), len(got.Bounds), len(want.IDs))
				}
				for i := range want.IDs {
					if got.IDs[i] != want.IDs[i] {
						t.Fatalf("row %d: id %q, want %q", i, got.IDs[i], want.IDs[i])
					}
					if !bytes.Equal(got.WKB[i], want.WKB[i]) || cap(got.WKB[i]) != len(got.WKB[i]) {
						t.Fatalf("row %d (%s): WKB differs (len %d cap %d, want len %d)", i, want.IDs[i], len(got.WKB[i]), cap(got.WKB[i]), len(want.WKB[i]))
					}
					if got.Bounds[i] != want.Bounds[i] {
						t.Fatalf("row %d: bound %v, want %v", i, got.Bounds[i], want.Bounds[i])
					}
					if p := got.Properties(i); !reflect.DeepEqual(p, want.Props[i]) {
						t.Fatalf("row %d: properties\n got %#v\nwant %#v", i, p, want.Props[i])
					}
				}
			}
		})
	}
}

// TestReadTileBBoxRowsMatch checks that a pruned read returns exactly the
// rows of the row groups it reads.
func TestReadTileBBoxRowsMatch(t *testing.T) {
	data, _ := writeTile(t, testSchema(t), randomPoints(8000, 6), WriterOptions{RowGroupRows: 500})
	full := mustRead(t, data)
	byID := map[string]int{}
	for i, id := range full.IDs {
		byID[id] = i
	}
	box := orb.Bound{Min: orb.Point{140, -35}, Max: orb.Point{150, -30}}
	part, err := ReadTileBBox(context.Background(), bytes.NewReader(data), int64(len(data)), box)
	if err != nil {
		t.Fatal(err)
	}
	if part.RowGroupsRead == 0 || part.RowGroupsRead == part.RowGroupsTotal {
		t.Fatalf("read %d of %d row groups", part.RowGroupsRead, part.RowGroupsTotal)
	}
	for i, id := range part.IDs {
		j, ok := byID[id]
		if !ok {
			t.Fatalf("unknown id %q", id)
		}
		if !bytes.Equal(part.WKB[i], full.WKB[j]) || part.Bounds[i] != full.Bounds[j] ||
			!reflect.DeepEqual(part.Properties(i), full.Properties(j)) {
			t.Fatalf("row %q differs from the full read", id)
		}
	}
}

// TestReadTilePropertiesDoNotAlias checks that property strings are copies:
// they must not pin or expose the tile's buffers.
func TestReadTilePropertiesDoNotAlias(t *testing.T) {
	tile := mustRead(t, mustWrite(t, testSchema(t), everyGeometry()))
	a, _ := tile.Property(0, "name")
	b, _ := tile.Property(0, "name")
	sa, sb := a.(string), b.(string)
	if sa != sb || len(sa) == 0 {
		t.Fatalf("name = %q, %q", sa, sb)
	}
	if unsafe.StringData(sa) == unsafe.StringData(sb) {
		t.Fatal("Property returned the tile's own bytes")
	}
}

func TestReadTileSkipBounds(t *testing.T) {
	data, _ := writeTile(t, testSchema(t), randomPoints(3000, 8), WriterOptions{RowGroupRows: 1000})
	full := mustRead(t, data)
	got, err := ReadTileWith(context.Background(), bytes.NewReader(data), int64(len(data)), ReadTileOptions{SkipBounds: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Bounds != nil {
		t.Fatalf("Bounds has %d entries, want nil", len(got.Bounds))
	}
	if got.Len() != full.Len() || got.Bytes() != full.Bytes()-int64(full.Len())*32 {
		t.Fatalf("%d rows, %d bytes; full read %d rows, %d bytes", got.Len(), got.Bytes(), full.Len(), full.Bytes())
	}
	for i := range full.IDs {
		if got.IDs[i] != full.IDs[i] || !bytes.Equal(got.WKB[i], full.WKB[i]) || !reflect.DeepEqual(got.Properties(i), full.Properties(i)) {
			t.Fatalf("row %d differs from the full read", i)
		}
	}
}

// TestReadTileConcurrent reads several tiles at once, many times: the
// buffers recycled between reads must never be shared by two.
func TestReadTileConcurrent(t *testing.T) {
	schema := testSchema(t)
	var datas [][]byte
	var wants []*refTile
	for k, feats := range [][]Feature{randomPoints(3000, 21), everyGeometry(), randomPoints(700, 22)} {
		data, _ := writeTile(t, schema, feats, WriterOptions{RowGroupRows: 250 * (k + 1)})
		want, err := readTileArrow(context.Background(), bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		datas, wants = append(datas, data), append(wants, want)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for r := range 5 {
				k := (g + r) % len(datas)
				got, err := ReadTile(context.Background(), bytes.NewReader(datas[k]), int64(len(datas[k])))
				if err == nil && got.Len() != len(wants[k].IDs) {
					err = fmt.Errorf("tile %d: %d rows, want %d", k, got.Len(), len(wants[k].IDs))
				}
				if err == nil {
					for i := range wants[k].IDs {
						if got.IDs[i] != wants[k].IDs[i] || !bytes.Equal(got.WKB[i], wants[k].WKB[i]) ||
							!reflect.DeepEqual(got.Properties(i), wants[k].Props[i]) {
							err = fmt.Errorf("tile %d row %d differs", k, i)
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// mapVisitor rebuilds the map Properties gives from VisitProperties.
type mapVisitor map[string]any

func (m mapVisitor) Null(name string)             { m[name] = nil }
func (m mapVisitor) String(name string, v []byte) { m[name] = string(v) }
func (m mapVisitor) Int(name string, v int64)     { m[name] = v }
func (m mapVisitor) Float(name string, v float64) { m[name] = v }
func (m mapVisitor) Bool(name string, v bool)     { m[name] = v }

func TestVisitProperties(t *testing.T) {
	tile := mustRead(t, mustWrite(t, testSchema(t), append(everyGeometry(), randomPoints(200, 3)...)))
	for i := 0; i < tile.Len(); i++ {
		m := mapVisitor{}
		tile.VisitProperties(i, m)
		if want := tile.Properties(i); !reflect.DeepEqual(map[string]any(m), want) {
			t.Fatalf("row %d: visited %v, Properties %v", i, m, want)
		}
	}
}
