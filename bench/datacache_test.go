package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"siteenv/ingest/synth"
	"siteenv/store"
	"siteenv/tiles"
)

// TestKeptDataset: a dataset is built once under its key and reused after,
// layer for layer; one whose build did not finish is built again.
func TestKeptDataset(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := synth.New(DefaultSeed, synth.Small)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := datasetCacheDir(root, synth.Small, DefaultSeed, 50)
	if other := datasetCacheDir(root, synth.Small, DefaultSeed+1, 50); other == dir {
		t.Fatal("the seed is not part of the key")
	}
	first, err := keptDataset(ctx, g, dir, 50, log)
	if err != nil {
		t.Fatal(err)
	}
	again, err := keptDataset(ctx, g, dir, 50, log)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.layers) != len(first.layers) || again.features != first.features || again.tiles != first.tiles || first.features == 0 {
		t.Fatalf("reused %d layers, %d features, %d tiles; built %d, %d, %d",
			len(again.layers), again.features, again.tiles, len(first.layers), first.features, first.tiles)
	}
	for i, l := range again.layers {
		if l.id != first.layers[i].id || l.release != first.layers[i].release || l.kind != first.layers[i].kind {
			t.Fatalf("layer %d: reused %s/%s, built %s/%s", i, l.id, l.release, first.layers[i].id, first.layers[i].release)
		}
	}
	// Without its list the directory is an unfinished build: built again,
	// keeping the layers it published (not ingested again), ingesting
	// the one it did not, and removing its ingests' temporary files.
	if err := os.Remove(filepath.Join(dir, datasetListName)); err != nil {
		t.Fatal(err)
	}
	lost := first.layers[1]
	if err := os.RemoveAll(filepath.Join(dir, "store", "releases", lost.id)); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "siteenv-ingest-123")
	if err := os.MkdirAll(filepath.Join(stale, "tiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	rebuilt, err := keptDataset(ctx, g, dir, 50, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logged.String(), "bench: reusing ingested layer"); n != len(first.layers)-1 {
		t.Fatalf("%d layers reused, want %d:\n%s", n, len(first.layers)-1, logged.String())
	}
	if rebuilt.features != first.features || rebuilt.tiles != first.tiles || len(rebuilt.layers) != len(first.layers) {
		t.Fatalf("rebuilt %d features, %d tiles, %d layers", rebuilt.features, rebuilt.tiles, len(rebuilt.layers))
	}
	for i, l := range rebuilt.layers {
		if l.id != first.layers[i].id || l.release != first.layers[i].release {
			t.Fatalf("layer %d: rebuilt %s/%s, built %s/%s", i, l.id, l.release, first.layers[i].id, first.layers[i].release)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "store", filepath.FromSlash(tiles.ManifestKey(lost.id, lost.release)))); err != nil {
		t.Fatalf("the layer missing from the store was not ingested: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the interrupted ingest's temporary files are still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, datasetListName)); err != nil {
		t.Fatal(err)
	}

	// The anchors are drawn once, then read back with the layers' vertices.
	want, err := sampleAnchors(ctx, rebuilt, 300, DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	vertices := map[string]int64{}
	for _, l := range rebuilt.layers {
		vertices[l.id] = l.vertices
	}
	for range 2 {
		ds, err := readKeptDataset(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := keptAnchors(ctx, dir, ds, 300, DefaultSeed)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("kept anchors differ from the drawn ones (%d, %d)", len(got), len(want))
		}
		for _, l := range ds.layers {
			if l.vertices != vertices[l.id] || l.vertices == 0 {
				t.Fatalf("layer %s: %d vertices, drawn %d", l.id, l.vertices, vertices[l.id])
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("anchors-seed%d-n%d.json", DefaultSeed, 300))); err != nil {
		t.Fatal(err)
	}
}

// TestServedStore: bench api's server reads the dataset's releases and
// writes its results beside them, not into the dataset's store.
func TestServedStore(t *testing.T) {
	ctx := context.Background()
	kept, err := store.NewFileStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	release := "releases/l/r_1/tiles/000001.parquet"
	if err := kept.Put(ctx, release, strings.NewReader("tile"), 4); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	served, err := servedStore(work, &dataset{store: kept})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := served.Open(ctx, release)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Size() != 4 {
		t.Fatalf("release object of %d bytes", obj.Size())
	}
	obj.Close()
	if err := served.Put(ctx, "results/q1/part-1", strings.NewReader("result"), 6); err != nil {
		t.Fatal(err)
	}
	if _, err := served.Stat(ctx, "results/q1/part-1"); err != nil {
		t.Fatal(err)
	}
	infos, err := kept.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != release {
		t.Fatalf("the dataset's store holds %v", infos)
	}
	if err := served.Delete(ctx, "results/q1/part-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Stat(ctx, release); err != nil {
		t.Fatal(err)
	}
}
