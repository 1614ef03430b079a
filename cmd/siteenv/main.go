// Command siteenv is the one binary: serve | ingest | admin | demo | bench.
// This package holds flags and wiring only.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

const usage = `siteenv: environmental evidence about Australian sites.

Usage:
  siteenv serve   [--addr 127.0.0.1:8080] [--data-dir ./var] [--demo]
          [--metrics-addr 127.0.0.1:9090 [--metrics-public]] [--shutdown-timeout 25s]
  siteenv admin account create --name NAME [--credits N]
  siteenv admin credits grant --account ID --amount N
  siteenv admin key create --account ID --scopes a,b|all [--datasets id,id|all|none]
          [--spend-limit N] [--principal machine|human] [--integration ID]
  siteenv admin key revoke --key-id ID
  siteenv admin section set --key KEY --name NAME --price N
  siteenv admin config set report-price N
  siteenv admin portfolio create --account ID --name NAME
  siteenv admin legacy import FILE     (CSV: legacy_id,account_id,credits,created_at,site_id)
  siteenv admin ledger check           (verifies the credit ledger's invariants)
  siteenv admin report revise --report ID          (builds revision N+1 from current releases; no charge)
  siteenv admin report import --account ID --site ID --file X.pdf [--created-at T]
          (a historical website report: PDF only, dataset scope and provenance unknown)
  siteenv ingest --layer layer.json [--source-crs EPSG:N] [--id-property NAME] [--repair]
          [--drop-unknown-fields|--keep-unknown-fields] [--stage|--publish] [--out DIR] [--json]
          [--max-rejects N] [--rejects FILE] [--table NAME] FILE...
          (GeoJSON, NDJSON, CSV, GeoParquet, Shapefile .shp or .zip, GeoPackage .gpkg;
          a layer with a current release is staged unless --publish)
  siteenv release list --layer ID                  (every release: current, staged, previous)
  siteenv release diff --layer ID [--from R1] [--to R2] [--tolerance 1mm] [--out FILE.csv]
          (added / removed / changed features; default current -> newest staged)
  siteenv release promote --layer ID --release R   (make R current; also the rollback)
  siteenv release discard --layer ID --release R   (a staged release, after review)
  siteenv review [--addr 127.0.0.1:8090]           (staged releases on a map, in a browser)
  siteenv ingest gazetteer --addresses FILE --parcels FILE
  siteenv demo [--scale small|medium|large] [--seed N]
  siteenv bench engine [--scale small|medium|large] [--queries N]   (engine vs PostGIS)
  siteenv bench ingest [--scale small|medium|large]                 (ingest vs ogr2ogr)
  siteenv bench api [--scale small|medium|large] [--clients 1,2,8]  (HTTP load: latency per route)
  siteenv version                      (version, commit and Go version; also --version)
  siteenv COMMAND --help               (the command's own usage)

Every command takes --data-dir (or SITEENV_DATA_DIR) and reaches the same
database and store as serve, whether or not a server is running.
Environment: SITEENV_DATA_DIR, SITEENV_DATABASE_URL, SITEENV_STORE (file:///path or
s3://bucket/prefix with SITEENV_S3_ENDPOINT, SITEENV_S3_ACCESS_KEY, SITEENV_S3_SECRET_KEY, SITEENV_S3_REGION),
SITEENV_SECRET, SITEENV_LOG_LEVEL (debug|info|warn|error), SITEENV_ENGINE_MEMORY, SITEENV_INGEST_MEMORY, SITEENV_STORE_RECENT,
SITEENV_QUERY_ATTEMPT (default 120s), SITEENV_REPORT_ATTEMPT (default 10m), SITEENV_QUERY_SWEEP (default 30s),
SITEENV_JOB_LEASE (default 5s: a killed replica's work is taken over within about 1.5 leases),
SITEENV_PG_BIN (the embedded PostgreSQL's bin dir), SITEENV_METRICS_ADDR and
SITEENV_METRICS_PUBLIC (serve's --metrics-addr and --metrics-public).
`

// usageError marks bad command lines (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "siteenv:", err)
	var ue usageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"a command is required"}
	}
	switch {
	case args[0] == "version" || args[0] == "--version":
		printVersion(stdout)
		return nil
	case args[0] != "help" && helpRequested(args[1:]):
		return commandHelp(ctx, args, stdout)
	}
	switch args[0] {
	case "help", "-h", "--help":
		if len(args) > 1 && isCommand(args[1]) {
			return commandHelp(ctx, append(args[1:], "--help"), stdout)
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	if !isCommand(args[0]) {
		return unknownCommand(args[0], stderr)
	}
	set, err := loadSettings()
	if err != nil {
		return err
	}
	return dispatch(ctx, set, args, stdout, stderr)
}

// dispatch runs command args[0].
func dispatch(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	switch args[0] {
	case "serve":
		return serve(ctx, set, args[1:], stdout, stderr)
	case "admin":
		return admin(ctx, set, args[1:], stdout, stderr)
	case "ingest":
		boundMemory()
		return ingestCmd(ctx, set, args[1:], stdout, stderr)
	case "release":
		boundMemory()
		return releaseCmd(ctx, set, args[1:], stdout, stderr)
	case "demo":
		boundMemory()
		return demoCmd(ctx, set, args[1:], stdout, stderr)
	case "bench":
		return benchCmd(ctx, set, args[1:], stdout, stderr)
	case "review":
		boundMemory()
		return reviewCmd(ctx, set, args[1:], stdout, stderr)
	}
	return unknownCommand(args[0], stderr)
}

// boundMemory keeps ingest well under 1 GiB resident: without GOMEMLIMIT the
// collector lets the heap grow to twice the live data between cycles.
func boundMemory() {
	// A negative input reads the limit without changing it: MaxInt64 means
	// none was set (GOMEMLIMIT or otherwise), and a set one wins.
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		debug.SetMemoryLimit(640 << 20)
	}
}
