package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
)

// Re-ingesting the same features with the last digits of their coordinates
// changed (as another source CRS gives) is no change; a feature moved 2 m
// and one with another field value are, and each says what changed.
func TestDiffWithinTolerance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feat := func(id string, lon, lat float64, name string) string {
		return fmt.Sprintf(`{"type":"Feature","id":%q,"geometry":{"type":"Point","coordinates":[%.17g,%.17g]},"properties":{"name":%q}}`+"\n", id, lon, lat, name)
	}
	a := b.write("a.ndjson", feat("same", 151, -33.9, "x")+feat("nm", 151.1, -33.9, "x")+feat("moved", 151.2, -33.9, "x")+feat("renamed", 151.3, -33.9, "x"))
	c := b.write("c.ndjson", feat("same", 151, -33.9, "x")+feat("nm", 151.1+1e-11, -33.9, "x")+feat("moved", 151.2, -33.9+2/111_000.0, "x")+feat("renamed", 151.3, -33.9, "y"))
	sa, err := Run(context.Background(), b.opts(), a)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Run(context.Background(), b.opts(), c)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var whats []string
	sum, err := DiffReleasesWith(context.Background(), b.store, b.def.LayerID, sa.ReleaseID, sc.ReleaseID, DiffOptions{Out: &out,
		OnChange: func(fc FeatureChange) error { whats = append(whats, fc.ID+": "+fc.What()); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Changed != 2 || sum.Unchanged != 2 || sum.GeometryChanged != 1 || sum.PropertiesChanged != 1 || sum.ToleranceM != 0.001 {
		t.Fatalf("summary %+v, want 2 changed (1 geometry, 1 field), 2 unchanged", sum)
	}
	if got := strings.Join(whats, " | "); got != `moved: geometry moved 2.00 m | renamed: name: "x" -> "y"` {
		t.Errorf("what changed: %s", got)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][4] != "what_changed" || rows[1][4] != "geometry moved 2.00 m" {
		t.Errorf("changes CSV %v %v", rows, err)
	}
	// Exact comparison (a negative tolerance) counts the nanometre too.
	sum, err = DiffReleasesWith(context.Background(), b.store, b.def.LayerID, sa.ReleaseID, sc.ReleaseID, DiffOptions{Tolerance: -1})
	if err != nil || sum.Changed != 3 || sum.GeometryChanged != 2 {
		t.Errorf("exact: %+v %v", sum, err)
	}
}
