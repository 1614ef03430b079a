package bench

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"siteenv/ingest/synth"
)

// ErrMismatch: the engine and PostGIS returned different features for
// some query, beyond the boundary tolerance.
var ErrMismatch = errors.New("bench: the engine and PostGIS disagree")

// maxPrinted bounds the mismatches listed in full.
const maxPrinted = 20

// EngineReport is what RunEngine measured.
type EngineReport struct {
	Scale   synth.Scale
	Seed    int64
	CPUs    int
	Workers int

	Layers, Tiles int
	Features      int64
	IngestSeconds float64

	Queries       int
	Kinds         [3]int      // point, line, polygon sites
	LayersPer     map[int]int // layers per query -> queries
	ZeroRadius    int
	LayerRequests int

	Load loadStats

	PostGISVersion                         string
	PostGISLoadS, PostGISCopyS, PostGISIdx float64
	PostGISBytes                           int64
	PostGISSettings                        [][2]string

	Engine1, PostGIS1 latency // one client
	EngineN, PostGISN latency // Workers clients (when Workers > 1)

	Comparison comparison
	// Subdivided: the heavy scale's second baseline (nil otherwise).
	Subdivided *subdividedReport

	Budget budgetStats // shard traffic under the engine's budget
	Memory memFigures  // peak resident memory of the bench and PostGIS
}

func newEngineReport(opt EngineOptions, ds *dataset, qs []query, load loadStats, pg *postgis) *EngineReport {
	r := &EngineReport{
		Scale: opt.Scale, Seed: opt.Seed, CPUs: cpus(), Workers: opt.Workers,
		Layers: len(ds.layers), Tiles: ds.tiles, Features: ds.features, IngestSeconds: ds.ingestSeconds,
		Queries: len(qs), LayersPer: map[int]int{}, Load: load,
		PostGISVersion: pg.version, PostGISLoadS: pg.loadSeconds, PostGISCopyS: pg.copySeconds,
		PostGISIdx: pg.indexSeconds, PostGISBytes: pg.bytes, PostGISSettings: pg.settings,
	}
	for _, q := range qs {
		r.Kinds[q.kind]++
		r.LayersPer[len(q.layers)]++
		r.LayerRequests += len(q.layers)
		if q.radius == 0 {
			r.ZeroRadius++
		}
	}
	return r
}

// Err is ErrMismatch (wrapped, with counts) when mismatches remain that
// are not boundary cases: any the engine got wrong or that could not be
// examined, and with strict also those where the geodesic reference sides
// with the engine against PostGIS.
func (r *EngineReport) Err(strict bool) error {
	c := r.Comparison
	n := c.EngineWrong + c.CoverageWrong
	if strict {
		n += c.PostGISWrong
	}
	if n == 0 && c.Unexplained == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d features the engine got wrong, %d wrong outside_coverage answers, %d features PostGIS got wrong, in %d differing layer results (%d unexplained)",
		ErrMismatch, c.EngineWrong, c.CoverageWrong, c.PostGISWrong, c.Differing, c.Unexplained)
}

