package tiles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"siteenv/store"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
)

// releaseFixture writes two tiles into a fresh file store and returns the
// store and an unpublished manifest describing them.
func releaseFixture(t testing.TB) (store.Store, *Manifest) {
	t.Helper()
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	schema := testSchema(t)
	m := &Manifest{
		FormatVersion: ManifestFormatVersion,
		LayerID:       "flood.extent:v1",
		SchemaVersion: "2024.1",
		FieldSchema:   schema,
		Units:         map[string]*string{"area_m2": ptr("m2"), "count": nil},
		Sources: []Source{{
			SourceVariantID: "nsw-flood-2024", Scope: ptr("NSW"), Provider: "NSW SES",
			SourceURL: ptr("https://example.gov.au/flood"), SourcePublishedAt: ptr("2024-03-01"),
			SourceEffectiveAt: nil, RetrievedAt: ptr("2024-03-05T01:02:03Z"),
			Licence: "CC-BY-4.0", Attribution: "© State of NSW", CoverageVerified: true,
			APIApproved: true, AgentApproved: false, ReportApproved: true,
		}},
		Coverage:   geojson.NewGeometry(orb.Polygon{{{140, -38}, {154, -38}, {154, -28}, {140, -28}, {140, -38}}}),
		CreatedBy:  "ingest-test",
		IngestedAt: time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC),
	}
	type enc struct {
		data []byte
		info TileInfo
	}
	var tiles []enc
	for _, feats := range [][]Feature{everyGeometry(), randomPoints(100, 9)} {
		var buf bytes.Buffer
		info, err := WriteTile(&buf, schema, feats, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tiles = append(tiles, enc{buf.Bytes(), info})
	}
	// The release id depends on the tile hashes, so compute it first, then
	// put the tiles under it.
	for i, tl := range tiles {
		m.Tiles = append(m.Tiles, TileEntry{SHA256: tl.info.SHA256, Key: fmt.Sprintf("%06d", i)})
	}
	id, err := ReleaseID(m)
	if err != nil {
		t.Fatal(err)
	}
	m.ReleaseID = id
	m.Tiles = nil
	var box orb.Bound
	for i, tl := range tiles {
		key := TileKey(m.LayerID, m.ReleaseID, fmt.Sprintf("%06d", i))
		if err := st.Put(context.Background(), key, bytes.NewReader(tl.data), int64(len(tl.data))); err != nil {
			t.Fatal(err)
		}
		m.Tiles = append(m.Tiles, NewTileEntry(key, tl.info))
		m.FeatureCount += int64(tl.info.Rows)
		if i == 0 {
			box = tl.info.BBox
		} else {
			box = box.Union(tl.info.BBox)
		}
	}
	bb := BoundToBBox(box)
	m.BBox = &bb
	return st, m
}

