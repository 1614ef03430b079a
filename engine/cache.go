package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"siteenv/tiles"
)

// Shard and manifest caches. Both load on first use outside the engine's
// lock, with concurrent users of the same key waiting for the one load
// (singleflight). Failed loads are not cached: the next use tries again
// (stores fail transiently; a corrupt tile simply fails every time).
// Shards are counted by bytes and evicted least recently used first when
// the budget is exceeded, never while a query holds them; manifests are
// small and capped by number.

// shardEntry is a shard in the cache, loaded or loading.
type shardEntry struct {
	key  string
	done chan struct{} // closed when the load ends
	s    *shard        // set before done is closed, with err
	err  error
	refs int // queries holding the shard (under Engine.mu)
	// Idle list links (refs == 0 and loaded), most recently used at the
	// front. Under Engine.mu.
	prev, next *shardEntry
}

// acquire returns the shard of tile te, loading it if needed. The caller
// must release it.
func (e *Engine) acquire(ctx context.Context, te tiles.TileEntry) (*shardEntry, error) {
	for {
		e.mu.Lock()
		se := e.mu.shards[te.Key]
		if se == nil {
			se = &shardEntry{key: te.Key, done: make(chan struct{}), refs: 1}
			e.mu.shards[te.Key] = se
			e.mu.Unlock()
			e.load(ctx, se, te)
			if se.err != nil {
				return nil, se.err
			}
			return se, nil
		}
		se.refs++
		if se.prev != nil {
			e.unlinkLocked(se)
		}
		e.mu.hits++
		e.mu.Unlock()

		select {
		case <-se.done:
		case <-ctx.Done():
			e.release(se)
			return nil, ctx.Err()
		}
		if se.err == nil {
			return se, nil
		}
		if isContextError(se.err) && ctx.Err() == nil {
			continue // the loading query gave up; load it ourselves
		}
		return nil, se.err
	}
}

func (e *Engine) load(ctx context.Context, se *shardEntry, te tiles.TileEntry) {
	start := time.Now()
	s, err := loadShardMin(ctx, e.store, te, e.edgeMin)
	took := time.Since(start)
	e.mu.Lock()
	defer e.mu.Unlock()
	se.s, se.err = s, err
	close(se.done)
	if err != nil {
		delete(e.mu.shards, se.key)
		if !isContextError(err) {
			e.mu.loadErrors++
		}
		return
	}
	e.mu.loads++
	e.mu.loadTime += took
	e.mu.loadedFeatures += int64(s.tile.Len())
	e.mu.loadedBytes += s.bytes
	e.mu.loadedIndexBytes += s.ix.bytes()
	e.mu.resident += s.bytes
	e.mu.features += int64(s.tile.Len())
	e.mu.indexBytes += s.ix.bytes()
	e.evictLocked()
}

// release gives back a shard from acquire.
func (e *Engine) release(se *shardEntry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	se.refs--
	if se.refs > 0 || se.s == nil || e.mu.shards[se.key] != se {
		return
	}
	// Idle: most recently used at the front.
	head := &e.mu.idle
	se.next, se.prev = head.next, head
	head.next.prev = se
	head.next = se
	e.evictLocked()
}

func (e *Engine) unlinkLocked(se *shardEntry) {
	se.prev.next = se.next
	se.next.prev = se.prev
	se.prev, se.next = nil, nil
}

// evictLocked drops idle shards, least recently used first, while the
// resident bytes exceed the budget. Shards in use are never dropped, so the
// budget can be exceeded while queries hold more than it.
//
// Property blocks (props.go) count against the same budget and go first.
func (e *Engine) evictLocked() {
	for e.mu.resident+e.mu.propBytes > e.budget && e.evictPropLocked() {
	}
	head := &e.mu.idle
	for e.mu.resident+e.mu.propBytes > e.budget && head.prev != head {
		se := head.prev
		e.unlinkLocked(se)
		delete(e.mu.shards, se.key)
		e.mu.resident -= se.s.bytes
		e.mu.features -= int64(se.s.tile.Len())
		e.mu.indexBytes -= se.s.ix.bytes()
		e.mu.evictions++
	}
}

// manifestEntry is a release manifest in the cache.
type manifestEntry struct {
	done chan struct{}
	m    *tiles.Manifest
	err  error
	used uint64 // last use (Engine.mu.tick), for the cap
}

// maxManifests caps the manifest cache.
const maxManifests = 4096

func (e *Engine) manifest(ctx context.Context, layerID, releaseID string) (*tiles.Manifest, error) {
	key := releaseKey{layerID, releaseID}
	for {
		e.mu.Lock()
		e.mu.tick++
		me := e.mu.manifests[key]
		if me == nil {
			me = &manifestEntry{done: make(chan struct{}), used: e.mu.tick}
			if len(e.mu.manifests) >= maxManifests {
				e.dropManifestLocked()
			}
			e.mu.manifests[key] = me
			e.mu.Unlock()
			m, err := tiles.ReadManifest(ctx, e.store, layerID, releaseID)
			if err == nil && (m.LayerID != layerID || m.ReleaseID != releaseID) {
				err = errors.New("engine: manifest names another release")
			}
			e.mu.Lock()
			me.m, me.err = m, err
			if err != nil {
				delete(e.mu.manifests, key)
			}
			close(me.done)
			e.mu.Unlock()
			return m, err
		}
		me.used = e.mu.tick
		e.mu.Unlock()
		select {
		case <-me.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if me.err == nil {
			return me.m, nil
		}
		if isContextError(me.err) && ctx.Err() == nil {
			continue
		}
		return nil, me.err
	}
}

// dropManifestLocked removes the least recently used loaded manifest.
func (e *Engine) dropManifestLocked() {
	var oldest releaseKey
	var used uint64
	found := false
	for k, me := range e.mu.manifests {
		if me.m == nil {
			continue // loading
		}
		if !found || me.used < used {
			oldest, used, found = k, me.used, true
		}
	}
	if found {
		delete(e.mu.manifests, oldest)
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Preload loads every shard of a release that is not loaded yet (a warm
// start), one at a time: each load already decodes on every core. Shards
// beyond the memory budget evict the least recently used ones as usual.
func (e *Engine) Preload(ctx context.Context, layerID, releaseID string) error {
	m, err := e.manifest(ctx, layerID, releaseID)
	if err != nil {
		return fmt.Errorf("engine: preload %s/%s: %w", layerID, releaseID, err)
	}
	for _, te := range m.Tiles {
		se, err := e.acquire(ctx, te)
		if err != nil {
			return fmt.Errorf("engine: preload %s: %w", te.Key, err)
		}
		e.release(se)
	}
	return nil
}
