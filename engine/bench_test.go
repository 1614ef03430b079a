package engine

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/paulmach/orb"
	"github.com/tidwall/rtree"

	"siteenv/store"
	"siteenv/tiles"
)

// Benchmarks over a synthetic Sydney: 1M points (clustered, over about
// 100 x 100 km, in 20 tiles of 50,000 as ingest writes them) and 50,000
// parcel-like polygons, built once per test binary in a temporary
// directory.
//
//	go test -run '^$' -bench . -benchtime 2s ./engine/

const (
	benchPoints   = 1_000_000
	benchPolygons = 50_000
	benchTileRows = 50_000
)

type benchData struct {
	dir           string
	store         *store.FileStore
	points, polys *tiles.Manifest
	err           error
}

var (
	benchOnce sync.Once
	bench     benchData
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{bench.dir, heavy.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// tempFileStore is a FileStore in a new temporary directory (dir is set
// whenever it was made, for TestMain to remove).
func tempFileStore(prefix string) (dir string, st *store.FileStore, err error) {
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", nil, err
	}
	st, err = store.NewFileStore(dir)
	return dir, st, err
}

func benchSetup(b *testing.B) *benchData {
	b.Helper()
	benchOnce.Do(func() {
		var st *store.FileStore
		if bench.dir, st, bench.err = tempFileStore("siteenv-engine-bench-"); bench.err != nil {
			return
		}
		bench.store = st
		bench.points = publish(b, st, "bench-points", benchTiles(benchPointFeatures()), nil)
		bench.polys = publish(b, st, "bench-parcels", benchTiles(benchPolygonFeatures()), nil)
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return &bench
}

// benchXY draws a position in metres about Sydney: 70% in clusters (town
// centres), 30% spread over ±50 km.
func benchXY(rng *rand.Rand, centres [][2]float64) (float64, float64) {
	if rng.Float64() < 0.3 {
		return (rng.Float64()*2 - 1) * 50000, (rng.Float64()*2 - 1) * 50000
	}
	c := centres[rng.IntN(len(centres))]
	return c[0] + rng.NormFloat64()*3000, c[1] + rng.NormFloat64()*3000
}

func benchCentres(rng *rand.Rand) [][2]float64 {
	var cs [][2]float64
	for i := 0; i < 40; i++ {
		cs = append(cs, [2]float64{(rng.Float64()*2 - 1) * 40000, (rng.Float64()*2 - 1) * 40000})
	}
	return cs
}

func benchPointFeatures() []tiles.Feature {
	rng := rand.New(rand.NewPCG(1, 1))
	cs := benchCentres(rng)
	m := newMetric(sydney)
	feats := make([]tiles.Feature, benchPoints)
	for i := range feats {
		x, y := benchXY(rng, cs)
		feats[i] = tiles.Feature{ID: fmt.Sprintf("a%07d", i), Geometry: m.at(x, y),
			Properties: map[string]any{"kind": "address", "n": int64(i)}}
	}
	return feats
}

func benchPolygonFeatures() []tiles.Feature {
	rng := rand.New(rand.NewPCG(2, 2))
	cs := benchCentres(rand.New(rand.NewPCG(1, 1)))
	m := newMetric(sydney)
	feats := make([]tiles.Feature, benchPolygons)
	for i := range feats {
		x, y := benchXY(rng, cs)
		w, h := 15+rng.Float64()*30, 20+rng.Float64()*40
		feats[i] = tiles.Feature{ID: fmt.Sprintf("p%07d", i), Geometry: m.square(x, y, x+w, y+h),
			Properties: map[string]any{"kind": "parcel", "n": int64(i)}}
	}
	return feats
}

// benchTiles cuts features into compact tiles of benchTileRows: slabs by
// longitude, each cut by latitude.
func benchTiles(feats []tiles.Feature) [][]tiles.Feature {
	c := func(f tiles.Feature) orb.Point { return f.Geometry.Bound().Center() }
	slices.SortFunc(feats, func(a, b tiles.Feature) int { return cmp.Compare(c(a)[0], c(b)[0]) })
	n := (len(feats) + benchTileRows - 1) / benchTileRows
	slabs := int(math.Ceil(math.Sqrt(float64(n))))
	per := (len(feats) + slabs - 1) / slabs
	var out [][]tiles.Feature
	for i := 0; i < len(feats); i += per {
		s := feats[i:min(i+per, len(feats))]
		slices.SortFunc(s, func(a, b tiles.Feature) int { return cmp.Compare(c(a)[1], c(b)[1]) })
		for j := 0; j < len(s); j += benchTileRows {
			out = append(out, s[j:min(j+benchTileRows, len(s))])
		}
	}
	return out
}

func benchSites(kind int, n int) []orb.Geometry {
	rng := rand.New(rand.NewPCG(uint64(kind), 77))
	m := newMetric(sydney)
	sites := make([]orb.Geometry, n)
	for i := range sites {
		x, y := (rng.Float64()*2-1)*30000, (rng.Float64()*2-1)*30000
		switch kind {
		case 0:
			sites[i] = m.at(x, y)
		case 1:
			sites[i] = randomLine(m, rng, x, y, 5, 100, 300)
		default:
			sites[i] = orb.Polygon{starRing(m, rng, x, y, 8, 100, 250, false)}
		}
	}
	return sites
}

// benchQuery times queries of one site kind on both layers, the shards
// warm. Timed sites differ from the warm-up ones. Sub-benchmarks "cold"
// clear the engine's cache of site projections before every query (a
// site in an area no recent query touched: NewLocal's cost is paid).
func benchQuery(b *testing.B, kind int) {
	d := benchSetup(b)
	layers := []LayerRequest{layerReq(d.points), layerReq(d.polys)}
	warm := benchSites(kind+10, 256)
	sites := benchSites(kind, 4096)
	for _, r := range []float64{100, 1000, 10000} {
		for _, cold := range []bool{false, true} {
			name := fmt.Sprintf("r=%g", r)
			if cold {
				name += "/cold"
			}
			b.Run(name, func(b *testing.B) {
				e := newEngine(b, d.store, Options{})
				ctx := context.Background()
				for _, s := range warm {
					if _, err := e.Query(ctx, Request{Site: s, RadiusM: r, Layers: layers}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				matches := 0
				for i := 0; i < b.N; i++ {
					if cold {
						e.mu.Lock()
						clear(e.mu.locals)
						e.mu.Unlock()
					}
					res, err := e.Query(ctx, Request{Site: sites[i%len(sites)], RadiusM: r, Layers: layers})
					if err != nil {
						b.Fatal(err)
					}
					for _, lr := range res {
						if lr.Count != nil {
							matches += *lr.Count
						}
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
				b.ReportMetric(float64(matches)/float64(b.N), "matches/query")
				if s := e.Stats(); s.Loads > int64(len(d.points.Tiles)+len(d.polys.Tiles)) {
					b.Fatalf("shards reloaded: %+v", s)
				}
			})
		}
	}
}

func BenchmarkQueryPoint(b *testing.B)   { benchQuery(b, 0) }
func BenchmarkQueryLine(b *testing.B)    { benchQuery(b, 1) }
func BenchmarkQueryPolygon(b *testing.B) { benchQuery(b, 2) }

// BenchmarkQueryPointParallel measures throughput with every CPU querying.
func BenchmarkQueryPointParallel(b *testing.B) {
	d := benchSetup(b)
	layers := []LayerRequest{layerReq(d.points), layerReq(d.polys)}
	sites := benchSites(0, 256)
	e := newEngine(b, d.store, Options{})
	ctx := context.Background()
	for _, s := range sites {
		if _, err := e.Query(ctx, Request{Site: s, RadiusM: 1000, Layers: layers}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := e.Query(ctx, Request{Site: sites[i%len(sites)], RadiusM: 1000, Layers: layers}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}

// BenchmarkShardLoad loads a 50,000-point tile from the store: read, decode
// and index. It reports the load rate and the memory a point feature takes
// (all of it, and the part beyond the tile's columns: the index).
func BenchmarkShardLoad(b *testing.B) {
	d := benchSetup(b)
	benchShardLoad(b, d.store, d.points.Tiles[len(d.points.Tiles)/2])
}

func benchShardLoad(b *testing.B, st store.Store, te tiles.TileEntry) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var s *shard
	for i := 0; i < b.N; i++ {
		var err error
		if s, err = loadShard(ctx, st, te); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(s.tile.Len())
	b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds(), "features/s")
	b.ReportMetric(float64(s.bytes)/n, "resident-B/feature")
	b.ReportMetric(float64(s.ix.bytes())/n, "index-B/feature")
}

// BenchmarkShardBuild is the engine's own share of a load: indexing a
// decoded tile (BenchmarkShardLoad minus the Parquet decoding).
func BenchmarkShardBuild(b *testing.B) {
	d := benchSetup(b)
	benchShardBuild(b, d.store, d.points.Tiles[len(d.points.Tiles)/2])
}

func benchShardBuild(b *testing.B, st store.Store, te tiles.TileEntry) {
	ctx := context.Background()
	obj, err := st.Open(ctx, te.Key)
	if err != nil {
		b.Fatal(err)
	}
	defer obj.Close()
	// A decoded tile that still holds its WKB: a loaded shard's tile does
	// not (newShard moves the geometries into its store).
	t, err := tiles.ReadTileWith(ctx, obj, obj.Size(), tiles.ReadTileOptions{SkipBounds: true, SkipProperties: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tc := *t // buildShard clears the tile's WKB and Bounds
		if _, err := buildShard(&tc, te.Key); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(t.Len())*float64(b.N)/b.Elapsed().Seconds(), "features/s")
}

// BenchmarkShardLoadParcels is BenchmarkShardLoad on a tile of the parcel
// polygons.
func BenchmarkShardLoadParcels(b *testing.B) {
	d := benchSetup(b)
	benchShardLoad(b, d.store, d.polys.Tiles[len(d.polys.Tiles)/2])
}

// BenchmarkShardBuildParcels is BenchmarkShardBuild on a tile of the
// parcel polygons.
func BenchmarkShardBuildParcels(b *testing.B) {
	d := benchSetup(b)
	benchShardBuild(b, d.store, d.polys.Tiles[len(d.polys.Tiles)/2])
}

// BenchmarkIndexBuild compares the packed index with github.com/tidwall/rtree
// on 50,000 Hilbert-ordered point boxes.
func BenchmarkIndexBuild(b *testing.B) {
	d := benchSetup(b)
	s, err := loadShard(context.Background(), d.store, d.points.Tiles[0])
	if err != nil {
		b.Fatal(err)
	}
	leaves := slices.Clone(s.ix.boxes[:s.ix.len()])
	b.Run("packed", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			newIndex(slices.Clone(leaves))
		}
		b.ReportMetric(float64(len(leaves))*float64(b.N)/b.Elapsed().Seconds(), "boxes/s")
	})
	b.Run("tidwall", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var tr rtree.RTreeGN[float32, int32]
			for j, l := range leaves {
				tr.Insert([2]float32{l.minX, l.minY}, [2]float32{l.maxX, l.maxY}, int32(j))
			}
		}
		b.ReportMetric(float64(len(leaves))*float64(b.N)/b.Elapsed().Seconds(), "boxes/s")
	})
}
