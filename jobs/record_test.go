package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/engine"
	"siteenv/tiles"
)

// tileRow is one feature of a decoded tile, as the engine hands it over.
type tileRow struct {
	t *tiles.Tile
	i int
}

func (r tileRow) VisitProperties(v tiles.PropertyVisitor) bool {
	r.t.VisitProperties(r.i, v)
	return true
}
func (r tileRow) Properties() map[string]any { return r.t.Properties(r.i) }

// mapOnly has no tile behind it: the encoder takes encoding/json's path.
type mapOnly map[string]any

func (mapOnly) VisitProperties(tiles.PropertyVisitor) bool { return false }
func (m mapOnly) Properties() map[string]any               { return m }

// decodedTile writes feats as a tile through the real codec and reads it
// back, as the engine holds it.
func decodedTile(tb testing.TB, schema tiles.FieldSchema, feats []tiles.Feature) *tiles.Tile {
	tb.Helper()
	var buf bytes.Buffer
	if _, err := tiles.WriteTile(&buf, schema, feats, tiles.WriterOptions{}); err != nil {
		tb.Fatal(err)
	}
	tile, err := tiles.ReadTile(context.Background(), bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		tb.Fatal(err)
	}
	return tile
}

// encodingJSON is the record as encoding/json writes it: what the results
// pages have always held, byte for byte.
func encodingJSON(t *testing.T, layerID, id string, dist float64, g orb.Geometry, props map[string]any) []byte {
	t.Helper()
	rec := FeatureRecord{LayerID: layerID, FeatureID: id, DistanceM: dist, Properties: props}
	if g != nil {
		rec.Geometry = geojson.NewGeometry(g)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRecordEncoderMatchesEncodingJSON: records written from a real tile
// through the real codec equal encoding/json's, for every field type and
// for strings and numbers that need escaping or exponent notation.
func TestRecordEncoderMatchesEncodingJSON(t *testing.T) {
	schema, err := tiles.ParseFieldSchema(map[string]json.RawMessage{
		"name":       json.RawMessage(`{"type": ["string", "null"]}`),
		"Zeta":       json.RawMessage(`{"type": "integer"}`),
		"area_ha":    json.RawMessage(`{"type": ["number", "null"]}`),
		"active":     json.RawMessage(`{"type": "boolean"}`),
		"listed":     json.RawMessage(`{"type": ["string", "null"], "format": "date"}`),
		"updated_at": json.RawMessage(`{"type": "string", "format": "date-time"}`),
		"_code":      json.RawMessage(`{"type": "string"}`),
		"a-b":        json.RawMessage(`{"type": "string"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	names := []any{"Plain name", `quote " and \ backslash`, "tab\tnewline\ncontrol\x01\x1f", "<html> & 'apos'",
		"unicode: Ngunnawal Country, café, 東京", "separators \u2028 and \u2029", "", nil}
	floats := []any{0.0, -0.0, 1.5, 0.1, 1e-7, 1.234e-7, 123456789012.25, 1e21, 1.5e300, -2.5e-9, 1e20, nil}
	var feats []tiles.Feature
	for i := range 48 {
		props := map[string]any{
			"name":       names[i%len(names)],
			"Zeta":       int64(i*1_000_003) - 9_000_000_000,
			"area_ha":    floats[i%len(floats)],
			"active":     i%3 == 0,
			"listed":     []any{"2024-02-29", nil, "1970-01-01"}[i%3],
			"updated_at": []string{"2025-06-30T23:59:59.123456Z", "2001-01-01T00:00:00Z"}[i%2],
			"_code":      "C-" + string(rune('A'+i%26)),
			"a-b":        "x",
		}
		if props["name"] == nil {
			delete(props, "name")
		}
		if props["listed"] == nil {
			delete(props, "listed")
		}
		if props["area_ha"] == nil {
			delete(props, "area_ha")
		}
		feats = append(feats, tiles.Feature{ID: "F-" + string(rune('a'+i%26)) + `"id` + string(rune('0'+i%10)),
			Geometry: orb.Point{151.2 + float64(i)/1000, -33.8}, Properties: props})
	}
	tile := decodedTile(t, schema, feats)
	dists := []float64{0, 12.345678901, 1e-7, 9999.999999, 3.0000000000000004, 1e21}
	var enc recordEncoder
	for i := range tile.Len() {
		for _, g := range []orb.Geometry{nil, orb.Point{151.2, -33.8}, orb.Polygon{{{151, -33}, {151.1, -33}, {151.1, -33.1}, {151, -33}}}} {
			enc.buf = enc.buf[:0]
			id, d := tile.IDs[i], dists[i%len(dists)]
			if err := enc.append("layer.one", id, d, g, tileRow{tile, i}); err != nil {
				t.Fatal(err)
			}
			want := encodingJSON(t, "layer.one", id, d, g, tile.Properties(i))
			if !bytes.Equal(enc.buf, want) {
				t.Fatalf("row %d:\n got %s\nwant %s", i, enc.buf, want)
			}
		}
	}

	// Without a tile: encoding/json's own path, same bytes.
	m := mapOnly{"k": []any{1, "two"}, "a": map[string]any{"z": 1, "b": nil}}
	enc.buf = enc.buf[:0]
	if err := enc.append("l", "id", 1.25, nil, m); err != nil {
		t.Fatal(err)
	}
	if want := encodingJSON(t, "l", "id", 1.25, nil, m); !bytes.Equal(enc.buf, want) {
		t.Fatalf("map path:\n got %s\nwant %s", enc.buf, want)
	}
}

// TestRecordEncoderRefusesNonFinite: a NaN distance or property fails the
// record, as encoding/json fails it, instead of writing invalid JSON.
func TestRecordEncoderRefusesNonFinite(t *testing.T) {
	var enc recordEncoder
	if err := enc.append("l", "id", math.NaN(), nil, mapOnly{}); err == nil {
		t.Fatal("NaN distance encoded")
	}
	if _, err := appendJSONFloat(nil, math.Inf(1)); err == nil {
		t.Fatal("+Inf encoded")
	}
	enc.buf = enc.buf[:0]
	enc.Float("x", math.NaN())
	if enc.err == nil {
		t.Fatal("NaN property accepted")
	}
}

// TestWriteRecordsInOrder: records encoded on several goroutines are
// written in the chunks' order, the same bytes as one encoder writes.
func TestWriteRecordsInOrder(t *testing.T) {
	var chunks []recordChunk
	for l, n := range []int{5000, 1, 0, 4097, 2048} {
		feats := make([]engine.Feature, n)
		for i := range feats {
			feats[i] = engine.Feature{ID: fmt.Sprintf("f%d-%d", l, i), DistanceM: float64(i) / 3}
		}
		chunks = appendChunks(chunks, fmt.Sprintf("layer.%d", l), feats)
	}
	var serial, parallel bytes.Buffer
	n1, err := writeRecords(&serial, chunks, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := writeRecords(&parallel, chunks, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n1 != int64(serial.Len()) || n2 != n1 || !bytes.Equal(serial.Bytes(), parallel.Bytes()) {
		t.Fatalf("parallel output differs: %d and %d bytes", n1, n2)
	}
	lines := bytes.Split(bytes.TrimSuffix(serial.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != 5000+1+4097+2048 {
		t.Fatalf("%d records", len(lines))
	}
	if want := `{"layer_id":"layer.0","feature_id":"f0-0",`; !bytes.HasPrefix(lines[0], []byte(want)) {
		t.Fatalf("first record %s", lines[0])
	}
	if want := `{"layer_id":"layer.4","feature_id":"f4-2047",`; !bytes.HasPrefix(lines[len(lines)-1], []byte(want)) {
		t.Fatalf("last record %s", lines[len(lines)-1])
	}
	// A failing writer stops at once.
	if _, err := writeRecords(failWriter{}, chunks, false, 2); err == nil {
		t.Fatal("write error not reported")
	}
}

// TestWriteRecordsStopsAtEncodingFailure: a record that cannot be encoded
// (a NaN distance) ends the result with the encoding error, not a write
// error, after exactly the chunks before it; the encoders stop, and the
// next result written (with the pooled buffers) is whole.
func TestWriteRecordsStopsAtEncodingFailure(t *testing.T) {
	layer := func(n int, bad int) []engine.Feature {
		feats := make([]engine.Feature, n)
		for i := range feats {
			feats[i] = engine.Feature{ID: fmt.Sprintf("f%d", i), DistanceM: float64(i)}
		}
		if bad >= 0 {
			feats[bad].DistanceM = math.NaN()
		}
		return feats
	}
	var good []recordChunk
	good = appendChunks(good, "a", layer(3*chunkRecords, -1))
	var before bytes.Buffer
	if _, err := writeRecords(&before, good, false, 1); err != nil {
		t.Fatal(err)
	}
	chunks := appendChunks(nil, "a", layer(3*chunkRecords, -1))
	chunks = appendChunks(chunks, "b", layer(2*chunkRecords, chunkRecords+5))
	chunks = appendChunks(chunks, "c", layer(6*chunkRecords, -1))
	for _, workers := range []int{1, 2, 4} {
		var out bytes.Buffer
		n, err := writeRecords(&out, chunks, false, workers)
		var we *writeError
		if err == nil || errors.As(err, &we) {
			t.Fatalf("%d workers: err %v, want the encoding error", workers, err)
		}
		// a's three chunks and b's first were written; nothing after.
		var want bytes.Buffer
		if _, err := writeRecords(&want, chunks[:4], false, 1); err != nil {
			t.Fatal(err)
		}
		if n != int64(out.Len()) || !bytes.Equal(out.Bytes(), want.Bytes()) {
			t.Fatalf("%d workers: wrote %d bytes, want the %d before the failing chunk", workers, out.Len(), want.Len())
		}
		var again bytes.Buffer
		if _, err := writeRecords(&again, good, false, workers); err != nil || !bytes.Equal(again.Bytes(), before.Bytes()) {
			t.Fatalf("%d workers: the next result differs (err %v)", workers, err)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// BenchmarkRecordEncoder encodes 2,048 records of a tile shaped like the
// synthetic flood layer's (eight properties: strings, numbers, a date) as
// a large result's write does; ns/op is per record.
func BenchmarkRecordEncoder(b *testing.B) {
	schema, err := tiles.ParseFieldSchema(map[string]json.RawMessage{
		"flood_event":          json.RawMessage(`{"type": "string"}`),
		"planning_level_m_ahd": json.RawMessage(`{"type": ["number", "null"]}`),
		"freeboard_m":          json.RawMessage(`{"type": "number"}`),
		"hazard_category":      json.RawMessage(`{"type": "string"}`),
		"study_name":           json.RawMessage(`{"type": "string"}`),
		"lga":                  json.RawMessage(`{"type": "string"}`),
		"adopted_date":         json.RawMessage(`{"type": "string", "format": "date"}`),
		"area_ha":              json.RawMessage(`{"type": "number"}`),
	})
	if err != nil {
		b.Fatal(err)
	}
	const rows = 2048
	feats := make([]tiles.Feature, rows)
	for i := range feats {
		props := map[string]any{
			"flood_event": []string{"1% AEP", "0.5% AEP", "PMF"}[i%3], "freeboard_m": 0.5,
			"hazard_category": "H" + string(rune('1'+i%6)), "study_name": fmt.Sprintf("Study of creek %d floodplain", i%40),
			"lga": "City of Parramatta", "adopted_date": "2019-05-14", "area_ha": float64(i) * 1.37,
		}
		if i%4 != 0 {
			props["planning_level_m_ahd"] = 3.2 + float64(i%17)/10
		}
		feats[i] = tiles.Feature{ID: fmt.Sprintf("SYDFPA-%08d", i), Geometry: orb.Point{151.2 + float64(i)/1e4, -33.8}, Properties: props}
	}
	tile := decodedTile(b, schema, feats)
	var enc recordEncoder
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		i := n % rows
		if i == 0 {
			enc.buf = enc.buf[:0]
		}
		if err := enc.append("nsw-flood-planning-area", tile.IDs[i], 1234.5678901234, nil, tileRow{tile, i}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecordEncoderAcrossSchemas: one encoder alternating between tiles of
// different schemas (the sorted keys it keeps from the last record must
// not leak into the next) writes encoding/json's bytes every time.
func TestRecordEncoderAcrossSchemas(t *testing.T) {
	tile := func(fields map[string]json.RawMessage, props map[string]any) *tiles.Tile {
		t.Helper()
		schema, err := tiles.ParseFieldSchema(fields)
		if err != nil {
			t.Fatal(err)
		}
		feats := []tiles.Feature{{ID: "a", Geometry: orb.Point{151, -33}, Properties: props}, {ID: "b", Geometry: orb.Point{151, -33}, Properties: props}}
		return decodedTile(t, schema, feats)
	}
	str := json.RawMessage(`{"type": "string"}`)
	one := tile(map[string]json.RawMessage{"b": str, "a": str, "c": str}, map[string]any{"a": "1", "b": "2", "c": "3"})
	two := tile(map[string]json.RawMessage{"a": str, "z": str}, map[string]any{"a": "x", "z": "y"})
	three := tile(map[string]json.RawMessage{"c": str, "b": str, "a": str}, map[string]any{"a": "p", "b": "q", "c": "r"})
	four := tile(map[string]json.RawMessage{"x": str, "a": str, "m": str}, map[string]any{"a": "s", "m": "t", "x": "u"})
	var enc recordEncoder
	for k, tl := range []*tiles.Tile{one, two, one, three, four, three, two, four} {
		for i := range tl.Len() {
			enc.buf = enc.buf[:0]
			if err := enc.append("l", tl.IDs[i], float64(k), nil, tileRow{tl, i}); err != nil {
				t.Fatal(err)
			}
			if want := encodingJSON(t, "l", tl.IDs[i], float64(k), nil, tl.Properties(i)); !bytes.Equal(enc.buf, want) {
				t.Fatalf("tile %d row %d:\n got %s\nwant %s", k, i, enc.buf, want)
			}
		}
	}
}
