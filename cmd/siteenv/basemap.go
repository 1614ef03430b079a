package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"siteenv/basemap"
	"siteenv/report"
	"siteenv/store"
)

// openBasemap opens the basemap SITEENV_BASEMAP names: a PMTiles file, or
// with "store:" an object in the store (store:basemap/au.pmtiles); ""
// opens none (the maps say so). The closer releases the file or object.
func openBasemap(ctx context.Context, set settings, st store.Store) (report.Basemap, io.Closer, error) {
	switch {
	case set.Basemap == "":
		return nil, io.NopCloser(nil), nil
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
		return a, obj, nil
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
	return a, f, nil
}
