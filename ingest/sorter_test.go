package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/tiles"
)

// TestHilbertPrefix: the top 2L bits of a key are the level-L Hilbert index
// of the square holding the point, which planTiles relies on.
func TestHilbertPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1 << keyOrder
	for i := 0; i < 2000; i++ {
		x, y := r.Uint32N(n), r.Uint32N(n)
		grid := orb.Bound{Max: orb.Point{n, n}}
		d := tiles.HilbertIndex(grid, orb.Point{float64(x) + 0.5, float64(y) + 0.5}, keyOrder)
		if gx, gy := hilbertD2XY(n, d); gx != x || gy != y {
			t.Fatalf("d2xy(xy2d(%d, %d)) = %d, %d", x, y, gx, gy)
		}
		for _, level := range []int{0, 1, 5, 14, 20} {
			prefix := d >> (2 * (keyOrder - level))
			sx, sy := hilbertD2XY(1<<level, prefix)
			if sx != x>>(keyOrder-level) || sy != y>>(keyOrder-level) {
				t.Fatalf("level %d: square %d,%d, want %d,%d", level, sx, sy, x>>(keyOrder-level), y>>(keyOrder-level))
			}
		}
	}
}

func TestPlanTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	hist := map[uint32]int64{}
	var keys []uint64
	for i := 0; i < 20000; i++ {
		lon, lat := 151.2+r.NormFloat64()*0.05, -33.9+r.NormFloat64()*0.05
		if i%10 == 0 {
			lon, lat = 115+r.Float64()*30, -40+r.Float64()*30
		}
		if i%1000 == 0 {
			lon, lat = 150, -30 // a pile of identical points: chunked
		}
		k := spatialKey(orb.Point{lon, lat}.Bound())
		keys = append(keys, k)
		hist[uint32(k>>(2*(keyOrder-histLevel)))]++
	}
	for i := 0; i < 300; i++ {
		k := spatialKey(orb.Point{150, -30}.Bound())
		keys = append(keys, k)
		hist[uint32(k>>(2*(keyOrder-histLevel)))]++
	}
	slices.Sort(keys)
	specs := planTiles(hist, 100)
	names := map[string]bool{}
	i := 0
	var prev uint64
	for si, s := range specs {
		if s.hi <= prev && si > 0 {
			t.Fatalf("spec %d not after the previous", si)
		}
		prev = s.hi
		if names[s.name] {
			t.Fatalf("name %s repeats", s.name)
		}
		names[s.name] = true
		n := 0
		for i < len(keys) && keys[i] < s.hi {
			i++
			n++
		}
		if n == 0 || (n > 100 && !s.chunked) {
			t.Errorf("%s holds %d keys (chunked %v)", s.name, n, s.chunked)
		}
	}
	if i != len(keys) {
		t.Errorf("%d keys beyond the plan", len(keys)-i)
	}
}

// TestSorterManyRuns: more runs than one merge takes are merged in passes;
// the order is the in-memory order.
func TestSorterManyRuns(t *testing.T) {
	schema := mustSchema(t)
	r := rand.New(rand.NewPCG(5, 6))
	var recs [][]byte
	for i := 0; i < 6000; i++ {
		pt := orb.Point{140 + r.Float64()*10, -40 + r.Float64()*10}
		if i%7 == 0 {
			pt = orb.Point{150, -30} // equal keys: ordered by id
		}
		rec, err := appendRecord(nil, spatialKey(pt.Bound()), fmt.Sprintf("id%05d", r.IntN(1_000_000)*10+i%10), pt,
			map[string]any{"name": "x", "count": int64(i), "area": nil, "active": true, "opened": nil, "updated": nil}, schema)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	order := func(budget int64) ([]string, int) {
		s := newSorter(t.TempDir(), budget)
		s.chunkSize = 512
		for _, rec := range recs {
			if err := s.add(rec); err != nil {
				t.Fatal(err)
			}
		}
		spills := len(s.runs)
		it, err := s.finish()
		if err != nil {
			t.Fatal(err)
		}
		defer it.close()
		var ids []string
		for {
			rec, ok, err := it.next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			f, err := decodeRecord(rec, schema)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, f.ID)
		}
		return ids, spills
	}
	mem, spills := order(1 << 30)
	if spills != 0 {
		t.Fatal("spilled with a large budget")
	}
	disk, spills := order(8 << 10)
	if spills <= maxMergeWays {
		t.Fatalf("only %d runs", spills)
	}
	if !slices.Equal(mem, disk) || len(mem) != len(recs) {
		t.Errorf("orders differ (%d, %d records)", len(mem), len(disk))
	}
}

func TestRecordRoundTrip(t *testing.T) {
	schema := mustSchema(t)
	for _, f := range sampleFeatures() {
		props, err := schema.Normalize(f.Properties)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := appendRecord([]byte("junk"), 42, f.ID, f.Geometry, props, schema)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(rec[4:], schema)
		if err != nil {
			t.Fatal(err)
		}
		if recordKey(rec[4:]) != 42 || got.ID != f.ID || !orb.Equal(got.Geometry, f.Geometry) || fmt.Sprint(got.Properties) != fmt.Sprint(props) {
			t.Errorf("%s: got %+v", f.ID, got)
		}
		if _, err := decodeRecord(rec[4:len(rec)-1], schema); err == nil {
			t.Errorf("%s: truncated record decoded", f.ID)
		}
	}
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := filepath.Join(b.dir, "syn.geojson")
	writeSynthetic(t, path, 2000, 7)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opt := b.opts()
	if _, err := Run(ctx, opt, path); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	b.assertNothingPublished()
	if entries, _ := os.ReadDir(opt.TempDir); len(entries) != 0 {
		t.Errorf("temp dir holds %d entries", len(entries))
	}
}
