package bench

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"siteenv/ingest/synth"

	"siteenv/engine"
	"siteenv/store"
)

// newEngine is engine.New for tests: an error fails tb.
func newEngine(tb testing.TB, st store.Store, opt engine.Options) *engine.Engine {
	tb.Helper()
	e, err := engine.New(st, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// TestOptionsValidate: RunEngine, RunIngest and RunAPI refuse bad options
// with an error naming the field, before any work (not a panic).
func TestOptionsValidate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		run  func() error
		want string
	}{
		{func() error { _, err := RunEngine(ctx, EngineOptions{}); return err }, "WorkDir"},
		{func() error { _, err := RunEngine(ctx, EngineOptions{WorkDir: dir, Queries: -1}); return err }, "queries"},
		{func() error { _, err := RunEngine(ctx, EngineOptions{WorkDir: dir, Workers: -1}); return err }, "workers"},
		{func() error { _, err := RunEngine(ctx, EngineOptions{WorkDir: dir, Scale: "huge"}); return err }, "huge"},
		{func() error { _, err := RunIngest(ctx, IngestOptions{WorkDir: dir}); return err }, "Command"},
		{func() error { _, err := RunAPI(ctx, APIOptions{WorkDir: dir, Clients: []int{0}}); return err }, "clients"},
		{func() error { _, err := RunAPI(ctx, APIOptions{WorkDir: dir, Reads: -1}); return err }, "reads"},
		{func() error { _, err := RunAPI(ctx, APIOptions{WorkDir: dir, EngineMemory: -1}); return err }, "EngineMemory"},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want one naming %s", err, tc.want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("refused options left work behind: %v %v", entries, err)
	}
}

// TestOptionsWithDefaults: every zero field takes its documented default and
// a set field is kept.
func TestOptionsWithDefaults(t *testing.T) {
	e := EngineOptions{WorkDir: "w"}.WithDefaults()
	if e.Scale != synth.Medium || e.Seed != DefaultSeed || e.Queries != DefaultQueries || e.Workers != DefaultWorkers ||
		e.EngineMemory != DefaultEngineMemory || e.Logger == nil || e.validate() != nil {
		t.Fatalf("engine defaults: %+v", e)
	}
	if e := (EngineOptions{WorkDir: "w", Queries: 5, Scale: synth.Small}).WithDefaults(); e.Queries != 5 || e.Scale != synth.Small {
		t.Fatalf("set fields not kept: %+v", e)
	}
	i := IngestOptions{WorkDir: "w", Command: []string{"x"}}.WithDefaults()
	if i.Scale != synth.Medium || i.Seed != DefaultSeed || i.Logger == nil || i.validate() != nil {
		t.Fatalf("ingest defaults: %+v", i)
	}
	a := APIOptions{WorkDir: "w"}.WithDefaults()
	if a.Scale != synth.Medium || a.Seed != DefaultSeed || a.Queries != DefaultAPIQueries || !slices.Equal(a.Clients, DefaultClients) ||
		a.Reads != 0 || a.EngineMemory != DefaultEngineMemory || a.OutDir != "w" || a.Logger == nil || a.validate() != nil {
		t.Fatalf("api defaults: %+v", a)
	}
}
