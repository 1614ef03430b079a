package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"siteenv/store"
	"siteenv/tiles"
)

// writeSynthetic writes n features as a GeoJSON FeatureCollection: points
// and small polygons, most of them around Sydney and the rest spread over
// eastern Australia, with every property type.
func writeSynthetic(t testing.TB, path string, n int, seed uint64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(seed, seed+1))
	w.WriteString(`{"type":"FeatureCollection","name":"synthetic","features":[` + "\n")
	var buf []byte
	for i := 0; i < n; i++ {
		var lon, lat float64
		if r.IntN(4) > 0 {
			lon, lat = 151.2+r.NormFloat64()*0.1, -33.87+r.NormFloat64()*0.1
		} else {
			lon, lat = 140+r.Float64()*14, -38+r.Float64()*20
		}
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ",\n"...)
		}
		buf = append(buf, `{"type":"Feature","id":"f`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `","geometry":`...)
		if i%3 == 0 {
			d := 0.0005 + r.Float64()*0.002
			buf = append(buf, `{"type":"Polygon","coordinates":[[`...)
			for k, c := range [][2]float64{{lon, lat}, {lon + d, lat}, {lon + d, lat + d}, {lon, lat + d}, {lon, lat}} {
				if k > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, '[')
				buf = strconv.AppendFloat(buf, c[0], 'f', 7, 64)
				buf = append(buf, ',')
				buf = strconv.AppendFloat(buf, c[1], 'f', 7, 64)
				buf = append(buf, ']')
			}
			buf = append(buf, `]]}`...)
		} else {
			buf = append(buf, `{"type":"Point","coordinates":[`...)
			buf = strconv.AppendFloat(buf, lon, 'f', 7, 64)
			buf = append(buf, ',')
			buf = strconv.AppendFloat(buf, lat, 'f', 7, 64)
			buf = append(buf, `]}`...)
		}
		buf = append(buf, `,"properties":{"name":"site `...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `","count":`...)
		buf = strconv.AppendInt(buf, int64(r.IntN(1000)), 10)
		buf = append(buf, `,"area":`...)
		buf = strconv.AppendFloat(buf, r.Float64()*1e4, 'g', -1, 64)
		buf = append(buf, `,"active":`...)
		buf = strconv.AppendBool(buf, i%2 == 0)
		buf = append(buf, `,"opened":"2020-01-`...)
		buf = append(buf, fmt.Sprintf("%02d", 1+i%28)...)
		buf = append(buf, `","updated":null}}`...)
		w.Write(buf)
	}
	w.WriteString("\n]}\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestReingestIsNoOp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := filepath.Join(b.dir, "syn.geojson")
	writeSynthetic(t, path, 3000, 1)
	opt := b.opts()
	opt.TileRows = 500
	first, err := Run(context.Background(), opt, path)
	if err != nil {
		t.Fatal(err)
	}
	if first.AlreadyPublished || first.Tiles < 2 {
		t.Fatalf("first run %+v", first)
	}
	before := storeKeys(t, b.store)
	rawBefore := readAll(t, b.store, before)

	opt.Clock = func() time.Time { return testClock().Add(time.Hour) }
	second, err := Run(context.Background(), opt, path)
	if err != nil {
		t.Fatal(err)
	}
	if second.ReleaseID != first.ReleaseID || !second.AlreadyPublished || second.Features != first.Features ||
		second.Tiles != first.Tiles || second.Bytes != first.Bytes {
		t.Fatalf("second run %+v, first %+v", second, first)
	}
	after := storeKeys(t, b.store)
	if !reflect.DeepEqual(before, after) || !reflect.DeepEqual(rawBefore, readAll(t, b.store, after)) {
		t.Error("the store changed on re-ingest")
	}
	// Publish is called both times (the ledger side is idempotent), with
	// the stored manifest the second time.
	if b.pub.count() != 2 || b.pub.calls[1].ReleaseID != first.ReleaseID || !b.pub.calls[1].IngestedAt.Equal(testClock()) {
		t.Errorf("publish calls %d", b.pub.count())
	}
}

