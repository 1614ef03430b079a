package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"siteenv/geo"
	"siteenv/ingest"
	"siteenv/ingest/synth"
	"siteenv/store"
	"siteenv/tiles"
)

// The heavy scale: the two heavy-polygon layers of synth.HeavyFeatures
// (about 380 polygons of 1,000 to 250,000 vertices, 6.6 million vertices)
// and the site mix of synth.HeavySites (60% points, 40% small lots,
// radius log-uniform 10 m-5 km, one or both layers), compared with PostGIS
// twice: the polygons as loaded, and subdivided as a careful PostGIS user
// does by hand (ST_Subdivide to at most 256 vertices a piece, a GiST index
// over the pieces, SELECT DISTINCT).

// ScaleHeavy selects the heavy-polygon dataset in `bench engine`.
const ScaleHeavy synth.Scale = "heavy"

// ParseScale parses a bench scale: synth's (small, medium, large), heavy
// or sydney.
func ParseScale(s string) (synth.Scale, error) {
	switch sc := synth.Scale(strings.ToLower(strings.TrimSpace(s))); sc {
	case ScaleHeavy, ScaleSydney:
		return sc, nil
	}
	sc, err := synth.ParseScale(s)
	if err != nil {
		return "", fmt.Errorf("%w (or heavy, sydney)", err)
	}
	return sc, nil
}

// heavyPostGISFeatures sizes PostGIS's buffer cache for the heavy data
// (sharedBuffersMiB: 512 MiB, room for both tables and their indexes): its
// 380 features are 110 MB of geography, far more than 380 typical ones.
const heavyPostGISFeatures = 512 << 10

// heavySubdivideMax is ST_Subdivide's max_vertices.
const heavySubdivideMax = 256

func heavyLayerDef(id string) (*ingest.LayerDef, error) {
	name := map[string]string{
		synth.HeavyFloodLayer:    "Flood planning area (heavy)",
		synth.HeavyBushfireLayer: "Bushfire prone land (heavy)",
	}[id]
	raw, err := json.Marshal(map[string]any{
		"layer_id": id, "section_key": "hazards", "section_name": "Hazards", "name": name,
		"description":    "Synthetic polygons of thousands to hundreds of thousands of vertices (bench heavy scale).",
		"schema_version": "1",
		"field_schema": map[string]any{
			"category": map[string]any{"type": "string"},
			"vertices": map[string]any{"type": "integer"},
		},
		"units":        map[string]any{"category": nil, "vertices": nil},
		"radius_max_m": 10000,
		"sources": []map[string]any{{"source_variant_id": "heavy-v1", "provider": "siteenv bench",
			"licence": "CC-BY-4.0", "attribution": "Synthetic data"}},
		"jurisdictions": []string{"NSW"}, "geometry_types": []string{"Polygon"}, "coverage": nil,
	})
	if err != nil {
		return nil, err
	}
	return ingest.ParseLayerDef(raw)
}

// prepareHeavyWorkload is prepareWorkload for ScaleHeavy (w.dir made).
// w.gen stays nil: the heavy layers are not a synth.Generator's.
func prepareHeavyWorkload(ctx context.Context, w workload, seed int64, queries int, log *slog.Logger) (workload, error) {
	var err error
	if w.ds, err = buildHeavyDataset(ctx, w.dir, seed, log); err != nil {
		return w, err
	}
	w.mix, err = heavyMix(w.ds, seed, queries)
	return w, err
}

func buildHeavyDataset(ctx context.Context, dir string, seed int64, log *slog.Logger) (*dataset, error) {
	root := filepath.Join(dir, "store")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("bench: store dir: %w", err)
	}
	st, err := store.NewFileStore(root)
	if err != nil {
		return nil, fmt.Errorf("bench: file store: %w", err)
	}
	ds := &dataset{store: st}
	start := time.Now()
	for _, id := range synth.HeavyLayers {
		l, err := ingestHeavyLayer(ctx, st, id, seed, dir)
		if err != nil {
			return nil, fmt.Errorf("bench: ingest %s: %w", id, err)
		}
		ds.layers = append(ds.layers, l)
		ds.features += l.manifest.FeatureCount
		ds.tiles += len(l.manifest.Tiles)
	}
	ds.ingestSeconds = time.Since(start).Seconds()
	slices.SortFunc(ds.layers, func(a, b *layer) int { return strings.Compare(a.id, b.id) })
	log.Info("bench: heavy dataset ingested", "layers", len(ds.layers), "features", ds.features, "tiles", ds.tiles,
		"seconds", round3(ds.ingestSeconds))
	return ds, nil
}

func ingestHeavyLayer(ctx context.Context, st store.Store, id string, seed int64, tmp string) (*layer, error) {
	def, err := heavyLayerDef(id)
	if err != nil {
		return nil, err
	}
	sum, err := ingest.RunRows(ctx, ingest.Options{Layer: def, Store: st, TempDir: tmp, CreatedBy: "siteenv bench"},
		func(yield func(ingest.Row) error) error {
			var n int64
			return synth.HeavyFeatures(seed, id, func(f tiles.Feature) error {
				n++
				return yield(ingest.Row{File: "synth", Row: n, Feature: f})
			})
		})
	if err != nil {
		return nil, err
	}
	if sum.Rejected > 0 {
		return nil, fmt.Errorf("%d features rejected", sum.Rejected)
	}
	return readLayer(ctx, st, sum.LayerID, sum.ReleaseID)
}

