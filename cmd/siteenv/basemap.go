package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"

	"siteenv/basemap"
	"siteenv/report"
	"siteenv/store"
)

// storeBasemapKey is where the store keeps its own basemap: `siteenv demo`
// writes the demo's there, and serve draws it when SITEENV_BASEMAP is unset.
const storeBasemapKey = "basemap/basemap.pmtiles"

// openBasemap opens the basemap SITEENV_BASEMAP names: a PMTiles file, or
// with "store:" an object in the store (store:basemap/au.pmtiles); when
// unset, the store's storeBasemapKey if there is one, else none (the maps
// say so). The closer releases the file or object. Tile read errors are
// logged to log (loggedBasemap).
func openBasemap(ctx context.Context, set settings, st store.Store, log *slog.Logger) (report.Basemap, io.Closer, error) {
	switch {
	case set.Basemap == "":
		if _, err := st.Stat(ctx, storeBasemapKey); err != nil {
			if errors.Is(err, store.ErrNotExist) {
				return nil, io.NopCloser(nil), nil
			}
			return nil, nil, fmt.Errorf("basemap %s: %w", storeBasemapKey, err)
		}
		set.Basemap = "store:" + storeBasemapKey
		return openBasemap(ctx, set, st, log)
	case strings.HasPrefix(set.Basemap, "store:"):
		obj, err := st.Open(ctx, strings.TrimPrefix(set.Basemap, "store:"))
		if err != nil {
			return nil, nil, fmt.Errorf("SITEENV_BASEMAP %s: %w", set.Basemap, err)
		}
		a, err := basemap.Open(obj)
		if err != nil {
			obj.Close()
			return nil, nil, fmt.Errorf("SITEENV_BASEMAP %s: %w", set.Basemap, err)
		}
		return loggedBasemap{a, log}, obj, nil
	}
	f, err := os.Open(set.Basemap)
	if err != nil {
		return nil, nil, fmt.Errorf("SITEENV_BASEMAP: %w", err)
	}
	a, err := basemap.Open(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("SITEENV_BASEMAP %s: %w", set.Basemap, err)
	}
	return loggedBasemap{a, log}, f, nil
}

// loggedBasemap logs the archive's tile read errors: the map says only that
// its basemap could not be read (report.Map), the log says why.
type loggedBasemap struct {
	report.Basemap
	log *slog.Logger
}

func (b loggedBasemap) Layers(bound orb.Bound, z int) ([]mvt.Layers, error) {
	ls, err := b.Basemap.Layers(bound, z)
	if err != nil {
		b.log.Warn("basemap tiles could not be read; the map is drawn without them and says so", "zoom", z, "err", err)
	}
	return ls, err
}