func readAll(t *testing.T, s store.Store, infos []store.Info) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, in := range infos {
		obj, err := s.Open(context.Background(), in.Key)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, obj.Size())
		if _, err := obj.ReadAt(b, 0); err != nil && obj.Size() > 0 {
			if n := len(b); n == 0 {
				t.Fatal(err)
			}
		}
		obj.Close()
		out[in.Key] = b
	}
	return out
}

// TestCrashMidIngest: a store that fails part-way through the upload (a
// crash) leaves no manifest, so no visible release; a rerun completes.
func TestCrashMidIngest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := filepath.Join(b.dir, "syn.geojson")
	writeSynthetic(t, path, 2000, 2)
	opt := b.opts()
	opt.TileRows = 200
	opt.Store = &failingStore{Store: b.store, n: 3}
	_, err := Run(context.Background(), opt, path)
	if !errors.Is(err, errCrash) {
		t.Fatalf("err = %v, want the simulated crash", err)
	}
	if b.pub.count() != 0 {
		t.Error("published after a crash")
	}
	keys := storeKeys(t, b.store)
	if len(keys) == 0 {
		t.Fatal("no tile was uploaded before the crash")
	}
	for _, k := range keys {
		if strings.HasSuffix(k.Key, "manifest.json") {
			t.Errorf("a manifest was written: %s", k.Key)
		}
	}

	opt.Store = b.store
	sum, err := Run(context.Background(), opt, path)
	if err != nil {
		t.Fatal(err)
	}
	if sum.AlreadyPublished || b.pub.count() != 1 || sum.Features != 2000 {
		t.Errorf("rerun %+v", sum)
	}
	if _, err := tiles.ReadManifest(context.Background(), b.store, b.def.LayerID, sum.ReleaseID); err != nil {
		t.Error(err)
	}
	// A failing Publish leaves the release written but reports the error;
	// running again publishes it.
	b.pub.err = errors.New("ledger down")
	if _, err := Run(context.Background(), opt, path); err == nil || !strings.Contains(err.Error(), "ledger down") {
		t.Errorf("err = %v", err)
	}
}

// TestSpillMatchesInMemory: a tiny memory budget forces the external sort
// through spill files; the release is identical to the in-memory one.
func TestSpillMatchesInMemory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := filepath.Join(b.dir, "syn.geojson")
	writeSynthetic(t, path, 6000, 3)

	opt := b.opts()
	opt.TileRows = 100
	var spills atomic.Int64
	opt.onSpill = func() { spills.Add(1) }
	mem, err := Run(context.Background(), opt, path)
	if err != nil {
		t.Fatal(err)
	}
	if spills.Load() != 0 {
		t.Fatalf("default budget spilled %d times", spills.Load())
	}

	b2 := setup(t)
	opt2 := b2.opts()
	opt2.TileRows = 100
	opt2.MemoryBudget = 64 << 10
	opt2.onSpill = func() { spills.Add(1) }
	spilled, err := Run(context.Background(), opt2, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d features, %d tiles, %d spills", spilled.Features, spilled.Tiles, spills.Load())
	if spills.Load() < 10 {
		t.Errorf("only %d spills with a 64 KiB budget", spills.Load())
	}
	if spilled.ReleaseID != mem.ReleaseID || spilled.Tiles != mem.Tiles || spilled.Bytes != mem.Bytes {
		t.Errorf("spilled run %+v differs from in-memory run %+v", spilled, mem)
	}
	if !reflect.DeepEqual(readAll(t, b.store, storeKeys(t, b.store)), readAll(t, b2.store, storeKeys(t, b2.store))) {
		t.Error("stores differ")
	}
	// Tiles respect TileRows and are compact squares.
	_, m := releaseFeatures(t, b2.store, b2.def.LayerID, spilled.ReleaseID)
	for _, te := range m.Tiles {
		if te.Rows > 100 {
			t.Errorf("%s has %d rows", te.Key, te.Rows)
		}
	}
	// Temp files are gone.
	entries, _ := os.ReadDir(opt2.TempDir)
	if len(entries) != 0 {
		t.Errorf("temp dir holds %d entries", len(entries))
	}
}

