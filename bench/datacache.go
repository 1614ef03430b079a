package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/paulmach/orb"

	"siteenv/ingest/synth"
	"siteenv/store"
	"siteenv/tiles"
)

// A kept dataset (EngineOptions.KeepDir, APIOptions.KeepDir: the CLI's
// SITEENV_BENCH_DIR) is one per scale, seed, per-layer cap and dataset
// version, reused by later runs: the large scale takes tens of minutes to
// generate and ingest, the queries minutes. Without one, every run builds
// its data in its own work directory and removes it.

// datasetVersion changes whenever the synthetic data or the way it is
// ingested changes what a run would build, so that a kept dataset of an
// older build is not reused (it is left in place, under its own name).
const datasetVersion = 1

// datasetListName is the file, written last, that marks a kept dataset
// complete: its layers' ids and releases.
const datasetListName = "layers.json"

// datasetCacheDir is where a dataset of these parameters is kept under
// root.
func datasetCacheDir(root string, scale synth.Scale, seed, maxPerLayer int64) string {
	return filepath.Join(root, fmt.Sprintf("%s-seed%d-max%d-d%d-m%d", scale, seed, maxPerLayer, datasetVersion, tiles.ManifestFormatVersion))
}

// keptDataset returns the dataset kept in dir, or builds it there with g
// and keeps it. A directory without its list (a build that did not
// finish) is built again, keeping the layers that build published (the
// large scale's build takes long enough to be interrupted); the
// interrupted ingests' temporary files are removed.
func keptDataset(ctx context.Context, g layerSource, dir string, maxPerLayer int64, log *slog.Logger) (*dataset, error) {
	ds, err := readKeptDataset(ctx, dir)
	if err == nil {
		log.Info("bench: reusing kept dataset", "dir", dir, "layers", len(ds.layers), "features", ds.features, "tiles", ds.tiles)
		return ds, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	stale, err := filepath.Glob(filepath.Join(dir, "siteenv-ingest-*"))
	if err != nil {
		return nil, fmt.Errorf("bench: kept dataset: %w", err)
	}
	for _, d := range stale {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("bench: kept dataset: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: kept dataset: %w", err)
	}
	if ds, err = buildDataset(ctx, g, dir, maxPerLayer, log); err != nil {
		return nil, err
	}
	ids := make([][2]string, len(ds.layers))
	for i, l := range ds.layers {
		ids[i] = [2]string{l.id, l.release}
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, datasetListName+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return nil, fmt.Errorf("bench: kept dataset: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, datasetListName)); err != nil {
		return nil, fmt.Errorf("bench: kept dataset: %w", err)
	}
	log.Info("bench: dataset kept for later runs", "dir", dir)
	return ds, nil
}

// readKeptDataset reads the dataset kept in dir; fs.ErrNotExist when there
// is none (or it is incomplete).
func readKeptDataset(ctx context.Context, dir string) (*dataset, error) {
	b, err := os.ReadFile(filepath.Join(dir, datasetListName))
	if err != nil {
		return nil, err
	}
	var ids [][2]string
	if err := json.Unmarshal(b, &ids); err != nil {
		return nil, fmt.Errorf("bench: kept dataset %s: %w", dir, err)
	}
	st, err := store.NewFileStore(filepath.Join(dir, "store"))
	if err != nil {
		return nil, fmt.Errorf("bench: kept dataset: %w", err)
	}
	ds := &dataset{store: st}
	for _, id := range ids {
		l, err := readLayer(ctx, st, id[0], id[1])
		if err != nil {
			return nil, fmt.Errorf("bench: kept dataset %s: layer %s: %w", dir, id[0], err)
		}
		ds.layers = append(ds.layers, l)
		ds.features += l.manifest.FeatureCount
		ds.tiles += len(l.manifest.Tiles)
	}
	return ds, nil
}

// keptAnchors is sampleAnchors for a kept dataset in dir: the anchors and
// the layers' vertex counts are kept beside it, one file per seed and
// count, since drawing them decodes every feature (about a minute of CPU
// at the large scale, in every run).
func keptAnchors(ctx context.Context, dir string, ds *dataset, total int, seed int64) ([]orb.Point, error) {
	type kept struct {
		Anchors  []orb.Point      `json:"anchors"`
		Vertices map[string]int64 `json:"vertices"`
	}
	path := filepath.Join(dir, fmt.Sprintf("anchors-seed%d-n%d.json", seed, total))
	if b, err := os.ReadFile(path); err == nil {
		var k kept
		if err := json.Unmarshal(b, &k); err == nil && len(k.Anchors) > 0 && len(k.Vertices) == len(ds.layers) {
			ok := true
			for _, l := range ds.layers {
				v, found := k.Vertices[l.id]
				ok = ok && found
				l.vertices = v
			}
			if ok {
				return k.Anchors, nil
			}
		}
	}
	anchors, err := sampleAnchors(ctx, ds, total, seed)
	if err != nil {
		return nil, err
	}
	k := kept{Anchors: anchors, Vertices: map[string]int64{}}
	for _, l := range ds.layers {
		k.Vertices[l.id] = l.vertices
	}
	b, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return nil, fmt.Errorf("bench: kept anchors: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("bench: kept anchors: %w", err)
	}
	return anchors, nil
}

// servedStore is the file store `bench api`'s server runs on: a store of
// its own under dir (the run's work directory, removed with it) whose
// releases are the dataset's, through a symbolic link. The results and
// artifacts the run writes land there, not in the dataset's store, which
// a kept dataset would otherwise gather from every run.
func servedStore(dir string, ds *dataset) (*store.FileStore, error) {
	fs, ok := ds.store.(*store.FileStore)
	if !ok {
		return nil, fmt.Errorf("bench: the dataset is not in a file store")
	}
	root := filepath.Join(dir, "served")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("bench: served store: %w", err)
	}
	releases := filepath.Join(fs.Root(), "releases")
	if err := os.MkdirAll(releases, 0o755); err != nil {
		return nil, fmt.Errorf("bench: served store: %w", err)
	}
	if err := os.Symlink(releases, filepath.Join(root, "releases")); err != nil {
		return nil, fmt.Errorf("bench: served store: %w", err)
	}
	return store.NewFileStore(root)
}
