package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"siteenv/ingest"
	"siteenv/ingest/synth"
	"siteenv/store"
)

// ErrNoOgr2ogr: GDAL's ogr2ogr, the ingest baseline, is not installed.
var ErrNoOgr2ogr = errors.New("bench: ogr2ogr not found: run scripts/install-bench-tools.sh (Debian gdal-bin)")

// run is one measured child process.
type run struct {
	WallS, CPUS float64
	PeakRSS     int64 // bytes
}

// toolTotals add up one tool's runs over the layers.
type toolTotals struct {
	run
	OutBytes int64
}

func (t *toolTotals) add(r run, out int64) {
	t.WallS += r.WallS
	t.CPUS += r.CPUS
	t.PeakRSS = max(t.PeakRSS, r.PeakRSS)
	t.OutBytes += out
}

// IngestReport is what RunIngest measured.
type IngestReport struct {
	Scale        synth.Scale
	Seed         int64
	CPUs         int
	Layers       int
	Features     int64
	GeoJSONBytes int64
	WriteS       float64
	OGRVersion   string

	Ingest, OGR toolTotals
	// Largest is the layer with the most features, measured alone.
	Largest         string
	LargestFeatures int64
	LargestIngest   run
	LargestOGR      run

	// Points: a 200k-point file, ingested, ingested again (the no-op) and
	// loaded into PostGIS by ogr2ogr.
	Points *PointsReport
}

