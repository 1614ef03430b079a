package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"

	"siteenv/ingest/synth"
)

// Defaults.
const (
	// DefaultSeed makes runs comparable across machines and commits.
	DefaultSeed    = 20261122
	DefaultQueries = 10_000
	DefaultWorkers = 2
	// DefaultEngineMemory is the engine's memory budget in a bench: every
	// shard of the small and medium scales fits in it, and with it the
	// large scale's bench process stays under 8 GiB (its shards are then
	// loaded and evicted as the queries need them, as in a replica whose
	// budget is smaller than its data).
	DefaultEngineMemory = 4 << 30
)

// EngineOptions configure RunEngine.
type EngineOptions struct {
	// WorkDir receives a private temporary directory (file store, PostgreSQL
	// cluster) removed when RunEngine returns. Required. Its ancestors must
	// be traversable by the postgres user when running as root.
	WorkDir string
	// Scale of the synthetic data. Default synth.Medium. ScaleHeavy runs
	// the heavy-polygon layers instead (heavy.go).
	Scale synth.Scale
	// Seed of the data and of the query mix. Default DefaultSeed.
	Seed int64
	// Queries in the mix. Default DefaultQueries.
	Queries int
	// Workers of the concurrent pass (throughput with that many clients);
	// 1 skips it. Default DefaultWorkers.
	Workers int
	// MaxFeaturesPerLayer keeps only the first features of each layer
	// (tests use a few hundred). Default 0: all.
	MaxFeaturesPerLayer int64
	// EngineMemory is the engine's memory budget (engine.Options). Default
	// DefaultEngineMemory; the CLI passes SITEENV_ENGINE_MEMORY.
	EngineMemory int64
	// KeepDir, when set, keeps the datasets built under it (one per scale,
	// seed and cap) and reuses them in later runs; the CLI passes
	// SITEENV_BENCH_DIR. "": each run builds its data in WorkDir.
	KeepDir string
	// MemoryLimitSet: the caller set the Go memory limit (GOMEMLIMIT, read
	// by the CLI), so the bench does not set its own (boundHeap).
	MemoryLimitSet bool
	// CPUProfile, when set, receives a CPU profile (runtime/pprof) of the
	// engine's single-client pass.
	CPUProfile io.Writer
	// Logger receives progress. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns o with every zero field set to its default.
func (o EngineOptions) WithDefaults() EngineOptions {
	if o.Scale == "" {
		o.Scale = synth.Medium
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Queries == 0 {
		o.Queries = DefaultQueries
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.EngineMemory == 0 {
		o.EngineMemory = DefaultEngineMemory
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate reports the first field of filled options out of range.
func (o EngineOptions) validate() error {
	switch {
	case o.WorkDir == "":
		return errors.New("bench: WorkDir is required")
	case o.Queries < 1:
		return fmt.Errorf("bench: queries must be at least 1, not %d", o.Queries)
	case o.EngineMemory < 0:
		return fmt.Errorf("bench: negative EngineMemory")
	case o.Workers < 1:
		return fmt.Errorf("bench: workers must be at least 1, not %d", o.Workers)
	case o.MaxFeaturesPerLayer < 0:
		return fmt.Errorf("bench: negative MaxFeaturesPerLayer")
	}
	_, err := ParseScale(string(o.Scale))
	return err
}

// IngestOptions configure RunIngest.
type IngestOptions struct {
	// WorkDir receives a private temporary directory (GeoJSON, tiles,
	// GeoPackages) removed when RunIngest returns. Required.
	WorkDir string
	// Scale of the synthetic data. Default synth.Medium.
	Scale synth.Scale
	// Seed of the data. Default DefaultSeed.
	Seed int64
	// Layers restricts the run to these layer ids. Default: every layer.
	Layers []string
	// Command runs the ingest of one file in a child process so its peak
	// memory can be measured on its own: Command + [--layer L --store DIR
	// FILE] must behave like IngestChild. Required (the CLI passes its own
	// binary and "bench ingest-run").
	Command []string
	// Logger receives progress. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns o with every zero field set to its default.
func (o IngestOptions) WithDefaults() IngestOptions {
	if o.Scale == "" {
		o.Scale = synth.Medium
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate reports the first field of filled options out of range.
func (o IngestOptions) validate() error {
	switch {
	case o.WorkDir == "":
		return errors.New("bench: WorkDir is required")
	case len(o.Command) == 0:
		return errors.New("bench: Command is required")
	}
	_, err := synth.ParseScale(string(o.Scale))
	return err
}

// cpus is reported with every table: ratios depend on it.
func cpus() int { return runtime.GOMAXPROCS(0) }
