package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"siteenv/engine"
	"siteenv/ledger"
)

// warmEngine is serve's warm start, run in the background while the server
// already answers: it loads the shards of every layer's current release,
// and then their property blocks, while the engine's budget
// (SITEENV_ENGINE_MEMORY) holds them without evicting (engine.Warm). A
// query arriving meanwhile loads what it needs as it would without it.
func warmEngine(ctx context.Context, eng *engine.Engine, led *ledger.Ledger, log *slog.Logger) {
	start := time.Now()
	rels, err := currentReleases(ctx, led)
	if err == nil {
		var ws engine.WarmStats
		ws, err = eng.Warm(ctx, rels)
		if err == nil {
			log.Info("engine warmed", "releases", len(rels), "shards", ws.Shards, "shards_left", ws.Skipped,
				"shard_bytes", ws.ShardBytes, "all_properties", ws.Properties, "seconds", time.Since(start).Seconds())
			return
		}
	}
	if errors.Is(err, context.Canceled) {
		return // shutting down
	}
	log.Warn("engine warm start stopped; shards load on first use", "err", err)
}

// currentReleases lists every layer's current release, by layer id.
func currentReleases(ctx context.Context, led *ledger.Ledger) ([]engine.Release, error) {
	const page = 500
	var out []engine.Release
	after := ""
	for {
		layers, err := led.ListLayers(ctx, ledger.LayerFilter{WithoutCoverage: true, AfterID: after, Limit: page})
		if err != nil {
			return nil, err
		}
		for i, y := range layers {
			if i == page {
				break
			}
			if y.CurrentReleaseID != nil {
				out = append(out, engine.Release{LayerID: y.ID, ReleaseID: *y.CurrentReleaseID})
			}
			after = y.ID
		}
		if len(layers) <= page {
			return out, nil
		}
	}
}