func TestManifestKeys(t *testing.T) {
	if got := ManifestKey("flood", "r_0123"); got != "releases/flood/r_0123/manifest.json" {
		t.Error(got)
	}
	if got := TileKey("flood", "r_0123", "000001"); got != "releases/flood/r_0123/tiles/000001.parquet" {
		t.Error(got)
	}
	for _, k := range []string{ManifestKey("a.b:c-d", "r_00"), TileKey("a.b:c-d", "r_00", "x")} {
		if err := store.ValidateKey(k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}

func TestPublishAndReadManifest(t *testing.T) {
	ctx := context.Background()
	st, m := releaseFixture(t)
	if err := WriteManifest(ctx, st, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(ctx, st, m.LayerID, m.ReleaseID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(m)
		t.Fatalf("read back differs:\n%s\n%s", a, b)
	}
	// Publishing the same release again is reported as store.ErrExists.
	if err := WriteManifest(ctx, st, m); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second publish err = %v, want store.ErrExists", err)
	}
	// Every tile listed is readable.
	for _, te := range got.Tiles {
		obj, err := st.Open(ctx, te.Key)
		if err != nil {
			t.Fatal(err)
		}
		tile, err := ReadTile(ctx, obj, obj.Size())
		obj.Close()
		if err != nil || int64(tile.Len()) != te.Rows {
			t.Fatalf("tile %s: %v", te.Key, err)
		}
	}
	// A release that was never published does not exist.
	if _, err := ReadManifest(ctx, st, m.LayerID, "r_00000000000000000000000000000000"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("unpublished release err = %v", err)
	}
}

func TestWriteManifestNeedsTilesFirst(t *testing.T) {
	ctx := context.Background()
	_, m := releaseFixture(t)
	empty, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(ctx, empty, m); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("publish without tiles err = %v, want store.ErrNotExist", err)
	}
	if _, err := empty.Stat(ctx, ManifestKey(m.LayerID, m.ReleaseID)); !errors.Is(err, store.ErrNotExist) {
		t.Fatal("manifest written although tiles are missing")
	}
}

func TestReleaseIDIsContentDerived(t *testing.T) {
	_, m := releaseFixture(t)
	base, err := ReleaseID(m)
	if err != nil {
		t.Fatal(err)
	}
	if base != m.ReleaseID || len(base) != 34 || !strings.HasPrefix(base, "r_") {
		t.Fatalf("ReleaseID = %q", base)
	}
	same := []struct {
		name   string
		mutate func(m *Manifest)
	}{
		{"ingested_at", func(m *Manifest) { m.IngestedAt = m.IngestedAt.Add(time.Hour) }},
		{"created_by", func(m *Manifest) { m.CreatedBy = "someone else" }},
		{"release_id", func(m *Manifest) { m.ReleaseID = "" }},
		{"tile order", func(m *Manifest) { m.Tiles[0], m.Tiles[1] = m.Tiles[1], m.Tiles[0] }},
	}
	for _, tc := range same {
		c := cloneManifest(t, m)
		tc.mutate(c)
		if id, _ := ReleaseID(c); id != base {
			t.Errorf("changing %s changed the release id", tc.name)
		}
	}
	different := []struct {
		name   string
		mutate func(m *Manifest)
	}{
		{"tile content", func(m *Manifest) { m.Tiles[0].SHA256 = strings.Repeat("0", 64) }},
		{"schema_version", func(m *Manifest) { m.SchemaVersion = "2024.2" }},
		{"field schema", func(m *Manifest) { m.FieldSchema = m.FieldSchema[1:] }},
		{"units", func(m *Manifest) { m.Units["area_m2"] = ptr("ha") }},
		{"source licence", func(m *Manifest) { m.Sources[0].Licence = "proprietary" }},
		{"source approval", func(m *Manifest) { m.Sources[0].ReportApproved = false }},
		{"coverage", func(m *Manifest) { m.Coverage = nil }},
		{"layer", func(m *Manifest) { m.LayerID = "other" }},
	}
	for _, tc := range different {
		c := cloneManifest(t, m)
		tc.mutate(c)
		if id, _ := ReleaseID(c); id == base {
			t.Errorf("changing %s did not change the release id", tc.name)
		}
	}
}

func cloneManifest(t testing.TB, m *Manifest) *Manifest {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c Manifest
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestParseManifestStrict(t *testing.T) {
	_, m := releaseFixture(t)
	good, err := MarshalManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseManifest(good); err != nil {
		t.Fatalf("good manifest rejected: %v", err)
	}
	edit := func(fn func(doc map[string]any)) []byte {
		var doc map[string]any
		if err := json.Unmarshal(good, &doc); err != nil {
			t.Fatal(err)
		}
		fn(doc)
		b, _ := json.Marshal(doc)
		return b
	}
	src := func(doc map[string]any) map[string]any { return doc["sources"].([]any)[0].(map[string]any) }
	tile := func(doc map[string]any) map[string]any { return doc["tiles"].([]any)[0].(map[string]any) }
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"not an object", []byte(`[]`)},
		{"trailing data", append(append([]byte{}, good...), []byte(`{}`)...)},
		{"unknown field", edit(func(d map[string]any) { d["extra"] = 1 })},
		{"unknown source field", edit(func(d map[string]any) { src(d)["extra"] = 1 })},
		{"unknown tile field", edit(func(d map[string]any) { tile(d)["extra"] = 1 })},
		{"missing coverage", edit(func(d map[string]any) { delete(d, "coverage") })},
		{"missing units", edit(func(d map[string]any) { delete(d, "units") })},
		{"missing source scope", edit(func(d map[string]any) { delete(src(d), "scope") })},
		{"missing tile sha", edit(func(d map[string]any) { delete(tile(d), "sha256") })},
		{"wrong format version", edit(func(d map[string]any) { d["format_version"] = 2 })},
		{"bad layer id", edit(func(d map[string]any) { d["layer_id"] = "Flood" })},
		{"bad release id", edit(func(d map[string]any) { d["release_id"] = "r_xyz" })},
		{"release id not from content", edit(func(d map[string]any) { d["release_id"] = "r_" + strings.Repeat("a", 32) })},
		{"tampered tile sha", edit(func(d map[string]any) { tile(d)["sha256"] = strings.Repeat("b", 64) })},
		{"wrong feature count", edit(func(d map[string]any) { d["feature_count"] = 1 })},
		{"wrong bbox", edit(func(d map[string]any) { d["bbox"] = []any{0, 0, 1, 1} })},
		{"tile outside release", edit(func(d map[string]any) { tile(d)["key"] = "releases/other/x.parquet" })},
		{"inverted tile bbox", edit(func(d map[string]any) { tile(d)["bbox"] = []any{2, 2, 1, 1} })},
		{"empty sources", edit(func(d map[string]any) { d["sources"] = []any{} })},
		{"empty licence", edit(func(d map[string]any) { src(d)["licence"] = "" })},
		{"relative source url", edit(func(d map[string]any) { src(d)["source_url"] = "example.com/x" })},
		{"bad published date", edit(func(d map[string]any) { src(d)["source_published_at"] = "March 2024" })},
		{"retrieved_at date only", edit(func(d map[string]any) { src(d)["retrieved_at"] = "2024-03-05" })},
		{"approval not boolean", edit(func(d map[string]any) { src(d)["api_approved"] = "yes" })},
		{"coverage a point", edit(func(d map[string]any) { d["coverage"] = map[string]any{"type": "Point", "coordinates": []any{1, 2}} })},
		{"units for unknown field", edit(func(d map[string]any) { d["units"] = map[string]any{"nope": "m"} })},
		{"bad field schema", edit(func(d map[string]any) { d["field_schema"] = map[string]any{"a": map[string]any{"type": "object"}} })},
		{"empty schema_version", edit(func(d map[string]any) { d["schema_version"] = " " })},
		{"bad ingested_at", edit(func(d map[string]any) { d["ingested_at"] = "yesterday" })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseManifest(tc.data); !errors.Is(err, ErrInvalidManifest) && !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("err = %v, want ErrInvalidManifest", err)
			}
		})
	}
}

