package engine

import (
	"context"
	"testing"

	"github.com/paulmach/orb"
)

// Warm loads every shard and property block a budget holds, so the first
// query loads and reads nothing; with a budget for about half the shards it
// loads what fits without evicting, and leaves the rest to queries.
func TestWarm(t *testing.T) {
	t.Parallel()
	big, withBudget, lr, _ := propsFixture(t)
	ctx := context.Background()
	rels := []Release{{lr.LayerID, lr.ReleaseID}}
	ws, err := big.Warm(ctx, rels)
	if err != nil {
		t.Fatal(err)
	}
	s := big.Stats()
	if ws.Shards != 4 || ws.Skipped != 0 || !ws.Properties || s.PropertyReads != 4*3 || s.Evictions != 0 {
		t.Fatalf("unbounded warm: %+v, stats %+v", ws, s)
	}
	req := Request{Site: orb.Point{151.2, -33.85}, RadiusM: 5000, Layers: []LayerRequest{lr}}
	res, err := big.Query(ctx, req)
	if err != nil || len(res) != 1 || len(res[0].Features) == 0 {
		t.Fatalf("query: %v, %d results", err, len(res))
	}
	if after := big.Stats(); after.Loads != s.Loads || after.PropertyReads != s.PropertyReads {
		t.Fatalf("the first query after a warm start loaded %d shards and read %d blocks",
			after.Loads-s.Loads, after.PropertyReads-s.PropertyReads)
	}
	// Warm again: nothing to do.
	if again, err := big.Warm(ctx, rels); err != nil || again.Shards != 0 || big.Stats().Loads != s.Loads {
		t.Fatalf("second warm: %+v, %v", again, err)
	}

	half := withBudget(s.LoadedBytes/2 + s.LoadedBytes/8)
	ws, err = half.Warm(ctx, rels)
	if err != nil {
		t.Fatal(err)
	}
	hs := half.Stats()
	if ws.Shards != 2 || ws.Skipped != 2 || ws.Properties || hs.Evictions != 0 || hs.ResidentBytes+hs.PropertyBytes > s.LoadedBytes/2+s.LoadedBytes/8 {
		t.Fatalf("warm under a budget of %d: %+v, stats %+v", s.LoadedBytes/2+s.LoadedBytes/8, ws, hs)
	}
}
