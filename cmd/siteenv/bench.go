//go:build !nobench

// The benchmark harness's commands. A production build leaves them, and
// package bench with its PostGIS and ogr2ogr baselines, out of the binary
// with -tags nobench (bench_off.go); `make build` builds the full binary.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"siteenv/bench"
	"siteenv/ingest/synth"
)

const benchUsage = `usage:
  siteenv bench engine [--scale small|medium|large|heavy|sydney] [--queries 10000] [--seed N] [--workers 2]
          [--strict] [--cpuprofile FILE] [--data-dir DIR]
  siteenv bench ingest [--scale small|medium|large] [--seed N] [--layers id,id] [--data-dir DIR]
  siteenv bench api [--scale small|medium|large|heavy|sydney] [--clients 1,2,8] [--queries 2000] [--small 300] [--fresh 400]
          [--reads 20000] [--seed N] [--out DIR] [--markdown FILE] [--cpuprofile FILE] [--ledger-statements] [--data-dir DIR]
The engine's memory budget is SITEENV_ENGINE_MEMORY (default in a bench: 4GiB); SITEENV_BENCH_DIR keeps
the built datasets for later runs; GOMEMLIMIT replaces the bench's own Go memory limit.`

// benchCmd runs the benchmarks of package bench. Their scratch data (file
// store, PostgreSQL cluster, GeoJSON) goes in a temporary directory under
// the data dir, removed at the end; the service's own data is not touched.
func benchCmd(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{benchUsage}
	}
	switch args[0] {
	case "engine":
		return benchEngine(ctx, set, args[1:], stdout, stderr)
	case "ingest":
		return benchIngest(ctx, set, args[1:], stdout, stderr)
	case "api":
		return benchAPI(ctx, set, args[1:], stdout, stderr)
	case "ingest-run":
		// Internal: the child process `bench ingest` measures.
		return bench.IngestChild(ctx, args[1:], stdout, stderr)
	}
	return usageError{fmt.Sprintf("unknown bench %q\n%s", args[0], benchUsage)}
}

func benchEngine(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	scale := fs.String("scale", "medium", "small (~200k features), medium (~2M), large (~20M) heavy (380 polygons of 1k-250k vertices) or sydney (500k in five layers around Sydney)")
	queries := fs.Int("queries", bench.DefaultQueries, "queries in the mix")
	seed := fs.Int64("seed", bench.DefaultSeed, "seed of the data and the query mix")
	workers := fs.Int("workers", bench.DefaultWorkers, "clients of the concurrent pass (1: none)")
	strict := fs.Bool("strict", false, "also fail when PostGIS, not the engine, disagrees with the geodesic reference")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the engine's single-client pass to this file")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	sc, err := bench.ParseScale(*scale)
	if err != nil {
		return usageError{err.Error()}
	}
	work, err := benchWorkDir(*dataDir)
	if err != nil {
		return err
	}
	opt := bench.EngineOptions{
		WorkDir: work, Scale: sc, Seed: *seed, Queries: *queries, Workers: *workers, EngineMemory: set.EngineMemory, Logger: set.logger(stderr),
		KeepDir: set.BenchDir, MemoryLimitSet: set.GoMemLimitSet,
	}
	if *cpuProfile != "" {
		f, err := createProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		opt.CPUProfile = f
	}
	r, err := bench.RunEngine(ctx, opt)
	if err != nil {
		return err
	}
	r.Print(stdout)
	return r.Err(*strict)
}

