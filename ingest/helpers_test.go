package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"siteenv/store"
	"siteenv/tiles"
)

// testLayerJSON is a layer with one field of every property type.
const testLayerJSON = `{
  "layer_id": "test-layer",
  "section_key": "environment",
  "name": "Test layer",
  "description": null,
  "schema_version": "1",
  "field_schema": {
    "name":    {"type": "string"},
    "count":   {"type": ["integer", "null"]},
    "area":    {"type": ["number", "null"]},
    "active":  {"type": ["boolean", "null"]},
    "opened":  {"type": ["string", "null"], "format": "date"},
    "updated": {"type": ["string", "null"], "format": "date-time"}
  },
  "units": {"area": "m2", "count": null},
  "radius_max_m": 1000,
  "sources": [{
    "source_variant_id": "test-v1", "scope": null, "provider": "Test Provider",
    "source_url": "https://example.org/data", "source_published_at": "2024-05-01",
    "source_effective_at": null, "retrieved_at": "2024-06-01T00:00:00Z",
    "licence": "CC-BY-4.0", "attribution": "© Test Provider",
    "coverage_verified": false, "api_approved": true, "agent_approved": true, "report_approved": true
  }],
  "jurisdictions": ["NSW"],
  "coverage": null
}`

// fakePublisher records Publish calls. The ledger behind the real one
// belongs to another package; this one checks what ingest hands over.
type fakePublisher struct {
	mu    sync.Mutex
	calls []*tiles.Manifest
	defs  []*LayerDef // the layer as handed over with each call
	err   error
}

func (p *fakePublisher) Publish(ctx context.Context, def *LayerDef, m *tiles.Manifest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if def == nil || def.LayerID != m.LayerID {
		return errors.New("fakePublisher: layer mismatch")
	}
	p.calls = append(p.calls, m)
	p.defs = append(p.defs, def)
	return p.err
}

func (p *fakePublisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

type bundle struct {
	t     *testing.T
	dir   string // inputs
	store *store.FileStore
	pub   *fakePublisher
	def   *LayerDef
}

func setup(t *testing.T) *bundle {
	t.Helper()
	def, err := ParseLayerDef([]byte(testLayerJSON))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	st, err := store.NewFileStore(filepath.Join(root, "store"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(root, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	return &bundle{t: t, dir: in, store: st, pub: &fakePublisher{}, def: def}
}

var testClock = func() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC) }

func (b *bundle) opts() Options {
	return Options{
		Layer:     b.def,
		Store:     b.store,
		Publisher: b.pub,
		TempDir:   b.t.TempDir(),
		Clock:     testClock,
	}
}

func (b *bundle) write(name, content string) string {
	b.t.Helper()
	p := filepath.Join(b.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		b.t.Fatal(err)
	}
	return p
}

// storeKeys lists the store.
func storeKeys(t *testing.T, s store.Store) []store.Info {
	t.Helper()
	infos, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// assertNothingPublished checks the store is empty and Publish was not
// called.
func (b *bundle) assertNothingPublished() {
	b.t.Helper()
	if keys := storeKeys(b.t, b.store); len(keys) != 0 {
		b.t.Errorf("store holds %d objects, want none (first %s)", len(keys), keys[0].Key)
	}
	if n := b.pub.count(); n != 0 {
		b.t.Errorf("Publish called %d times, want 0", n)
	}
}

// releaseFeatures reads every feature of a release back from its tiles.
func releaseFeatures(t *testing.T, s store.Store, layerID, releaseID string) (map[string]tiles.Feature, *tiles.Manifest) {
	t.Helper()
	ctx := context.Background()
	m, err := tiles.ReadManifest(ctx, s, layerID, releaseID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tiles.Feature{}
	for _, te := range m.Tiles {
		obj, err := s.Open(ctx, te.Key)
		if err != nil {
			t.Fatal(err)
		}
		tile, err := tiles.ReadTile(ctx, obj, obj.Size())
		obj.Close()
		if err != nil {
			t.Fatalf("%s: %v", te.Key, err)
		}
		if int64(tile.Len()) != te.Rows {
			t.Errorf("%s: %d rows, manifest says %d", te.Key, tile.Len(), te.Rows)
		}
		for i := 0; i < tile.Len(); i++ {
			g, err := tile.Geometry(i)
			if err != nil {
				t.Fatal(err)
			}
			id := tile.IDs[i]
			if _, dup := out[id]; dup {
				t.Errorf("feature %q appears twice in the release", id)
			}
			out[id] = tiles.Feature{ID: id, Geometry: g, Properties: tile.Properties(i)}
		}
	}
	if int64(len(out)) != m.FeatureCount {
		t.Errorf("read %d features, manifest says %d", len(out), m.FeatureCount)
	}
	return out, m
}

// readRejects parses a rejects file.
func readRejects(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// failingStore fails every Put after the first n, like a crash mid-upload.
type failingStore struct {
	store.Store
	mu sync.Mutex
	n  int
}

var errCrash = errors.New("simulated crash")

func (s *failingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	s.mu.Lock()
	if s.n <= 0 {
		s.mu.Unlock()
		return errCrash
	}
	s.n--
	s.mu.Unlock()
	// Not cancelled by the failure of a concurrent Put: these n made it.
	return s.Store.Put(context.WithoutCancel(ctx), key, r, size)
}

func ring(pts ...[2]float64) orb.Ring {
	r := make(orb.Ring, len(pts))
	for i, p := range pts {
		r[i] = orb.Point(p)
	}
	return r
}
