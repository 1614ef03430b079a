package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/tiles"
)

// propsFixture publishes one layer of four tiles of 5,000 points each
// (three row groups a tile), every feature with properties of its own,
// and returns the engine's store, the layer and the features by id.
func propsFixture(t testing.TB) (*Engine, func(budget int64) *Engine, LayerRequest, map[string]tiles.Feature) {
	st := newStore(t)
	rng := rand.New(rand.NewPCG(30, 1))
	byID := map[string]tiles.Feature{}
	var groups [][]tiles.Feature
	for g := range 4 {
		var feats []tiles.Feature
		for i := range 5000 {
			id := fmt.Sprintf("p%d-%04d", g, i)
			f := tiles.Feature{ID: id, Geometry: orb.Point{151 + 0.1*float64(g) + 0.1*rng.Float64(), -33.9 + 0.1*rng.Float64()},
				Properties: map[string]any{"kind": fmt.Sprintf("kind %d", rng.IntN(50)), "n": int64(rng.IntN(1 << 30))}}
			if rng.IntN(3) > 0 {
				f.Properties["note"] = fmt.Sprintf("note of %s", id)
			}
			feats = append(feats, f)
			byID[id] = f
		}
		groups = append(groups, feats)
	}
	m := publish(t, st, "props", groups, nil)
	return newEngine(t, st, Options{}), func(budget int64) *Engine { return newEngine(t, st, Options{MemoryBudget: budget}) }, layerReq(m), byID
}

