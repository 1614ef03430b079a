package engine

import (
	"context"
	"fmt"
)

// Release names one layer release (a replica's current catalogue).
type Release struct{ LayerID, ReleaseID string }

// WarmStats says what Warm loaded.
type WarmStats struct {
	Shards, Skipped int   // shards loaded; shards left for the first query that needs them
	ShardBytes      int64 // resident after the shards
	// Properties: every loaded shard's property blocks were read (the
	// budget had room for all of them).
	Properties bool
}

// Warm is a replica's warm start: it loads the shards of the releases, in
// order, while the budget holds them without evicting any, then reads the
// loaded shards' property blocks while the budget has room
// (PreloadProperties). A budget smaller than the data ends with the
// releases listed first resident and the rest left to load on first use,
// as they would without Warm. Queries may run meanwhile: a shard a query
// loaded is not loaded again.
func (e *Engine) Warm(ctx context.Context, releases []Release) (WarmStats, error) {
	var ws WarmStats
	var largest int64
	full := false
	for _, r := range releases {
		m, err := e.manifest(ctx, r.LayerID, r.ReleaseID)
		if err != nil {
			return ws, fmt.Errorf("engine: warm %s/%s: %w", r.LayerID, r.ReleaseID, err)
		}
		for _, te := range m.Tiles {
			e.mu.Lock()
			loaded := e.mu.shards[te.Key] != nil
			room := e.budget - e.mu.resident - e.mu.propBytes
			evictions := e.mu.evictions
			e.mu.Unlock()
			if loaded {
				continue
			}
			if full || room < largest {
				full = true
				ws.Skipped++
				continue
			}
			se, err := e.acquire(ctx, te)
			if err != nil {
				return ws, fmt.Errorf("engine: warm %s: %w", te.Key, err)
			}
			largest = max(largest, se.s.bytes)
			e.release(se)
			ws.Shards++
			e.mu.Lock()
			full = e.mu.evictions != evictions // it did not fit after all
			e.mu.Unlock()
		}
	}
	ws.ShardBytes = e.Stats().ResidentBytes
	ws.Properties = true
	for _, r := range releases {
		all, err := e.PreloadProperties(ctx, r.LayerID, r.ReleaseID)
		if err != nil {
			return ws, err
		}
		if !all {
			ws.Properties = false
			break
		}
	}
	return ws, nil
}
