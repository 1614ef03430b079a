package bench

import (
	"errors"
	"fmt"
	"slices"

	"github.com/paulmach/orb"

	"siteenv/ingest"
	"siteenv/ingest/synth"
	"siteenv/tiles"
)

// The sydney scale: 500,000 features in five layers around Greater Sydney,
// the size issue 41 states its fresh-mix goals at. Its features are the
// synthetic registers' own (synth.Large, so clustered around the real
// localities as each register is: bores where people are, contaminated
// sites in the urban centres, watercourses everywhere, flood areas along
// the urban creeks, acid sulfate soils on the coast), the first of each
// layer's stream whose centre lies in the Greater Sydney box. Each layer
// streams on its own, so generating it costs a few times its kept features
// (the watercourses about 13 times: few of Australia's are in Sydney).

// ScaleSydney selects the sydney dataset in `bench engine` and `bench api`.
const ScaleSydney synth.Scale = "sydney"

// sydneyBox is synth's greater-sydney region (minLon, minLat, maxLon,
// maxLat): the flood planning layer's coverage.
var sydneyBox = orb.Bound{Min: orb.Point{150.2, -34.35}, Max: orb.Point{151.65, -33.05}}

// sydneyLayers are the five layers and how many features each keeps: a
// register's mix of points (bores, contaminated sites), lines
// (watercourses) and polygons (flood planning, acid sulfate soils).
var sydneyLayers = []sydneyLayer{
	{"au-groundwater-bores", 150_000},
	{"nsw-epa-contaminated-land", 60_000},
	{"au-surface-hydrology-lines", 100_000},
	{"nsw-flood-planning-area", 110_000},
	{"au-atlas-acid-sulfate-soils", 80_000},
}

type sydneyLayer struct {
	id string
	n  int64
}

// layerSource is what a dataset is built from: a synth.Generator, or the
// sydney scale's selection of one.
type layerSource interface {
	Sections() []synth.Section
	Layers() []*ingest.LayerDef
	Features(layerID string, yield func(tiles.Feature) error) error
}

// sydneySource is the sydney scale's layerSource.
type sydneySource struct{ g *synth.Generator }

func newSydneySource(seed int64) (*sydneySource, error) {
	g, err := synth.New(seed, synth.Large)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return &sydneySource{g: g}, nil
}

// Layers returns the five layers' definitions.
func (s *sydneySource) Layers() []*ingest.LayerDef {
	var defs []*ingest.LayerDef
	for _, l := range sydneyLayers {
		if d, ok := s.g.Layer(l.id); ok {
			defs = append(defs, d)
		}
	}
	return defs
}

// Sections returns the sections the five layers are in.
func (s *sydneySource) Sections() []synth.Section {
	keys := map[string]bool{}
	for _, d := range s.Layers() {
		keys[d.SectionKey] = true
	}
	return slices.DeleteFunc(s.g.Sections(), func(sc synth.Section) bool { return !keys[sc.Key] })
}

// Features streams layerID's features whose centre lies in sydneyBox, up
// to the layer's count.
func (s *sydneySource) Features(layerID string, yield func(tiles.Feature) error) error {
	i := slices.IndexFunc(sydneyLayers, func(l sydneyLayer) bool { return l.id == layerID })
	if i < 0 {
		return fmt.Errorf("bench: sydney scale has no layer %q", layerID)
	}
	want, n := sydneyLayers[i].n, int64(0)
	err := s.g.Features(layerID, func(f tiles.Feature) error {
		if !sydneyBox.Contains(f.Geometry.Bound().Center()) {
			return nil
		}
		if err := yield(f); err != nil {
			return err
		}
		if n++; n == want {
			return errEnough
		}
		return nil
	})
	switch {
	case errors.Is(err, errEnough):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("bench: sydney scale: layer %s has %d features in the box, not %d", layerID, n, want)
}
