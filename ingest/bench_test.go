package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"siteenv/store"
)

// BenchmarkIngestGeoJSON ingests a generated FeatureCollection of 100,000
// features (two thirds points, one third small polygons, every property
// type) from file to published tiles in a file store. Set
// SITEENV_BENCH_FEATURES to change the size.
func BenchmarkIngestGeoJSON(b *testing.B) {
	n := 100_000
	if v := os.Getenv("SITEENV_BENCH_FEATURES"); v != "" {
		fmt.Sscan(v, &n)
	}
	def, err := ParseLayerDef([]byte(testLayerJSON))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "bench.geojson")
	writeSynthetic(b, path, n, 42)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	var features int64
	for i := 0; i < b.N; i++ {
		st, err := store.NewFileStore(filepath.Join(dir, fmt.Sprintf("store%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		sum, err := Run(context.Background(), Options{Layer: def, Store: st, TempDir: dir}, path)
		if err != nil {
			b.Fatal(err)
		}
		features += sum.Features
	}
	b.ReportMetric(float64(features)/b.Elapsed().Seconds(), "features/s")
}
