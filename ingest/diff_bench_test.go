package ingest

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/store"
	"siteenv/tiles"
)

// BenchmarkDiffReleases compares two releases of 2,000,000 point features
// (the size of the whole --scale medium demo) that differ in 4% of
// features: per hundred, one removed, one changed, one renamed (removed and
// added); the changed features are written as CSV to io.Discard. Set SITEENV_BENCH_FEATURES
// to change the size. Run with -benchtime=1x; the two ingests before the
// timer take most of the wall time.
func BenchmarkDiffReleases(b *testing.B) {
	n := 2_000_000
	if v := os.Getenv("SITEENV_BENCH_FEATURES"); v != "" {
		fmt.Sscan(v, &n)
	}
	def, err := ParseLayerDef([]byte(testLayerJSON))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	st, err := store.NewFileStore(dir + "/store")
	if err != nil {
		b.Fatal(err)
	}
	release := func(second bool) string {
		sum, err := RunRows(context.Background(), Options{Layer: def, Store: st, TempDir: dir}, func(yield func(Row) error) error {
			for i := 0; i < n; i++ {
				count := int64(i % 1000)
				switch {
				case second && i%100 == 0:
					continue // removed
				case second && i%100 == 1:
					count = -1 // changed
				}
				id := fmt.Sprintf("f%d", i)
				if second && i%100 == 2 {
					id = fmt.Sprintf("new%d", i) // and one added for each removed
				}
				lon, lat := 113+float64(i%4000)*0.01, -10-float64(i/4000)*0.06
				if err := yield(Row{File: "bench", Row: int64(i + 1), Feature: tiles.Feature{ID: id, Geometry: orb.Point{lon, lat},
					Properties: map[string]any{"name": "n", "count": count}}}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return sum.ReleaseID
	}
	from, to := release(false), release(true)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sum, err := DiffReleases(context.Background(), st, def.LayerID, from, to, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		// Per hundred: f0 removed, f1 changed, f2 renamed (removed and added).
		if k := int64(n) / 100; sum.Removed != 2*k || sum.Added != k || sum.Changed != k {
			b.Fatalf("diff %+v, want %d removed, %d added and changed", sum, 2*k, k)
		}
	}
	b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "features/s")
}
