package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/store"
	"siteenv/tiles"
)

// testSchema is the field schema of the test layers.
func testSchema(t testing.TB) tiles.FieldSchema {
	t.Helper()
	s, err := tiles.ParseFieldSchema(map[string]any{
		"kind": map[string]any{"type": "string"},
		"n":    map[string]any{"type": "integer"},
		"note": map[string]any{"type": []any{"string", "null"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newStore(t testing.TB) *store.FileStore {
	t.Helper()
	s, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func strp(s string) *string { return &s }

// encodedTile is a tile written in memory.
type encodedTile struct {
	data []byte
	info tiles.TileInfo
}

func encodeTiles(t testing.TB, schema tiles.FieldSchema, groups [][]tiles.Feature) []encodedTile {
	t.Helper()
	out := make([]encodedTile, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, feats := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var buf bytes.Buffer
			info, err := tiles.WriteTile(&buf, schema, feats, tiles.WriterOptions{})
			out[i], errs[i] = encodedTile{buf.Bytes(), info}, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// publish writes groups as the tiles of a new release of layerID (one
// tile per group) and returns its manifest.
func publish(t testing.TB, st store.Store, layerID string, groups [][]tiles.Feature, cover orb.Geometry) *tiles.Manifest {
	t.Helper()
	schema := testSchema(t)
	return publishEncoded(t, st, layerID, schema, encodeTiles(t, schema, groups), cover)
}

func publishEncoded(t testing.TB, st store.Store, layerID string, schema tiles.FieldSchema, enc []encodedTile, cover orb.Geometry) *tiles.Manifest {
	t.Helper()
	ctx := context.Background()
	units := map[string]*string{}
	for _, f := range schema {
		units[f.Name] = nil
	}
	m := &tiles.Manifest{
		FormatVersion: tiles.ManifestFormatVersion,
		LayerID:       layerID,
		SchemaVersion: "1",
		FieldSchema:   schema,
		Units:         units,
		Sources: []tiles.Source{{
			SourceVariantID: "test", Provider: "test", Licence: "CC-BY-4.0", Attribution: "test",
			RetrievedAt: strp("2025-01-01T00:00:00Z"),
		}},
		CreatedBy:  "engine-test",
		IngestedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	if cover != nil {
		m.Coverage = geojson.NewGeometry(cover)
	}
	for i, tl := range enc {
		m.Tiles = append(m.Tiles, tiles.TileEntry{SHA256: tl.info.SHA256, Key: fmt.Sprintf("%06d", i)})
	}
	id, err := tiles.ReleaseID(m)
	if err != nil {
		t.Fatal(err)
	}
	m.ReleaseID = id
	m.Tiles = nil
	var box orb.Bound
	for i, tl := range enc {
		key := tiles.TileKey(layerID, id, fmt.Sprintf("%06d", i))
		if err := st.Put(ctx, key, bytes.NewReader(tl.data), int64(len(tl.data))); err != nil {
			t.Fatal(err)
		}
		m.Tiles = append(m.Tiles, tiles.NewTileEntry(key, tl.info))
		m.FeatureCount += int64(tl.info.Rows)
		if i == 0 {
			box = tl.info.BBox
		} else {
			box = box.Union(tl.info.BBox)
		}
	}
	if len(enc) > 0 {
		bb := tiles.BoundToBBox(box)
		m.BBox = &bb
	}
	if err := tiles.WriteManifest(ctx, st, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func feat(id string, g orb.Geometry) tiles.Feature {
	return tiles.Feature{ID: id, Geometry: g, Properties: map[string]any{"kind": "k", "n": int64(len(id))}}
}

// ids returns the sorted feature ids of a layer result.
func ids(r LayerResult) []string {
	out := make([]string, len(r.Features))
	for i, f := range r.Features {
		out[i] = f.ID
	}
	slices.Sort(out)
	return out
}

func query(t testing.TB, e *Engine, site orb.Geometry, r float64, layers ...LayerRequest) []LayerResult {
	t.Helper()
	res, err := e.Query(context.Background(), Request{Site: site, RadiusM: r, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func layerReq(m *tiles.Manifest) LayerRequest {
	return LayerRequest{LayerID: m.LayerID, ReleaseID: m.ReleaseID}
}

// newEngine is New for tests: an error fails tb.
func newEngine(tb testing.TB, st store.Store, opt Options) *Engine {
	tb.Helper()
	e, err := New(st, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}
