package bench

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"siteenv/ingest/synth"
)

// traversableTempDir is a temporary directory the postgres user can reach
// when the tests run as root (t.TempDir and its parent are 0700).
func traversableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestEngineAgreesWithPostGIS runs the whole comparison on a small slice of
// the synthetic data: every layer's first thousand features and 100
// queries of the mix. It proves the engine returns exactly the features
// PostGIS's ST_DWithin(..., true) returns, except those within 1 cm of the
// radius. It needs PostGIS: it fails (never skips) without it.
func TestEngineAgreesWithPostGIS(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	r, err := RunEngine(ctx, EngineOptions{
		WorkDir: traversableTempDir(t), Scale: synth.Small, Seed: 7, Queries: 100, Workers: 2,
		MaxFeaturesPerLayer: 1000, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if errors.Is(err, ErrNoPostGIS) {
		t.Fatalf("%v (the test needs PostGIS; run scripts/install-bench-tools.sh)", err)
	}
	if err != nil {
		t.Fatalf("RunEngine: %v\nlogs:\n%s", err, logs.String())
	}
	var out strings.Builder
	r.Print(&out)
	t.Log("\n" + out.String())
	// PostGIS measures line and polygon distances on the sphere first and
	// can be off by metres; those cases are listed (see the log) but only
	// the engine's errors fail the test.
	if err := r.Err(false); err != nil {
		t.Fatal(err)
	}
	c := r.Comparison
	if c.Compared == 0 || c.Matched == 0 {
		t.Fatalf("nothing compared: %+v", c)
	}
	if c.Failed != 0 {
		t.Errorf("%d layers failed on a limit", c.Failed)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "engine/postgis p50 ratio: ") {
		t.Errorf("last line %q", last)
	}
	if r.Load.Shards != int64(r.Tiles) || r.Load.Features != r.Features {
		t.Errorf("load: %+v for %d tiles, %d features", r.Load, r.Tiles, r.Features)
	}
}

// TestEngineUnderBudgetAgreesWithPostGIS runs the same check with an
// engine budget far below its shards: shards are evicted and loaded again
// during the passes, and the answers still agree with PostGIS. The report
// carries the peak memory of the bench and of PostGIS.
func TestEngineUnderBudgetAgreesWithPostGIS(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	r, err := RunEngine(ctx, EngineOptions{
		WorkDir: traversableTempDir(t), Scale: synth.Small, Seed: 7, Queries: 100, Workers: 2,
		MaxFeaturesPerLayer: 1000, EngineMemory: 64 << 10, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatalf("RunEngine: %v\nlogs:\n%s", err, logs.String())
	}
	var out strings.Builder
	r.Print(&out)
	t.Log("\n" + out.String())
	if err := r.Err(false); err != nil {
		t.Fatal(err)
	}
	if c := r.Comparison; c.Compared == 0 || c.Matched == 0 {
		t.Fatalf("nothing compared: %+v", c)
	}
	b := r.Budget
	if b.Loads == 0 || b.Evictions == 0 || r.Load.Evictions == 0 || r.Load.NeedBytes <= r.Load.Budget {
		t.Errorf("a 64 KiB budget loaded %d shards and evicted %d during the passes (need %d bytes)", b.Loads, b.Evictions, r.Load.NeedBytes)
	}
	if r.Load.Features != r.Features || r.Load.Loads != int64(r.Tiles) {
		t.Errorf("load: %+v for %d tiles, %d features", r.Load, r.Tiles, r.Features)
	}
	m := r.Memory
	if m.Self <= 0 || len(m.Clusters) != 1 || m.Clusters[0].Peak <= 0 || m.MinAvailable <= 0 {
		t.Errorf("memory figures: %+v", m)
	}
	for _, want := range []string{"peak resident: bench process", "cold query", "answers digest", "point layers"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
