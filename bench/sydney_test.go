package bench

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"siteenv/tiles"
)

// TestSydneyScale runs `bench api` at the sydney scale, each of its five
// layers cut to its first 300 features: the layers are the register mix
// the scale promises (points, lines and polygons, every feature's centre
// in Greater Sydney), and the fresh and small mixes drawn around them
// answer as PostGIS does.
func TestSydneyScale(t *testing.T) {
	ctx := context.Background()
	src, err := newSydneySource(7)
	if err != nil {
		t.Fatal(err)
	}
	defs := src.Layers()
	if len(defs) != len(sydneyLayers) {
		t.Fatalf("%d layer definitions, want %d", len(defs), len(sydneyLayers))
	}
	types := map[string]bool{}
	for _, d := range defs {
		for _, gt := range d.GeometryTypes {
			types[gt] = true
		}
	}
	if !types["Point"] || !types["LineString"] || !types["Polygon"] {
		t.Errorf("geometry types %v: want points, lines and polygons", types)
	}
	var total int64
	for _, l := range sydneyLayers {
		total += l.n
	}
	if total != 500_000 {
		t.Errorf("the scale holds %d features, want 500,000", total)
	}
	for _, l := range sydneyLayers {
		n := 0
		err := src.Features(l.id, func(f tiles.Feature) error {
			if c := f.Geometry.Bound().Center(); !sydneyBox.Contains(c) {
				t.Errorf("%s %s: centre %v outside Greater Sydney", l.id, f.ID, c)
			}
			if n++; n == 200 {
				return errEnough
			}
			return nil
		})
		if err != nil || n != 200 {
			t.Errorf("%s: %d features, %v", l.id, n, err)
		}
	}

	var logs bytes.Buffer
	r, err := RunAPI(ctx, APIOptions{
		WorkDir: traversableTempDir(t), Scale: ScaleSydney, Seed: 7, Queries: 10, Clients: []int{1}, Reads: 10,
		SmallQueries: 10, FreshQueries: 30, MaxFeaturesPerLayer: 300,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatalf("RunAPI: %v\nlogs:\n%s", err, logs.String())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Layers != 5 || r.Features != 5*300 {
		t.Errorf("%d layers, %d features; want 5 and 1,500", r.Layers, r.Features)
	}
	for _, p := range append(r.SmallPasses, r.FreshPasses...) {
		if p.APICPU.Self <= 0 || p.PostGISCPU.Self <= 0 || p.APICPU.PostGIS < 0 || p.APICPU.Ledger < 0 {
			t.Errorf("pass with %d clients: CPU not measured: %+v %+v", p.Clients, p.APICPU, p.PostGISCPU)
		}
	}
	if fc := r.FreshComparison; len(r.FreshPasses) != 1 || fc.Compared == 0 || fc.Matched == 0 {
		t.Errorf("fresh mix not compared: %d passes, %+v", len(r.FreshPasses), fc)
	}
}