// RunIngest writes the scale's layers as GeoJSON files and converts each,
// timed, with the ingest pipeline (GeoJSON to GeoParquet tiles, in a child
// process: opt.Command) and with `ogr2ogr -f GPKG`, measuring wall and CPU
// time and peak resident memory of each child.
func RunIngest(ctx context.Context, opt IngestOptions) (*IngestReport, error) {
	opt = opt.WithDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	log := opt.Logger
	ogr, err := exec.LookPath("ogr2ogr")
	if err != nil {
		return nil, ErrNoOgr2ogr
	}
	dir, err := os.MkdirTemp(opt.WorkDir, "bench-ingest-")
	if err != nil {
		return nil, fmt.Errorf("bench: work dir: %w", err)
	}
	defer os.RemoveAll(dir)
	g, err := synth.New(opt.Seed, opt.Scale)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := &IngestReport{Scale: opt.Scale, Seed: opt.Seed, CPUs: cpus()}
	if out, err := exec.CommandContext(ctx, ogr, "--version").Output(); err == nil {
		r.OGRVersion = strings.TrimSpace(string(out))
	}

	log.Info("bench: writing GeoJSON", "scale", opt.Scale)
	start := time.Now()
	files, err := g.WriteLayerFiles(filepath.Join(dir, "geojson"))
	if err != nil {
		return nil, fmt.Errorf("bench: write GeoJSON: %w", err)
	}
	r.WriteS = time.Since(start).Seconds()
	ids := make([]string, 0, len(files))
	for id := range files {
		if len(opt.Layers) == 0 || slices.Contains(opt.Layers, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("bench: no layer of %v is in the data", opt.Layers)
	}
	slices.Sort(ids)

	st := filepath.Join(dir, "store")
	gpkgs := filepath.Join(dir, "gpkg")
	for _, d := range []string{st, gpkgs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	for _, id := range ids {
		file := files[id]
		fi, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		r.GeoJSONBytes += fi.Size()
		layerJSON := strings.TrimSuffix(file, ".geojson") + ".layer.json"

		args := append(slices.Clone(opt.Command[1:]), "--layer", layerJSON, "--store", st, "--temp", dir, file)
		var stdout bytes.Buffer
		ir, err := measure(ctx, &stdout, opt.Command[0], args...)
		if err != nil {
			return nil, fmt.Errorf("bench: ingest %s: %w", id, err)
		}
		var sum ingest.Summary
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			return nil, fmt.Errorf("bench: ingest %s: summary: %w", id, err)
		}
		r.Features += sum.Features
		r.Ingest.add(ir, sum.Bytes)

		out := filepath.Join(gpkgs, id+".gpkg")
		or, err := measure(ctx, io.Discard, ogr, "-f", "GPKG", out, file)
		if err != nil {
			return nil, fmt.Errorf("bench: ogr2ogr %s: %w", id, err)
		}
		ofi, err := os.Stat(out)
		if err != nil {
			return nil, fmt.Errorf("bench: ogr2ogr %s: %w", id, err)
		}
		r.OGR.add(or, ofi.Size())
		if sum.Features > r.LargestFeatures {
			r.Largest, r.LargestFeatures, r.LargestIngest, r.LargestOGR = id, sum.Features, ir, or
		}
		r.Layers++
		log.Info("bench: layer", "layer", id, "features", sum.Features,
			"ingest_s", round3(ir.WallS), "ogr2ogr_s", round3(or.WallS))
	}
	if r.Points, err = runPoints(ctx, opt, dir, ogr, log); err != nil {
		return nil, err
	}
	return r, nil
}

// measure runs a child and reports its wall time, CPU time and peak
// resident set. The peak is the child's VmHWM, polled from /proc every
// 10 ms: ru_maxrss is no good here, as Go starts children with vfork and
// the kernel then counts the parent's resident set as the child's.
func measure(ctx context.Context, stdout io.Writer, name string, args ...string) (run, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return run{}, fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var hwm int64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v, ok := vmHWM(cmd.Process.Pid); ok {
				hwm = max(hwm, v)
			}
			select {
			case <-done:
				peak <- hwm
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	wall := time.Since(start)
	close(done)
	hwm := <-peak
	if err != nil {
		return run{}, fmt.Errorf("%s: %w: %s", filepath.Base(name), err, tail(stderr.String(), 2000))
	}
	return run{
		WallS:   wall.Seconds(),
		CPUS:    (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(),
		PeakRSS: hwm,
	}, nil
}

// vmHWM reads the peak resident set of process pid, in bytes.
func vmHWM(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// IngestChild is the child process of RunIngest: `--layer layer.json
// --store DIR [--temp DIR] FILE...` ingests FILE into a file store at DIR
// with the pipeline `siteenv ingest` runs, without publishing (the bench
// has no ledger), and prints the summary as JSON.
func IngestChild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench ingest-run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	layerPath := fs.String("layer", "", "layer.json")
	storeDir := fs.String("store", "", "file store directory")
	temp := fs.String("temp", "", "directory for spill files")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *layerPath == "" || *storeDir == "" || fs.NArg() == 0 {
		return errors.New("usage: bench ingest-run --layer layer.json --store DIR [--temp DIR] FILE...")
	}
	def, err := ingest.ReadLayerDef(*layerPath)
	if err != nil {
		return err
	}
	st, err := store.NewFileStore(*storeDir)
	if err != nil {
		return err
	}
	sum, err := ingest.Run(ctx, ingest.Options{Layer: def, Store: st, TempDir: *temp, CreatedBy: "siteenv bench"}, fs.Args()...)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(sum)
}

// Print writes the report as a table.
func (r *IngestReport) Print(w io.Writer) {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "siteenv bench ingest: scale %s, seed %d, %d CPUs; baseline %s\n", r.Scale, r.Seed, r.CPUs, r.OGRVersion)
	fmt.Fprintf(w, "data: %d layers, %s features, %.1f MiB of GeoJSON (written in %.1f s); each layer file converted by each tool in its own process\n\n",
		r.Layers, group(r.Features), mib(r.GeoJSONBytes), r.WriteS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tsiteenv ingest (GeoParquet tiles)\togr2ogr -f GPKG\tingest/ogr2ogr\t\n")
	row := func(name string, a, b float64, format string) {
		fmt.Fprintf(tw, "%s\t"+format+"\t"+format+"\t%.3f\t\n", name, a, b, ratio(a, b))
	}
	row("wall time, all layers (s)", r.Ingest.WallS, r.OGR.WallS, "%.2f")
	row("features/s", ratio(float64(r.Features), r.Ingest.WallS), ratio(float64(r.Features), r.OGR.WallS), "%.0f")
	row("CPU time, user+sys (s)", r.Ingest.CPUS, r.OGR.CPUS, "%.2f")
	row("peak RSS (VmHWM), largest run (MiB)", mib(r.Ingest.PeakRSS), mib(r.OGR.PeakRSS), "%.1f")
	row("output (MiB)", mib(r.Ingest.OutBytes), mib(r.OGR.OutBytes), "%.1f")
	largest := fmt.Sprintf("largest layer %s (%s features)", r.Largest, group(r.LargestFeatures))
	row(largest+", wall (s)", r.LargestIngest.WallS, r.LargestOGR.WallS, "%.2f")
	row(largest+", features/s", ratio(float64(r.LargestFeatures), r.LargestIngest.WallS),
		ratio(float64(r.LargestFeatures), r.LargestOGR.WallS), "%.0f")
	tw.Flush()
	fmt.Fprintf(w, "ingest/ogr2ogr features/s ratio: %.3f, peak RSS %.1f MiB\n",
		ratio(r.OGR.WallS, r.Ingest.WallS), mib(r.Ingest.PeakRSS))
	if r.Points != nil {
		r.Points.print(w)
	}
}