func TestManifestWithoutFeatures(t *testing.T) {
	m := &Manifest{
		FormatVersion: ManifestFormatVersion, LayerID: "empty", SchemaVersion: "1",
		FieldSchema: FieldSchema{}, Units: map[string]*string{},
		Sources:   []Source{{SourceVariantID: "v", Provider: "p", Licence: "l", Attribution: "a"}},
		CreatedBy: "test", IngestedAt: time.Unix(0, 0).UTC(), Tiles: []TileEntry{},
	}
	id, err := ReleaseID(m)
	if err != nil {
		t.Fatal(err)
	}
	m.ReleaseID = id
	data, err := MarshalManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.BBox != nil || got.FeatureCount != 0 || got.Coverage != nil {
		t.Fatalf("got %+v", got)
	}
}

// FuzzParseManifest: the parser never panics, and whatever it accepts
// marshals and parses back to the same manifest.
func FuzzParseManifest(f *testing.F) {
	good, err := os.ReadFile(goldenManifest)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format_version":1,"layer_id":"a","release_id":"r_00000000000000000000000000000000"}`))
	f.Add([]byte(`null`))
	f.Add(bytes.Replace(good, []byte(`"rows": 6`), []byte(`"rows": -6`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidManifest) && !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		out, err := MarshalManifest(m)
		if err != nil {
			t.Fatalf("accepted manifest does not marshal: %v", err)
		}
		m2, err := ParseManifest(out)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the manifest")
		}
	})
}

var update = flag.Bool("update", false, "rewrite testdata golden files")

const goldenManifest = "testdata/manifest.golden.json"

// TestManifestGolden pins the stored manifest format (and, through the tile
// hashes in it, the tile encoding). Run with -update after an intended change.
func TestManifestGolden(t *testing.T) {
	_, m := releaseFixture(t)
	got, err := MarshalManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenManifest, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenManifest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("manifest differs from %s (run go test -run TestManifestGolden -update if intended):\n%s", goldenManifest, got)
	}
	if _, err := ParseManifest(want); err != nil {
		t.Fatalf("golden manifest does not parse: %v", err)
	}
}

func BenchmarkParseManifest(b *testing.B) {
	_, m := releaseFixture(b)
	data, err := MarshalManifest(m)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseManifest(data); err != nil {
			b.Fatal(err)
		}
	}
}