// heavyMix turns synth.HeavySites into the bench's queries.
func heavyMix(ds *dataset, seed int64, n int) ([]query, error) {
	sites, err := synth.HeavySites(seed, n)
	if err != nil {
		return nil, err
	}
	qs := make([]query, n)
	for i, s := range sites {
		q := &qs[i]
		q.site, q.radius = s.Geometry, s.RadiusM
		q.kind = kindPoint
		if _, ok := s.Geometry.(orb.Polygon); ok {
			q.kind = kindPolygon
		}
		if err := geo.Validate(q.site, 0); err != nil {
			return nil, fmt.Errorf("bench: heavy site %d: %w", i, err)
		}
		for _, id := range s.Layers {
			li := slices.IndexFunc(ds.layers, func(l *layer) bool { return l.id == id })
			if li < 0 {
				return nil, fmt.Errorf("bench: heavy site names layer %s", id)
			}
			q.layers = append(q.layers, li)
		}
		slices.Sort(q.layers)
		if q.wkb, err = wkb.Marshal(q.site); err != nil {
			return nil, fmt.Errorf("bench: site wkb: %w", err)
		}
	}
	return qs, nil
}

// The subdivided baseline: one table of pieces (not partitioned: two
// layers), a GiST index over the pieces, DISTINCT over (layer, feature).
const (
	postgisSubTable  = "bench_feature_sub"
	postgisSubCreate = `CREATE TABLE bench_feature_sub AS
		SELECT layer_id, id, ST_Subdivide(geog::geometry, %d)::geography AS geog FROM bench_feature`
	postgisSubQuery = `SELECT DISTINCT layer_id, id FROM bench_feature_sub
		WHERE layer_id IN (%s) AND ST_DWithin(geog, $1::bytea::geography, $2::float8, true)`
	postgisSubPrewarm = `SELECT pg_prewarm('bench_feature_sub'::regclass) +
		coalesce((SELECT sum(pg_prewarm(indexrelid)) FROM pg_index WHERE indrelid = 'bench_feature_sub'::regclass), 0)`
	postgisSubSize = `SELECT pg_total_relation_size('bench_feature_sub'::regclass)`
)

// subdividedReport is the subdivided baseline's part of an EngineReport.
type subdividedReport struct {
	Pieces       int64
	LoadS        float64 // subdivide, index, vacuum
	Bytes        int64
	PostGIS1     latency
	PostGISN     latency // Workers clients (when Workers > 1)
	Compared     int     // layer results compared with the engine's
	Differing    int     // of them, with another feature set
	FirstDiffers string  // the first differing one, described
	Workers      int
}

func subQueryName(k int) string { return fmt.Sprintf("bench_sub_dwithin_%d", k) }

// stmt is the prepared statement a query of k layers runs: on the
// subdivided table once useSubdivided is set.
func (pg *postgis) stmt(k int) string {
	if pg.subdivided {
		return subQueryName(k)
	}
	return queryName(k)
}

// loadSubdivided builds the subdivided table from the loaded one and
// prepares its statements on every query connection.
func (pg *postgis) loadSubdivided(ctx context.Context, qs []query) (pieces int64, seconds float64, bytes int64, err error) {
	conn, err := pg.connect(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close(ctx)
	start := time.Now()
	for _, s := range []string{fmt.Sprintf(postgisSubCreate, heavySubdivideMax),
		"CREATE INDEX ON " + postgisSubTable + " USING gist (geog)", "VACUUM (ANALYZE) " + postgisSubTable} {
		if _, err := conn.Exec(ctx, s); err != nil {
			return 0, 0, 0, fmt.Errorf("bench: postgres: subdivide: %w", err)
		}
	}
	seconds = time.Since(start).Seconds()
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+postgisSubTable).Scan(&pieces); err != nil {
		return 0, 0, 0, fmt.Errorf("bench: postgres: subdivide: %w", err)
	}
	if err := conn.QueryRow(ctx, postgisSubSize).Scan(&bytes); err != nil {
		return 0, 0, 0, fmt.Errorf("bench: postgres: subdivide: %w", err)
	}
	var blocks int64
	if err := conn.QueryRow(ctx, postgisSubPrewarm).Scan(&blocks); err != nil {
		return 0, 0, 0, fmt.Errorf("bench: postgres: prewarm: %w", err)
	}
	counts := map[int]bool{}
	for _, q := range qs {
		counts[len(q.layers)] = true
	}
	for _, c := range pg.conns {
		for k := range counts {
			ps := make([]string, k)
			for i := range ps {
				ps[i] = fmt.Sprintf("$%d::text", i+3)
			}
			if _, err := c.Prepare(ctx, subQueryName(k), fmt.Sprintf(postgisSubQuery, strings.Join(ps, ", "))); err != nil {
				return 0, 0, 0, fmt.Errorf("bench: postgres: prepare: %w", err)
			}
		}
	}
	pg.log.Info("bench: PostGIS subdivided", "pieces", pieces, "seconds", round3(seconds), "bytes", bytes)
	return pieces, seconds, bytes, nil
}

