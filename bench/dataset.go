package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"

	"siteenv/ingest"
	"siteenv/store"
	"siteenv/tiles"
)

// layer is one ingested layer release, as both sides of the comparison see it.
type layer struct {
	id, release string
	coverage    orb.Geometry // nil: unknown
	manifest    *tiles.Manifest
	// points: every feature is a Point (the per-point-feature memory figure).
	points bool
	kind   geomKind
	// vertices of all its features (counted by sampleAnchors).
	vertices int64
}

// geomKind groups layers for the memory figures: an operator sizes a
// replica by points, and by the vertices of lines and polygons.
type geomKind int

const (
	kindPoints geomKind = iota // Point and MultiPoint
	kindLines
	kindPolygons
	nKinds
)

func (k geomKind) String() string {
	return [...]string{"point", "line", "polygon"}[k]
}

// dataset is a synthetic scale ingested into a file store.
type dataset struct {
	store         store.Store
	layers        []*layer // ordered by layer id
	features      int64
	tiles         int
	ingestSeconds float64
}

// errEnough stops a synthetic stream once a layer has its share.
var errEnough = errors.New("bench: enough features")

// buildDataset ingests every layer of g into a file store under dir, each as
// one release (no publisher: the bench needs tiles, not a catalogue). It
// keeps the first maxPerLayer features of each layer when maxPerLayer > 0.
func buildDataset(ctx context.Context, g layerSource, dir string, maxPerLayer int64, log *slog.Logger) (*dataset, error) {
	root := filepath.Join(dir, "store")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("bench: store dir: %w", err)
	}
	st, err := store.NewFileStore(root)
	if err != nil {
		return nil, fmt.Errorf("bench: file store: %w", err)
	}
	defs := g.Layers()
	ds := &dataset{store: st, layers: make([]*layer, len(defs))}
	start := time.Now()

	// Two ingests at a time, as `siteenv demo` does: each already uses
	// several goroutines, and more only adds memory.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		work = make(chan int)
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				l, err := ingestedLayer(ctx, st, defs[i].LayerID)
				if err == nil && l == nil {
					l, err = ingestLayer(ctx, g, st, defs[i], maxPerLayer, dir)
				} else if l != nil {
					log.Info("bench: reusing ingested layer", "layer", l.id, "release", l.release)
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("bench: ingest %s: %w", defs[i].LayerID, err))
				} else {
					ds.layers[i] = l
				}
				mu.Unlock()
			}
		}()
	}
	for i := range defs {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ds.ingestSeconds = time.Since(start).Seconds()
	for _, l := range ds.layers {
		ds.features += l.manifest.FeatureCount
		ds.tiles += len(l.manifest.Tiles)
	}
	slices.SortFunc(ds.layers, func(a, b *layer) int { return strings.Compare(a.id, b.id) })
	log.Info("bench: dataset ingested", "layers", len(ds.layers), "features", ds.features, "tiles", ds.tiles,
		"seconds", round3(ds.ingestSeconds))
	return ds, nil
}

// ingestedLayer returns the release of layerID already published in st
// (by a build that did not finish: a release's manifest is written after
// its tiles, and its id derives from its content, so a published release
// is the one this build would make), or nil when there is none.
func ingestedLayer(ctx context.Context, st store.Store, layerID string) (*layer, error) {
	infos, err := st.List(ctx, "releases/"+layerID+"/")
	if err != nil {
		return nil, fmt.Errorf("bench: list %s: %w", layerID, err)
	}
	for _, in := range infos {
		rest, ok := strings.CutPrefix(in.Key, "releases/"+layerID+"/")
		if !ok {
			continue
		}
		release, file, ok := strings.Cut(rest, "/")
		if !ok || file != "manifest.json" {
			continue
		}
		return readLayer(ctx, st, layerID, release)
	}
	return nil, nil
}

func ingestLayer(ctx context.Context, g layerSource, st store.Store, def *ingest.LayerDef, maxPerLayer int64, tmp string) (*layer, error) {
	sum, err := ingest.RunRows(ctx, ingest.Options{Layer: def, Store: st, TempDir: tmp, CreatedBy: "siteenv bench"},
		func(yield func(ingest.Row) error) error {
			var n int64
			err := g.Features(def.LayerID, func(f tiles.Feature) error {
				if maxPerLayer > 0 && n >= maxPerLayer {
					return errEnough
				}
				n++
				return yield(ingest.Row{File: "synth", Row: n, Feature: f})
			})
			if errors.Is(err, errEnough) {
				return nil
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	return readLayer(ctx, st, sum.LayerID, sum.ReleaseID)
}

// readLayer reads a published release's manifest.
func readLayer(ctx context.Context, st store.Store, layerID, releaseID string) (*layer, error) {
	m, err := tiles.ReadManifest(ctx, st, layerID, releaseID)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	l := &layer{id: m.LayerID, release: m.ReleaseID, manifest: m, points: true}
	if m.Coverage != nil {
		l.coverage = m.Coverage.Geometry()
	}
	for _, te := range m.Tiles {
		for _, t := range te.GeometryTypes {
			if t != "Point" {
				l.points = false
			}
			switch t {
			case "LineString", "MultiLineString":
				l.kind = max(l.kind, kindLines)
			case "Polygon", "MultiPolygon":
				l.kind = kindPolygons
			}
		}
	}
	return l, nil
}

// eachTile decodes the ids and geometries of the tiles of l (no
// properties: its callers need none) in manifest order (a fixed order, so
// anything sampled from them is reproducible).
func (ds *dataset) eachTile(ctx context.Context, l *layer, fn func(*tiles.Tile) error) error {
	for _, te := range l.manifest.Tiles {
		obj, err := ds.store.Open(ctx, te.Key)
		if err != nil {
			return fmt.Errorf("bench: open %s: %w", te.Key, err)
		}
		t, err := tiles.ReadTileWith(ctx, obj, obj.Size(), tiles.ReadTileOptions{SkipBounds: true, SkipProperties: true})
		obj.Close()
		if err != nil {
			return fmt.Errorf("bench: read %s: %w", te.Key, err)
		}
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}
