package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"siteenv/ingest/synth"
)

// childEnv makes the test binary act as RunIngest's child process (the
// os/exec helper-process pattern): see TestIngestChildProcess.
const childEnv = "SITEENV_BENCH_INGEST_CHILD"

// TestIngestChildProcess is not a test: run by RunIngest through the test
// binary with childEnv set, it is the ingest child and exits.
func TestIngestChildProcess(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		return
	}
	i := slices.Index(os.Args, "--")
	if err := IngestChild(context.Background(), os.Args[i+1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestRunIngest(t *testing.T) {
	t.Setenv(childEnv, "1")
	pointsBenchCount = 5000 // the report's 200k-point part, smaller
	r, err := RunIngest(context.Background(), IngestOptions{
		WorkDir: traversableTempDir(t), Scale: synth.Small, Seed: 3, Layers: []string{"bom-flood-warning-gauges", "vic-heritage-register"},
		Command: []string{os.Args[0], "-test.run=^TestIngestChildProcess$", "--"},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if errors.Is(err, ErrNoOgr2ogr) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("RunIngest: %v", err)
	}
	var out strings.Builder
	r.Print(&out)
	t.Log("\n" + out.String())
	if r.Layers != 2 || r.Features == 0 || r.Ingest.WallS <= 0 || r.OGR.WallS <= 0 {
		t.Fatalf("report: %+v", r)
	}
	if r.Ingest.PeakRSS <= 0 || r.OGR.PeakRSS <= 0 || r.Ingest.OutBytes <= 0 || r.OGR.OutBytes <= 0 {
		t.Fatalf("measurements missing: %+v", r)
	}
	// The point file: ingested, then again as a no-op, and into PostGIS.
	if p := r.Points; p == nil || p.Points != 5000 || !p.SameInput || p.Ingest.WallS <= 0 || p.NoOp.WallS <= 0 || p.OGRSkipped != "" || p.OGR.WallS <= 0 {
		t.Fatalf("points report: %+v", r.Points)
	}
	if !strings.Contains(out.String(), "ogr2ogr -f PostgreSQL (PostGIS") || !strings.Contains(out.String(), "(a no-op, by the content digest)") {
		t.Errorf("the report lacks the point part:\n%s", out.String())
	}
}