// TestDeterministicAcrossInputOrder: the same features in another order
// (and split over files) give the same tiles; only ids and values count.
func TestDeterministicAcrossInputOrder(t *testing.T) {
	t.Parallel()
	feats := sampleFeatures()
	var ids []string
	for _, name := range []string{"x", "y"} {
		b := setup(t)
		fs := append([]tiles.Feature(nil), feats...)
		if name == "y" {
			for i, j := 0, len(fs)-1; i < j; i, j = i+1, j-1 {
				fs[i], fs[j] = fs[j], fs[i]
			}
		}
		p1, p2 := filepath.Join(b.dir, "one.ndjson"), filepath.Join(b.dir, "two.ndjson")
		writeLines(t, p1, fs[:3], "")
		writeLines(t, p2, fs[3:], "")
		opt := b.opts()
		opt.TileRows = 2
		sum, err := Run(context.Background(), opt, p1, p2)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sum.ReleaseID)
	}
	if ids[0] != ids[1] {
		t.Errorf("release ids %v", ids)
	}
}

func TestTooManyRejectsStopsEarly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var sb strings.Builder
	for i := 0; i < 3000; i++ {
		sb.WriteString(feat(fmt.Sprint(i), goodPoint, `{"name":"ok","count":"bad"}`) + "\n")
	}
	path := b.write("bad.ndjson", sb.String())
	opt := b.opts()
	opt.MaxRejects = 5
	opt.RejectsPath = filepath.Join(t.TempDir(), "rejects.csv")
	sum, err := Run(context.Background(), opt, path)
	if !errors.Is(err, ErrTooManyRejects) {
		t.Fatalf("err = %v", err)
	}
	if sum.Rejected < 6 || sum.Rejected > 5+rejectTail+2*batchItems {
		t.Errorf("rejected %d", sum.Rejected)
	}
	if rows := readRejects(t, opt.RejectsPath); int64(len(rows)-1) != sum.Rejected {
		t.Errorf("rejects file has %d rows, summary %d", len(rows)-1, sum.Rejected)
	}
	b.assertNothingPublished()
}

func TestProgressLines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := filepath.Join(b.dir, "syn.geojson")
	writeSynthetic(t, path, 500, 4)
	var buf bytes.Buffer
	opt := b.opts()
	opt.Progress = &buf
	sum, err := Run(context.Background(), opt, path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("%v: %q", err, lines)
	}
	st, _ := os.Stat(path)
	if last["event"] != "progress" || last["features"] != float64(sum.Features) || last["rejected"] != 0.0 ||
		last["bytes_read"] != float64(st.Size()) || last["done"] != true || last["features_per_s"] == nil || last["elapsed_s"] == nil {
		t.Errorf("final progress line %v", last)
	}
}

func TestRunRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feats := sampleFeatures()
	sum, err := RunRows(context.Background(), b.opts(), func(yield func(Row) error) error {
		for i, f := range feats {
			if err := yield(Row{File: "gen", Row: int64(i + 1), Feature: f}); err != nil {
				return err
			}
		}
		return yield(Row{File: "gen", Row: 99, Err: errors.New("generator hiccup")})
	})
	if !errors.Is(err, ErrTooManyRejects) || !strings.Contains(err.Error(), "gen row 99: generator hiccup") {
		t.Fatalf("err = %v", err)
	}
	b.assertNothingPublished()

	// RunRows with MGA coordinates copies before reprojecting.
	pt := orb.Point{500000, 6000000}
	opt := b.opts()
	opt.SourceCRS = "EPSG:7856"
	sum, err = RunRows(context.Background(), opt, func(yield func(Row) error) error {
		return yield(Row{File: "gen", Row: 1, Feature: tiles.Feature{ID: "c", Geometry: pt, Properties: map[string]any{"name": "cm"}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
	if g := got["c"].Geometry.(orb.Point); g[0] != 153 || g[1] > -36.14 || g[1] < -36.15 {
		t.Errorf("reprojected %v", g)
	}
	if pt != (orb.Point{500000, 6000000}) {
		t.Error("caller's geometry was modified")
	}
}
