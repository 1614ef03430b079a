package ingest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"siteenv/ingest"
	"siteenv/store"
)

// TestOptionsValidate: Run refuses bad options with an error naming the
// field (not a panic), and writes nothing.
func TestOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	st, err := store.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	layer := &ingest.LayerDef{LayerID: "x"}
	for _, tc := range []struct {
		opt  ingest.Options
		want string
	}{
		{ingest.Options{Store: st}, "Layer"},
		{ingest.Options{Layer: layer}, "Store"},
		{ingest.Options{Layer: layer, Store: st, MaxRejects: -1}, "MaxRejects"},
		{ingest.Options{Layer: layer, Store: st, MaxVertices: -1}, "MaxVertices"},
		{ingest.Options{Layer: layer, Store: st, MemoryBudget: -1}, "MemoryBudget"},
		{ingest.Options{Layer: layer, Store: st, TileRows: -1}, "TileRows"},
	} {
		if _, err := ingest.Run(context.Background(), tc.opt, "missing.geojson"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want one naming %s", err, tc.want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("refused options wrote to the store: %v %v", entries, err)
	}
}

// TestOptionsWithDefaults: every zero field takes its documented default and
// a set field is kept.
func TestOptionsWithDefaults(t *testing.T) {
	d := ingest.Options{CreatedBy: "  "}.WithDefaults()
	if d.MaxVertices != ingest.DefaultMaxVertices || d.MemoryBudget != ingest.DefaultMemoryBudget || d.TileRows != ingest.DefaultTileRows ||
		d.TempDir != os.TempDir() || d.Clock == nil || d.CreatedBy != ingest.DefaultCreatedBy || d.SourceCRS != "" {
		t.Fatalf("defaults: %+v", d)
	}
	set := ingest.Options{MaxVertices: 10, TileRows: 3, CreatedBy: "me"}.WithDefaults()
	if set.MaxVertices != 10 || set.TileRows != 3 || set.CreatedBy != "me" || set.MemoryBudget != ingest.DefaultMemoryBudget {
		t.Fatalf("set fields not kept: %+v", set)
	}
}
