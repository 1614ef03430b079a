package bench

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"siteenv/ingest/synth"
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
	// Without its list the directory is an unfinished build: built anew.
	if err := os.Remove(filepath.Join(dir, datasetListName)); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := keptDataset(ctx, g, dir, 50, log)
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt.features != first.features || rebuilt.layers[0].release == first.layers[0].release && rebuilt.ingestSeconds == 0 {
		t.Fatalf("rebuilt %d features (release %s, %.3f s)", rebuilt.features, rebuilt.layers[0].release, rebuilt.ingestSeconds)
	}
}