// A shard holds no properties: a query reads those of the features it
// returns from the tile, a row group at a time, and they are the
// features' own. Under a budget smaller than the data (shards and
// property blocks evicted as queries go) the answers are the same, and
// the engine holds no more than the budget between queries.
func TestPropertiesFromTile(t *testing.T) {
	t.Parallel()
	big, withBudget, lr, byID := propsFixture(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(30, 2))
	var reqs []Request
	for range 40 {
		reqs = append(reqs, Request{Site: orb.Point{151 + 0.4*rng.Float64(), -33.9 + 0.1*rng.Float64()},
			RadiusM: 100 + 2000*rng.Float64(), Layers: []LayerRequest{lr}})
	}
	want := make([][]LayerResult, len(reqs))
	matched := 0
	for i, req := range reqs {
		res, err := big.Query(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res
		for _, f := range res[0].Features {
			matched++
			if got, exp := f.Properties(), byID[f.ID].Properties; !sameProps(got, exp) {
				t.Fatalf("feature %s: properties %v, want %v", f.ID, got, exp)
			}
		}
	}
	if matched < 100 {
		t.Fatalf("only %d features matched: the fixture is too sparse", matched)
	}
	s := big.Stats()
	if s.PropertyReads == 0 || s.PropertyHits == 0 {
		t.Errorf("no property blocks read or reused: %+v", s)
	}
	if s.LoadedBytes != s.ResidentBytes || s.LoadedBytes <= 0 {
		t.Errorf("unbounded engine: loaded %d bytes, holds %d", s.LoadedBytes, s.ResidentBytes)
	}
	// A budget of about one shard and a half: every query evicts.
	budget := s.LoadedBytes * 3 / 8
	small := withBudget(budget)
	for round := range 2 {
		for i, req := range reqs {
			got, err := small.Query(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got[0]), ids(want[i][0])) || len(got[0].Features) != len(want[i][0].Features) {
				t.Fatalf("round %d, query %d: ids differ from the unbounded engine", round, i)
			}
			for k, f := range got[0].Features {
				w := want[i][0].Features[k]
				if f.ID != w.ID || f.DistanceM != w.DistanceM || !reflect.DeepEqual(f.Properties(), w.Properties()) {
					t.Fatalf("round %d, query %d: feature %d: %s %v %v, want %s %v %v", round, i, k,
						f.ID, f.DistanceM, f.Properties(), w.ID, w.DistanceM, w.Properties())
				}
			}
			if st := small.Stats(); st.ResidentBytes+st.PropertyBytes > budget {
				t.Fatalf("query %d: the engine holds %d shard and %d property bytes, budget %d", i, st.ResidentBytes, st.PropertyBytes, budget)
			}
		}
	}
	st := small.Stats()
	if st.Evictions == 0 || st.Loads <= int64(len(big.mu.shards)) {
		t.Errorf("a budget under the data evicted nothing: %+v", st)
	}
	// With budget 1 nothing stays: every block is read, used and dropped.
	tiny := withBudget(1)
	for i, req := range reqs[:10] {
		got, err := tiny.Query(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for k, f := range got[0].Features {
			if !reflect.DeepEqual(f.Properties(), want[i][0].Features[k].Properties()) {
				t.Fatalf("budget 1, query %d: feature %s: properties differ", i, f.ID)
			}
		}
	}
	if st := tiny.Stats(); st.PropertyBytes != 0 || st.ResidentBytes != 0 || st.PropertyEvictions == 0 {
		t.Errorf("budget 1 keeps %d property and %d shard bytes (%d property evictions)", st.PropertyBytes, st.ResidentBytes, st.PropertyEvictions)
	}
}

// sameProps compares a feature's properties as the tile gives them (every
// field, nulls as nil) with those it was written with.
func sameProps(got, written map[string]any) bool {
	for k, v := range got {
		if w, ok := written[k]; ok && !reflect.DeepEqual(v, w) || !ok && v != nil {
			return false
		}
	}
	return len(got) >= len(written)
}

// A tile that changed after its shard loaded (the store's object is not
// the one the manifest named) fails the layer as source_unavailable when
// its properties are read, and the engine goes on answering.
func TestPropertiesTileChanged(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	var feats []tiles.Feature
	for i := range 100 {
		feats = append(feats, feat(fmt.Sprintf("f%03d", i), orb.Point{151 + 0.001*float64(i), -33.9}))
	}
	m := publish(t, st, "changed", [][]tiles.Feature{feats}, nil)
	e := newEngine(t, st, Options{})
	ctx := context.Background()
	if err := e.Preload(ctx, m.LayerID, m.ReleaseID); err != nil {
		t.Fatal(err)
	}
	key := m.Tiles[0].Key
	if err := st.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	res := query(t, e, orb.Point{151, -33.9}, 500, layerReq(m))
	if res[0].Status != StatusUnavailable || res[0].Reason != ReasonSourceUnavailable {
		t.Fatalf("tile gone: %s %s", res[0].Status, res[0].Reason)
	}
}

// sameResults compares layer results as a caller sees them: every exported
// field, and each feature's properties (the blocks they come from, and the
// lengths cached in them, differ between engines).
func sameResults(a, b []LayerResult) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if len(x.Features) != len(y.Features) {
			return false
		}
		for k := range x.Features {
			f, g := x.Features[k], y.Features[k]
			if f.ID != g.ID || f.DistanceM != g.DistanceM || !reflect.DeepEqual(f.Geometry, g.Geometry) ||
				!reflect.DeepEqual(f.Properties(), g.Properties()) {
				return false
			}
		}
		x.Features, y.Features = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// PreloadProperties reads every block of the loaded shards when the
// budget holds them, and stops short of a budget that does not.
func TestPreloadProperties(t *testing.T) {
	t.Parallel()
	big, withBudget, lr, _ := propsFixture(t)
	ctx := context.Background()
	if err := big.Preload(ctx, lr.LayerID, lr.ReleaseID); err != nil {
		t.Fatal(err)
	}
	all, err := big.PreloadProperties(ctx, lr.LayerID, lr.ReleaseID)
	if err != nil || !all {
		t.Fatalf("unbounded: %v, %v", all, err)
	}
	s := big.Stats()
	if s.PropertyReads != 4*3 || s.PropertyBytes <= 0 {
		t.Fatalf("read %d blocks (%d bytes), want 12", s.PropertyReads, s.PropertyBytes)
	}
	// Room for the shards and about two blocks.
	budget := s.LoadedBytes + 2*s.PropertyBytes/12 + s.PropertyBytes/24
	small := withBudget(budget)
	if err := small.Preload(ctx, lr.LayerID, lr.ReleaseID); err != nil {
		t.Fatal(err)
	}
	all, err = small.PreloadProperties(ctx, lr.LayerID, lr.ReleaseID)
	st := small.Stats()
	if err != nil || all || st.PropertyReads == 0 || st.PropertyReads >= 12 || st.Evictions != 0 || st.PropertyEvictions != 0 {
		t.Fatalf("budget for two blocks: all %v, err %v, %+v", all, err, st)
	}
}