// runSubdivided loads the subdivided baseline, runs the mix on it (one
// client, then workers) and compares its answers with the engine's.
func runSubdivided(ctx context.Context, pg *postgis, ds *dataset, qs []query, workers int, eng [][]outcome, log *slog.Logger) (*subdividedReport, error) {
	sr := &subdividedReport{Workers: workers}
	var err error
	if sr.Pieces, sr.LoadS, sr.Bytes, err = pg.loadSubdivided(ctx, qs); err != nil {
		return nil, err
	}
	pg.subdivided = true
	defer func() { pg.subdivided = false }()
	nw := min(warmupQueries, len(qs))
	if _, err := postgisPass(ctx, pg, ds, qs[:nw], 1, nil); err != nil {
		return nil, fmt.Errorf("bench: postgis subdivided warm-up: %w", err)
	}
	log.Info("bench: PostGIS subdivided pass", "queries", len(qs), "workers", 1)
	out := make([][]outcome, len(qs))
	p, err := postgisPass(ctx, pg, ds, qs, 1, out)
	if err != nil {
		return nil, fmt.Errorf("bench: postgis subdivided: %w", err)
	}
	sr.PostGIS1 = p.summary()
	for i, q := range qs {
		for j, li := range q.layers {
			a, b := eng[i][j], out[i][j]
			if a.failed != "" || a.outside {
				continue
			}
			sr.Compared++
			if a.digest != b.digest {
				sr.Differing++
				if sr.FirstDiffers == "" {
					sr.FirstDiffers = fmt.Sprintf("query %d layer %s: engine %d features, subdivided PostGIS %d", i, ds.layers[li].id, a.n, b.n)
				}
			}
		}
	}
	if workers > 1 {
		if p, err = postgisPass(ctx, pg, ds, qs, workers, nil); err != nil {
			return nil, fmt.Errorf("bench: postgis subdivided: %w", err)
		}
		sr.PostGISN = p.summary()
	}
	return sr, nil
}

// print writes the subdivided baseline's lines of a report: side (engine
// or API) took one with one client, n with sr.Workers.
func (sr *subdividedReport) print(w io.Writer, side string, one, n latency) {
	fmt.Fprintf(w, "PostGIS subdivided (ST_Subdivide %d + GiST + DISTINCT): %s pieces, built in %.1f s, %.1f MiB; %d layer results compared with the engine, %d differ\n",
		heavySubdivideMax, group(sr.Pieces), sr.LoadS, float64(sr.Bytes)/(1<<20), sr.Compared, sr.Differing)
	if sr.FirstDiffers != "" {
		fmt.Fprintf(w, "  first difference: %s\n", sr.FirstDiffers)
	}
	fmt.Fprintf(w, "p50 latency, 1 client: %s %.3f ms, subdivided PostGIS %.3f ms, %s/subdivided %.3f\n",
		side, ms(one.P50), ms(sr.PostGIS1.P50), side, ratio(ms(one.P50), ms(sr.PostGIS1.P50)))
	fmt.Fprintf(w, "p99 latency, 1 client: %s %.3f ms, subdivided PostGIS %.3f ms, %s/subdivided %.3f\n",
		side, ms(one.P99), ms(sr.PostGIS1.P99), side, ratio(ms(one.P99), ms(sr.PostGIS1.P99)))
	if sr.Workers > 1 {
		fmt.Fprintf(w, "p50/p99 latency, %d clients: %s %.3f/%.3f ms, subdivided PostGIS %.3f/%.3f ms\n", sr.Workers,
			side, ms(n.P50), ms(n.P99), ms(sr.PostGISN.P50), ms(sr.PostGISN.P99))
	}
}

func printHeavyMix(w io.Writer, r *EngineReport) {
	fmt.Fprintf(w, "mix: %d queries: %d point, %d small-lot sites; %d/%d with 1/2 layers; radius log-uniform 10 m..5 km\n",
		r.Queries, r.Kinds[kindPoint], r.Kinds[kindPolygon], r.LayersPer[1], r.LayersPer[2])
}

// benchCatalogue is what the API bench publishes: the generator's sections
// and layers, or (g nil: the heavy scale) the heavy layers.
func benchCatalogue(g layerSource) ([]synth.Section, []*ingest.LayerDef, error) {
	if g != nil {
		return g.Sections(), g.Layers(), nil
	}
	var defs []*ingest.LayerDef
	for _, id := range synth.HeavyLayers {
		d, err := heavyLayerDef(id)
		if err != nil {
			return nil, nil, err
		}
		defs = append(defs, d)
	}
	return []synth.Section{{Key: "hazards", Name: "Hazards"}}, defs, nil
}
