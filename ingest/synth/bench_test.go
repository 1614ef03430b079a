package synth

import (
	"runtime"
	"sync"
	"testing"

	"siteenv/tiles"
)

// BenchmarkFeatures generates every layer of the small scale (200k
// features) once per iteration, one layer after another.
func BenchmarkFeatures(b *testing.B) {
	g := small(b)
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		for _, l := range g.layers {
			g.Features(l.ID, func(tiles.Feature) error { n++; return nil })
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "features/s")
}

// BenchmarkFeaturesParallel generates the layers of the small scale on
// GOMAXPROCS goroutines, as WriteLayerFiles does.
func BenchmarkFeaturesParallel(b *testing.B) {
	g := small(b)
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	var mu sync.Mutex
	for i := 0; i < b.N; i++ {
		jobs := make(chan string)
		var wg sync.WaitGroup
		for w := 0; w < runtime.GOMAXPROCS(0); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var local int64
				for id := range jobs {
					g.Features(id, func(tiles.Feature) error { local++; return nil })
				}
				mu.Lock()
				n += local
				mu.Unlock()
			}()
		}
		for _, l := range g.layers {
			jobs <- l.ID
		}
		close(jobs)
		wg.Wait()
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "features/s")
}

// BenchmarkParcels generates the small scale's lots (20k addresses and
// their parcels).
func BenchmarkParcels(b *testing.B) {
	g := small(b)
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		g.Parcels(func(Parcel) error { n++; return nil })
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "parcels/s")
}

// BenchmarkWriteFeatureCollection encodes the largest small-scale layer as
// GeoJSON.
func BenchmarkWriteFeatureCollection(b *testing.B) {
	g := small(b)
	b.ReportAllocs()
	var n int64
	for i := 0; i < b.N; i++ {
		w := &countWriter{}
		if err := g.WriteFeatureCollection("au-groundwater-bores", w); err != nil {
			b.Fatal(err)
		}
		n += g.FeatureCount("au-groundwater-bores")
		b.SetBytes(w.n)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "features/s")
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