// P50Ratio and P99Ratio are engine latency over PostGIS latency, one client.
func (r *EngineReport) P50Ratio() float64 { return ratio(ms(r.Engine1.P50), ms(r.PostGIS1.P50)) }
func (r *EngineReport) P99Ratio() float64 { return ratio(ms(r.Engine1.P99), ms(r.PostGIS1.P99)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Print writes the report as a table; the last line is
// "engine/postgis p50 ratio: R50, p99 ratio: R99".
func (r *EngineReport) Print(w io.Writer) {
	c := r.Comparison
	fmt.Fprintf(w, "siteenv bench engine: scale %s, seed %d, %d CPUs\n", r.Scale, r.Seed, r.CPUs)
	fmt.Fprintf(w, "data: %s features in %d layers, %d tiles (ingested in %.1f s)\n",
		group(r.Features), r.Layers, r.Tiles, r.IngestSeconds)
	if r.Scale == ScaleHeavy {
		printHeavyMix(w, r)
	} else {
		fmt.Fprintf(w, "mix: %d queries: %d point, %d line, %d polygon sites; %d/%d/%d with 1/3/10 layers; radius log-uniform 1 m..10 km, %d at exactly 0\n",
			r.Queries, r.Kinds[kindPoint], r.Kinds[kindLine], r.Kinds[kindPolygon],
			r.LayersPer[1], r.LayersPer[3], r.LayersPer[10], r.ZeroRadius)
	}
	fmt.Fprintf(w, "check: %d layer results compared, %s features matched, %d layers failed on a limit (not compared)\n",
		c.Compared, group(c.Matched), c.Failed)
	fmt.Fprintf(w, "mismatches: %d layer results differ, %d features; by the geodesic reference: %d within 1 cm of the radius (excluded), %d engine wrong, %d PostGIS wrong; %d unexplained\n",
		c.Differing, len(c.Mismatches), c.Boundary, c.EngineWrong, c.PostGISWrong, c.Unexplained)
	if c.OutsideCoverage > 0 {
		fmt.Fprintf(w, "coverage: %d layer results the engine answered outside_coverage hold %d features for PostGIS, which knows no coverage (not compared); %d of %d examined have a feature wholly inside the coverage (engine wrong)\n",
			c.OutsideCoverage, c.OutsideFeatures, c.CoverageWrong, len(c.OutsideExamples))
		for i, x := range c.OutsideExamples {
			if i == maxPrinted {
				fmt.Fprintf(w, "  ... %d more\n", len(c.OutsideExamples)-maxPrinted)
				break
			}
			fmt.Fprintf(w, "  outside coverage: %s\n", x)
		}
	}
	for i, m := range c.Mismatches {
		if i == maxPrinted {
			fmt.Fprintf(w, "  ... %d more\n", len(c.Mismatches)-maxPrinted)
			break
		}
		fmt.Fprintf(w, "  mismatch: %s\n", m)
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tengine\tPostGIS %s\tengine/PostGIS\t\n", r.PostGISVersion)
	row := func(name string, a, b float64, unit string) {
		fmt.Fprintf(tw, "%s\t%.3f %s\t%.3f %s\t%.3f\t\n", name, a, unit, b, unit, ratio(a, b))
	}
	row("p50 latency, 1 client", ms(r.Engine1.P50), ms(r.PostGIS1.P50), "ms")
	row("p99 latency, 1 client", ms(r.Engine1.P99), ms(r.PostGIS1.P99), "ms")
	row("mean latency, 1 client", ms(r.Engine1.Mean), ms(r.PostGIS1.Mean), "ms")
	row("queries/s, 1 client", r.Engine1.QPS, r.PostGIS1.QPS, "q/s")
	if r.Workers > 1 {
		n := fmt.Sprintf(", %d clients", r.Workers)
		row("p50 latency"+n, ms(r.EngineN.P50), ms(r.PostGISN.P50), "ms")
		row("p99 latency"+n, ms(r.EngineN.P99), ms(r.PostGISN.P99), "ms")
		row("queries/s"+n, r.EngineN.QPS, r.PostGISN.QPS, "q/s")
	}
	tw.Flush()
	fmt.Fprintln(w)

	l := r.Load
	fmt.Fprintf(w, "engine shard load: %d shards, %s features in %.3f s of loading: %s features/s (%s features/s wall, %d evictions)\n",
		l.Loads, group(l.Features), l.LoadSeconds, group(int64(l.featuresPerSec())), group(int64(l.wallFeaturesPerSec())), l.Evictions)
	l.printMemory(w)
	r.Budget.print(w, l.Budget, l.NeedBytes)
	r.Memory.print(w)
	fmt.Fprintf(w, "PostGIS load: %.1f s wall with 2 connections (COPY %.1f s, GiST %.1f s summed over layers), %.1f MiB on disk; settings: %s\n",
		r.PostGISLoadS, r.PostGISCopyS, r.PostGISIdx, float64(r.PostGISBytes)/(1<<20), settingsString(r.PostGISSettings))
	if r.Subdivided != nil {
		r.Subdivided.print(w, "engine", r.Engine1, r.EngineN)
	}
	fmt.Fprintf(w, "engine/postgis p50 ratio: %.3f, p99 ratio: %.3f\n", r.P50Ratio(), r.P99Ratio())
}

// printMemory writes what the engine holds per feature and per vertex, by
// geometry kind: what an operator gives a replica per million features.
func (l loadStats) printMemory(w io.Writer) {
	fmt.Fprintf(w, "engine resident when every shard is loaded (Stats.LoadedBytes): %.2f GiB, %.1f bytes/feature, of which index %.1f\n",
		gib(l.NeedBytes), perFeature(l.NeedBytes, l.Features), perFeature(l.NeedIndex, l.Features))
	for k := range nKinds {
		kl := l.Kinds[k]
		if kl.Features == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s layers (%d): %s features, %s vertices: %.1f bytes/feature, %.2f bytes/vertex, %.0f MiB per million features",
			geomKind(k), kl.Layers, group(kl.Features), group(kl.Vertices), perFeature(kl.NeedBytes, kl.Features),
			perFeature(kl.NeedBytes, kl.Vertices), perFeature(kl.NeedBytes, kl.Features)*1e6/(1<<20))
		if l.Evictions == 0 {
			fmt.Fprintf(w, "; Go heap growth %.1f bytes/feature", perFeature(kl.HeapBytes, kl.Features))
		}
		fmt.Fprintln(w)
	}
}

func perFeature(b, n int64) float64 { return ratio(float64(b), float64(n)) }

func settingsString(settings [][2]string) string {
	var parts []string
	for _, s := range settings {
		parts = append(parts, s[0]+"="+s[1])
	}
	return strings.Join(parts, " ")
}

// group formats n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