func benchIngest(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	scale := fs.String("scale", "medium", "small (~200k features), medium (~2M) or large (~20M)")
	seed := fs.Int64("seed", bench.DefaultSeed, "seed of the data")
	layers := fs.String("layers", "", "comma-separated layer ids (default: every layer)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	sc, err := synth.ParseScale(*scale)
	if err != nil {
		return usageError{err.Error()}
	}
	work, err := benchWorkDir(*dataDir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: own executable: %w", err)
	}
	var ids []string
	if *layers != "" {
		ids = splitList(*layers)
	}
	r, err := bench.RunIngest(ctx, bench.IngestOptions{
		WorkDir: work, Scale: sc, Seed: *seed, Layers: ids,
		Command: []string{self, "bench", "ingest-run"}, Logger: set.logger(stderr),
	})
	if err != nil {
		return err
	}
	r.Print(stdout)
	return nil
}

func benchAPI(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	scale := fs.String("scale", "medium", "small (~200k features), medium (~2M), large (~20M) heavy (380 polygons of 1k-250k vertices) or sydney (500k in five layers around Sydney)")
	clients := fs.String("clients", "1,2,8", "comma-separated client counts of the passes")
	queries := fs.Int("queries", bench.DefaultAPIQueries, "queries in the mix (a prefix of bench engine's)")
	small := fs.Int("small", bench.DefaultSmallQueries, "queries of the small-query mix (points and lots up to ~300 m, 1-5 layers; 0: none)")
	fresh := fs.Int("fresh", bench.DefaultFreshQueries, "queries of the fresh mix (each about a new site; points and lots 80-600 m, 1-5 layers, 60 keys taking turns, more for over 1,500 queries; 0: none)")
	markdown := fs.String("markdown", "", "also write the fresh mix's figures as a markdown table to this file")
	reads := fs.Int("reads", bench.DefaultReads, "authenticated reads of the read pass (0: none)")
	seed := fs.Int64("seed", bench.DefaultSeed, "seed of the data and the query mix")
	out := fs.String("out", "", "directory for api-report.txt, api-cdf.svg and api-queries.tsv (default <data-dir>/bench)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the first API pass (client and server) to this file, of the read pass to FILE.reads and of the fresh mix's last pass (most clients) to FILE.fresh")
	traceFile := fs.String("trace", "", "write an execution trace (go tool trace) of the first API pass to this file")
	ledgerStatements := fs.Bool("ledger-statements", false, "run the ledger with log_statement_stats and report its CPU by statement for each small and fresh pass (the logging inflates the run's CPU)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	sc, err := bench.ParseScale(*scale)
	if err != nil {
		return usageError{err.Error()}
	}
	var cs []int
	for _, c := range splitList(*clients) {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			return usageError{fmt.Sprintf("--clients: %q is not a positive number", c)}
		}
		cs = append(cs, n)
	}
	work, err := benchWorkDir(*dataDir)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = work
	}
	opt := bench.APIOptions{
		WorkDir: work, OutDir: *out, Scale: sc, Seed: *seed, Queries: *queries, Clients: cs, Reads: *reads, SmallQueries: *small, FreshQueries: *fresh, EngineMemory: set.EngineMemory, Logger: set.logger(stderr),
		Command: "bin/siteenv bench api " + strings.Join(args, " "),
		KeepDir: set.BenchDir, MemoryLimitSet: set.GoMemLimitSet, LedgerStatements: *ledgerStatements,
	}
	if *cpuProfile != "" {
		f, err := createProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		fr, err := createProfile(*cpuProfile + ".reads")
		if err != nil {
			return err
		}
		defer fr.Close()
		ff, err := createProfile(*cpuProfile + ".fresh")
		if err != nil {
			return err
		}
		defer ff.Close()
		opt.CPUProfile, opt.ReadCPUProfile, opt.FreshCPUProfile = f, fr, ff
	}
	if *markdown != "" {
		f, err := createProfile(*markdown)
		if err != nil {
			return err
		}
		defer f.Close()
		opt.Markdown = f
	}
	if *traceFile != "" {
		f, err := createProfile(*traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		opt.Trace = f
	}
	r, err := bench.RunAPI(ctx, opt)
	if err != nil {
		return err
	}
	r.Print(stdout)
	return r.Err()
}

// createProfile creates the file a CPU profile is written to.
func createProfile(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return f, nil
}

// benchWorkDir is <data-dir>/bench, made traversable (0755 up from it) so
// the postgres user can reach the cluster when we run as root.
func benchWorkDir(dataDir string) (string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(abs, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	for _, d := range []string{abs, dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			return "", fmt.Errorf("bench: %w", err)
		}
	}
	return dir, nil
}
