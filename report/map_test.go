package report

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paulmach/orb"
)

var update = flag.Bool("update", false, "rewrite the golden images in testdata/")

// Golden images: a change to what the map draws shows up here. JPEG
// encoders may differ in rounding, so the comparison allows a small
// per-pixel tolerance and a handful of outliers; a real change (a moved
// label, a missing layer) fails it and the test says where.
func TestMapGolden(t *testing.T) {
	cases := []struct {
		name string
		m    func() Map
	}{
		{"point-site", pointSiteMap},
		{"polygon-dense", func() Map { return denseMap(400) }},
		{"empty-section", emptyMap},
		{"state-border", borderMap},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := RenderMap(tc.m())
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".jpg")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./report -run TestMapGolden -update to create it)", err)
			}
			if msg := compareImages(t, want, got); msg != "" {
				out := filepath.Join(t.TempDir(), tc.name+".jpg")
				_ = os.WriteFile(out, got, 0o644)
				t.Errorf("%s differs from %s: %s; the new render is %s", tc.name, golden, msg, out)
			}
		})
	}
}

// compareImages decodes both JPEGs and reports how they differ ("" when
// within tolerance): each channel may differ by 24 levels, and at most 40
// pixels may exceed that (one missing marker is about 100).
func compareImages(t *testing.T, a, b []byte) string {
	t.Helper()
	ia, err := jpeg.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if ia.Bounds() != ib.Bounds() {
		return fmt.Sprintf("size %v, want %v", ib.Bounds(), ia.Bounds())
	}
	var bad int
	var where image.Rectangle
	r := ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := ia.At(x, y).RGBA()
			r2, g2, b2, _ := ib.At(x, y).RGBA()
			if absDiff(r1, r2) > 24<<8 || absDiff(g1, g2) > 24<<8 || absDiff(b1, b2) > 24<<8 {
				bad++
				where = where.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	if limit := 40; bad > limit {
		return fmt.Sprintf("%d pixels differ (limit %d), within %v", bad, limit, where)
	}
	return ""
}

// The golden comparison is not blind: one marker fewer is caught (the
// feature is moved onto another, so the legend's count is unchanged).
func TestGoldenComparisonCatchesOneFeature(t *testing.T) {
	m := pointSiteMap()
	m.Layers[1].Features[0] = m.Layers[1].Features[1]
	got, err := RenderMap(m)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "point-site.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if compareImages(t, want, got) == "" {
		t.Fatal("a map missing one feature passed the golden comparison")
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestMapIsJPEGOfContractSize(t *testing.T) {
	b, err := RenderMap(pointSiteMap())
	if err != nil {
		t.Fatal(err)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if format != "jpeg" || cfg.Width != 1280 || cfg.Height != 900 {
		t.Fatalf("got %s %dx%d, want jpeg 1280x900", format, cfg.Width, cfg.Height)
	}
	if len(b) > 12<<20 {
		t.Fatalf("%d bytes, over 12 MiB", len(b))
	}
}

// The same inputs give the same bytes (an ETag over the inputs relies on it).
func TestMapDeterministic(t *testing.T) {
	for _, m := range []func() Map{pointSiteMap, borderMap} {
		a, err := RenderMap(m())
		if err != nil {
			t.Fatal(err)
		}
		b, err := RenderMap(m())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("two renders of the same map differ")
		}
	}
	m := pointSiteMap()
	m.Date = m.Date.Add(24 * time.Hour)
	a, _ := RenderMap(pointSiteMap())
	b, _ := RenderMap(m)
	if bytes.Equal(a, b) {
		t.Fatal("the date line does not reach the image")
	}
}

// Every feature within the buffer leaves a mark: a layer of one tiny
// polygon (smaller than a pixel) still changes the image where it lies.
func TestTinyFeatureIsVisible(t *testing.T) {
	base := Map{Title: "t", Section: "s", Date: renderDate, Site: parramatta,
		Layers: []Layer{{ID: "a", Name: "A", RadiusM: 2000, Coverage: "complete"}}}
	with := base
	with.Layers = []Layer{{ID: "a", Name: "A", RadiusM: 2000, Coverage: "complete",
		Features: []orb.Geometry{squareAt(offset(parramatta, 700, 500), 0.5)}}}
	ia, err := DrawMap(base)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := DrawMap(with)
	if err != nil {
		t.Fatal(err)
	}
	// Where the feature is: the frame maps 700 m east, 500 m north.
	f := newFrame(parramatta, 2000, mapPanel)
	x, y := f.px(offset(parramatta, 700, 500))
	changed := false
	for dy := -3; dy <= 3; dy++ {
		for dx := -3; dx <= 3; dx++ {
			if ia.RGBAAt(int(x)+dx, int(y)+dy) != ib.RGBAAt(int(x)+dx, int(y)+dy) {
				changed = true
			}
		}
	}
	if !changed {
		t.Fatal("a sub-pixel polygon left no mark on the map")
	}
}

func TestMapRefusesBadSite(t *testing.T) {
	for _, g := range []orb.Geometry{nil, orb.Polygon{}, orb.Point{200, 0}} {
		if _, err := RenderMap(Map{Site: g}); !errors.Is(err, ErrInvalidMap) {
			t.Errorf("site %v: err %v, want ErrInvalidMap", g, err)
		}
	}
}

func TestNiceLengthAndFormat(t *testing.T) {
	for _, tc := range []struct {
		in, want float64
	}{{0.5, 1}, {7, 5}, {180, 100}, {260, 200}, {999, 500}, {1200, 1000}, {4999, 2000}} {
		if got := niceLength(tc.in); got != tc.want {
			t.Errorf("niceLength(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   float64
		want string
	}{{250, "250 m"}, {1000, "1 km"}, {2500, "2.5 km"}, {10000, "10 km"}} {
		if got := Distance(tc.in); got != tc.want {
			t.Errorf("Distance(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// mixedMap is a section of n features: polygons, lines and points in
// three layers around a polygon site, for the benchmarks.
func mixedMap(n int) Map {
	m := denseMap(3)
	m.Layers = []Layer{
		{ID: "p", Name: "Polygons", RadiusM: 2000, Coverage: "complete", Features: scatter(31, parramatta, 2000, n/3, "poly")},
		{ID: "l", Name: "Lines", RadiusM: 2000, Coverage: "complete", Features: scatter(32, parramatta, 2000, n/3, "line")},
		{ID: "x", Name: "Points", RadiusM: 2000, Coverage: "complete", Features: scatter(33, parramatta, 2000, n-2*(n/3), "point")},
	}
	return m
}

// BenchmarkMapImage renders sections of 10, 5,000 and 100,000 features
// (goals on the 2-core machine: p50 under 60 ms, 150 ms and 1 s; peak
// extra heap under 64 MiB for the largest). peak-MiB is the largest live
// heap above the pre-render baseline, sampled every millisecond.
func BenchmarkMapImage(b *testing.B) {
	for _, n := range []int{10, 5000, 100_000} {
		m := mixedMap(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			var peak atomic.Int64
			runtime.GC()
			base := heapBytes()
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				tk := time.NewTicker(time.Millisecond)
				defer tk.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tk.C:
						if h := heapBytes() - base; h > peak.Load() {
							peak.Store(h)
						}
					}
				}
			}()
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := RenderMap(m); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(t0))
			}
			b.StopTimer()
			close(stop)
			<-done
			b.ReportMetric(float64(median(times).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-MiB")
		})
	}
}

func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}
