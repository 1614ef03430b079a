package engine

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"

	"siteenv/tiles"
)

// Properties are not resident. A shard holds its features' ids, geometries
// and index; the properties of the features a query returns are read from
// the tile, one row group at a time (tiles.Tile.ReadProperties: one ranged
// read of the row group's property chunks), and kept in a cache that shares
// the engine's byte budget with the shards. Property blocks are evicted
// before shards: a block is one row group's read, a shard the whole tile's.
// A result keeps the blocks its features came from alive until it is
// dropped, evicted or not.

// propKey names the properties of one row group of one tile.
type propKey struct {
	tile string
	rg   int
}

// propEntry is a property block in the cache, loaded or loading.
type propEntry struct {
	key  propKey
	done chan struct{} // closed when the read ends
	b    *propBlock
	err  error
	// LRU links (loaded entries), most recently used at the front. Under
	// Engine.mu.
	prev, next *propEntry
}

// propSource gives a feature's properties by tile row: a whole tile (read
// with its properties) or one row group's block. lenSlot caches the
// encoded length of row i's properties (length+1; 0 until measured).
type propSource interface {
	propVisitor
	Properties(i int) map[string]any
	lenSlot(i int) *atomic.Int32
}

// propVisitor shows row i's properties to v (tiles.Tile.VisitProperties).
type propVisitor interface {
	VisitProperties(i int, v tiles.PropertyVisitor)
}

// tileProps is a tile that holds its properties.
type tileProps struct {
	*tiles.Tile
	lens []atomic.Int32
}

func (t *tileProps) lenSlot(i int) *atomic.Int32 { return &t.lens[i] }

// propBlock is one row group's properties, read from the tile.
type propBlock struct {
	*tiles.PropertyBlock
	lens []atomic.Int32 // by row of the block
}

func (b *propBlock) lenSlot(i int) *atomic.Int32 { return &b.lens[i-b.Row0()] }

// bytes is what the block holds.
func (b *propBlock) bytes() int64 { return b.Bytes() + int64(len(b.lens))*4 }

// rowGroup returns the row group of row i of s (lazy shards).
func (s *shard) rowGroup(i int) int {
	return sort.Search(len(s.rgStarts), func(k int) bool { return s.rgStarts[k] > i }) - 1
}

// propSourceFor returns where feature i of s gets its properties, reading
// its row group's block when s does not hold them. last is the caller's
// previous answer, reused when it covers i.
func (e *Engine) propSourceFor(ctx context.Context, s *shard, i int, last *propBlock) (propSource, *propBlock, error) {
	if s.whole != nil {
		return s.whole, nil, nil
	}
	if last != nil && i >= last.Row0() && i < last.Row0()+last.Rows() {
		return last, last, nil
	}
	rg := s.rowGroup(i)
	if rg < 0 {
		return nil, nil, fmt.Errorf("engine: tile %s: row %d in no row group: %w", s.key, i, tiles.ErrInvalidTile)
	}
	b, err := e.properties(ctx, s, rg)
	if err != nil {
		return nil, nil, err
	}
	return b, b, nil
}

// properties returns the property block of row group rg of s, reading it
// if needed. Concurrent users of a block being read wait for the one read.
func (e *Engine) properties(ctx context.Context, s *shard, rg int) (*propBlock, error) {
	key := propKey{s.key, rg}
	for {
		e.mu.Lock()
		pe := e.mu.props[key]
		if pe == nil {
			pe = &propEntry{key: key, done: make(chan struct{})}
			e.mu.props[key] = pe
			e.mu.Unlock()
			b, err := e.readProperties(ctx, s, rg)
			e.mu.Lock()
			pe.b, pe.err = b, err
			close(pe.done)
			if err != nil {
				delete(e.mu.props, key)
			} else {
				e.linkPropLocked(pe)
				e.mu.propBytes += b.bytes()
				e.mu.propReads++
				e.evictLocked()
			}
			e.mu.Unlock()
			return b, err
		}
		if pe.b != nil {
			if pe.prev != nil {
				e.unlinkPropLocked(pe)
				e.linkPropLocked(pe)
			}
			e.mu.propHits++
			e.mu.Unlock()
			return pe.b, nil
		}
		e.mu.Unlock()
		select {
		case <-pe.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if pe.err == nil {
			return pe.b, nil
		}
		if isContextError(pe.err) && ctx.Err() == nil {
			continue // the reading query gave up; read it ourselves
		}
		return nil, pe.err
	}
}

func (e *Engine) readProperties(ctx context.Context, s *shard, rg int) (*propBlock, error) {
	obj, err := e.store.Open(ctx, s.key)
	if err != nil {
		return nil, fmt.Errorf("engine: tile %s: properties: %w", s.key, err)
	}
	defer obj.Close()
	if obj.Size() != s.fileBytes {
		return nil, fmt.Errorf("engine: tile %s has %d bytes, %d when loaded: %w", s.key, obj.Size(), s.fileBytes, tiles.ErrInvalidTile)
	}
	b, err := s.tile.ReadProperties(ctx, obj, rg)
	if err != nil {
		return nil, fmt.Errorf("engine: tile %s: properties: %w", s.key, err)
	}
	return &propBlock{PropertyBlock: b, lens: make([]atomic.Int32, b.Rows())}, nil
}

func (e *Engine) linkPropLocked(pe *propEntry) {
	head := &e.mu.propIdle
	pe.next, pe.prev = head.next, head
	head.next.prev = pe
	head.next = pe
}

func (e *Engine) unlinkPropLocked(pe *propEntry) {
	pe.prev.next = pe.next
	pe.next.prev = pe.prev
	pe.prev, pe.next = nil, nil
}

// evictPropLocked drops the least recently used property block; false
// when there is none.
func (e *Engine) evictPropLocked() bool {
	head := &e.mu.propIdle
	if head.prev == head {
		return false
	}
	pe := head.prev
	e.unlinkPropLocked(pe)
	delete(e.mu.props, pe.key)
	e.mu.propBytes -= pe.b.bytes()
	e.mu.propEvictions++
	return true
}

// PreloadProperties reads the property blocks of the loaded shards of a
// release while the budget has room for them: a warm start for a replica
// whose budget holds more than its shards (blocks otherwise load on first
// use, as shards do). It stops, reporting false, at the first block that
// would not fit; shards loaded later evict blocks first, as always.
func (e *Engine) PreloadProperties(ctx context.Context, layerID, releaseID string) (bool, error) {
	m, err := e.manifest(ctx, layerID, releaseID)
	if err != nil {
		return false, fmt.Errorf("engine: preload %s/%s: %w", layerID, releaseID, err)
	}
	var last int64
	for _, te := range m.Tiles {
		e.mu.Lock()
		se := e.mu.shards[te.Key]
		loaded := se != nil && se.s != nil
		e.mu.Unlock()
		if !loaded {
			continue
		}
		se, err := e.acquire(ctx, te)
		if err != nil {
			return false, fmt.Errorf("engine: preload %s: %w", te.Key, err)
		}
		s := se.s
		for rg := 0; s.whole == nil && rg < len(s.rgStarts); rg++ {
			e.mu.Lock()
			room := e.budget - e.mu.resident - e.mu.propBytes
			e.mu.Unlock()
			if room < 2*last {
				e.release(se)
				return false, nil
			}
			b, err := e.properties(ctx, s, rg)
			if err != nil {
				e.release(se)
				return false, fmt.Errorf("engine: preload %s: %w", te.Key, err)
			}
			last = b.bytes()
		}
		e.release(se)
	}
	return true, nil
}
