package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"siteenv/tiles"
)

// shard is one tile of one release in memory: the tile's columns and an
// index over its features' boxes. Immutable once built; safe for concurrent
// queries.
type shard struct {
	tile *tiles.Tile
	ix   *index
	// bytes is what the shard holds: the tile's columns (without the
	// float64 bounds column, which the index replaces) and the index.
	bytes int64
}

// loadShard reads and indexes the tile te.
func loadShard(ctx context.Context, store tiles.Store, te tiles.TileEntry) (*shard, error) {
	obj, err := store.Open(ctx, te.Key)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	if obj.Size() != te.Bytes {
		return nil, fmt.Errorf("engine: tile %s has %d bytes, manifest says %d: %w", te.Key, obj.Size(), te.Bytes, tiles.ErrInvalidTile)
	}
	t, err := tiles.ReadTile(ctx, obj, obj.Size())
	if err != nil {
		return nil, fmt.Errorf("engine: tile %s: %w", te.Key, err)
	}
	if int64(t.Len()) != te.Rows {
		return nil, fmt.Errorf("engine: tile %s has %d rows, manifest says %d: %w", te.Key, t.Len(), te.Rows, tiles.ErrInvalidTile)
	}
	return buildShard(t, te.Key)
}

// buildShard indexes t. Every geometry is decoded once here, so a tile
// with malformed WKB fails to load instead of failing queries later.
// A feature's box is its positions' box widened by the bulge of its
// geodesic edges (a long east-west edge bows poleward of its ends).
func buildShard(t *tiles.Tile, name string) (*shard, error) {
	n := t.Len()
	leaves := make([]box32, n)
	var f flat
	for i := 0; i < n; i++ {
		w := t.WKB[i]
		if p, ok := wkbPointXY(w); ok {
			leaves[i] = box32{down(p[0]), down(p[1]), up(p[0]), up(p[1])}
			continue
		}
		if err := f.decodeWKB(w); err != nil {
			return nil, fmt.Errorf("engine: tile %s: feature %q: %v: %w", name, t.IDs[i], err, tiles.ErrInvalidTile)
		}
		if len(f.pts) == 0 {
			// An empty geometry matches nothing: an inverted box.
			leaves[i] = box32{float32(math.Inf(1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Inf(-1))}
			continue
		}
		leaves[i] = toBox32(geodesicBox(&f))
	}
	ix := newIndex(leaves)
	// The index carries the boxes; the float64 copy is not needed.
	t.Bounds = nil
	s := &shard{tile: t, ix: ix}
	s.bytes = t.Bytes() - int64(n)*32 + ix.bytes()
	return s, nil
}

// geodesicBox is the box of f's positions widened by its edges' bulges.
func geodesicBox(f *flat) orb.Bound {
	b := f.box
	scale := boundScale(b)
	var m float64
	for _, e := range f.elems {
		if e.kind == elemPoint {
			continue
		}
		for i := e.start; i+1 < e.end; i++ {
			m = math.Max(m, bulgeWith(f.pts[i], f.pts[i+1], scale))
		}
	}
	return padDeg(b, m)
}
