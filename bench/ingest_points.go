package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"siteenv/ingest"
)

// pointsBenchCount is the size of the point file of the ingest report's
// second part: a data team's 200k-point register (tests make it smaller).
var pointsBenchCount = 200_000

// PointsReport is the ingest report's second part: one GeoJSON file of
// points, ingested by siteenv (then again, unchanged: the no-op re-ingest)
// and loaded by `ogr2ogr -f PostgreSQL` into PostGIS.
type PointsReport struct {
	Points       int
	GeoJSONBytes int64
	Ingest       run
	// NoOp is the same file ingested again into the same store: decided by
	// the content digest, without parsing (SameInput).
	NoOp      run
	SameInput bool
	// OGR is ogr2ogr into a PostGIS table (COPY, with its spatial index),
	// on a throwaway cluster; OGRSkipped says why it did not run.
	OGR            run
	OGRSkipped     string
	PostGISVersion string
}

// runPoints measures the point file. ogr is ogr2ogr's path.
func runPoints(ctx context.Context, opt IngestOptions, dir, ogr string, log *slog.Logger) (*PointsReport, error) {
	r := &PointsReport{Points: pointsBenchCount}
	pdir := filepath.Join(dir, "points")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(pdir, "points.geojson")
	n, err := writePoints(file, pointsBenchCount, opt.Seed)
	if err != nil {
		return nil, fmt.Errorf("bench: points: %w", err)
	}
	r.GeoJSONBytes = n
	layer := filepath.Join(pdir, "layer.json")
	if err := os.WriteFile(layer, []byte(pointsLayerJSON), 0o644); err != nil {
		return nil, err
	}
	st := filepath.Join(pdir, "store")
	ingestOnce := func() (run, ingest.Summary, error) {
		args := append(slices.Clone(opt.Command[1:]), "--layer", layer, "--store", st, "--temp", pdir, file)
		var stdout bytes.Buffer
		m, err := measure(ctx, &stdout, opt.Command[0], args...)
		if err != nil {
			return m, ingest.Summary{}, err
		}
		var sum ingest.Summary
		err = json.Unmarshal(stdout.Bytes(), &sum)
		return m, sum, err
	}
	var sum ingest.Summary
	if r.Ingest, sum, err = ingestOnce(); err != nil {
		return nil, fmt.Errorf("bench: ingest points: %w", err)
	}
	if sum.Features != int64(pointsBenchCount) {
		return nil, fmt.Errorf("bench: ingest points: %d features, want %d", sum.Features, pointsBenchCount)
	}
	if r.NoOp, sum, err = ingestOnce(); err != nil {
		return nil, fmt.Errorf("bench: re-ingest points: %w", err)
	}
	r.SameInput = sum.SameInput
	log.Info("bench: points", "points", pointsBenchCount, "ingest_s", round3(r.Ingest.WallS), "noop_s", round3(r.NoOp.WallS))

	// The baseline: ogr2ogr into PostGIS.
	if err := os.Chmod(dir, 0o755); err != nil { // the postgres user walks into it
		return nil, err
	}
	pg, err := startPostGIS(ctx, filepath.Join(dir, "pg"), int64(pointsBenchCount), log)
	if errors.Is(err, ErrNoPostGIS) {
		r.OGRSkipped = err.Error()
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	defer pg.Close(ctx)
	r.PostGISVersion = pg.version
	dsn := "PG:" + pg.cluster.DSN("bench")
	r.OGR, err = measure(ctx, io.Discard, ogr, "-f", "PostgreSQL", dsn, file, "-nln", "bench_points",
		"-lco", "GEOMETRY_NAME=geom", "-lco", "SPATIAL_INDEX=GIST", "--config", "PG_USE_COPY", "YES")
	if err != nil {
		return nil, fmt.Errorf("bench: ogr2ogr into PostGIS: %w", err)
	}
	conn, err := pg.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM bench_points`).Scan(&rows); err != nil || rows != pointsBenchCount {
		return nil, fmt.Errorf("bench: ogr2ogr loaded %d rows (%v), want %d", rows, err, pointsBenchCount)
	}
	log.Info("bench: points", "ogr2ogr_postgis_s", round3(r.OGR.WallS))
	return r, nil
}

const pointsLayerJSON = `{
  "layer_id": "bench.points", "section_key": "bench", "name": "Bench points", "description": null,
  "schema_version": "1", "radius_max_m": 1000,
  "field_schema": {"name": {"type": "string"}, "value": {"type": ["number", "null"]}, "active": {"type": "boolean"}},
  "units": {},
  "sources": [{"source_variant_id": "bench", "scope": null, "provider": "siteenv bench", "source_url": null,
    "source_published_at": null, "source_effective_at": null, "retrieved_at": null, "licence": "CC0-1.0",
    "attribution": "synthetic", "coverage_verified": false, "api_approved": true, "agent_approved": true, "report_approved": true}],
  "jurisdictions": ["AUS"], "coverage": null, "geometry_types": ["Point"]
}`

// writePoints writes n points over mainland Australia as a GeoJSON
// FeatureCollection, and returns its size.
func writePoints(path string, n int, seed int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(uint64(seed), 200_000))
	w.WriteString(`{"type":"FeatureCollection","features":[` + "\n")
	for i := range n {
		if i > 0 {
			w.WriteString(",\n")
		}
		fmt.Fprintf(w, `{"type":"Feature","id":"pt-%d","geometry":{"type":"Point","coordinates":[%.7f,%.7f]},"properties":{"name":"Point %d","value":%.3f,"active":%t}}`,
			i, 115+rng.Float64()*38, -38+rng.Float64()*26, i, rng.Float64()*1000, rng.IntN(2) == 0)
	}
	w.WriteString("\n]}\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}

// print writes the point part of the report.
func (p *PointsReport) print(w io.Writer) {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "\n%s points in one GeoJSON file (%.1f MiB):\n", group(int64(p.Points)), mib(p.GeoJSONBytes))
	fmt.Fprintf(w, "  siteenv ingest                      %7.2f s wall, %7.2f s CPU, peak RSS %6.1f MiB, %.0f features/s\n",
		p.Ingest.WallS, p.Ingest.CPUS, mib(p.Ingest.PeakRSS), ratio(float64(p.Points), p.Ingest.WallS))
	noop := "a no-op, by the content digest"
	if !p.SameInput {
		noop = "NOT a no-op"
	}
	fmt.Fprintf(w, "  siteenv ingest, same file again     %7.2f s wall, %7.2f s CPU, peak RSS %6.1f MiB (%s)\n",
		p.NoOp.WallS, p.NoOp.CPUS, mib(p.NoOp.PeakRSS), noop)
	if p.OGRSkipped != "" {
		fmt.Fprintf(w, "  ogr2ogr -f PostgreSQL (PostGIS): not run: %s\n", p.OGRSkipped)
		return
	}
	fmt.Fprintf(w, "  ogr2ogr -f PostgreSQL (PostGIS %s, COPY, GiST index) %7.2f s wall, %7.2f s CPU (ogr2ogr only), peak RSS %6.1f MiB\n",
		strings.TrimSpace(p.PostGISVersion), p.OGR.WallS, p.OGR.CPUS, mib(p.OGR.PeakRSS))
}
