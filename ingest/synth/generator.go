// Package synth generates realistic, reproducible synthetic Australian
// data for demos and benchmarks: street addresses and cadastral parcels
// around the real localities of au-localities.csv (see NOTICE), and 12 to
// 20 environmental layers in 5 to 7 sections with realistic schemas,
// provenance and coverage.
//
// The same seed and scale give the same output, byte for byte. Everything
// is streamed: no layer is ever held in memory, so the large scale (about
// 20 million features) generates in bounded memory. Each layer, and each
// locality's addresses, draws from its own PCG stream (math/rand/v2)
// seeded by the generator's seed and the stream's name, so layers can be
// generated independently and in parallel.
package synth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/paulmach/orb"
)

// Scale is how much data to generate.
type Scale string

// Scales.
const (
	Small  Scale = "small"  // ~200k layer features, ~20k addresses: seconds
	Medium Scale = "medium" // ~2M layer features, ~200k addresses
	Large  Scale = "large"  // ~20M layer features, ~2M addresses
)

// ParseScale parses "small", "medium" or "large".
func ParseScale(s string) (Scale, error) {
	switch sc := Scale(strings.ToLower(strings.TrimSpace(s))); sc {
	case Small, Medium, Large:
		return sc, nil
	}
	return "", fmt.Errorf("synth: unknown scale %q (use small, medium or large)", s)
}

// Features is the total number of environmental layer features at s.
func (s Scale) Features() int64 {
	switch s {
	case Medium:
		return 2_000_000
	case Large:
		return 20_000_000
	}
	return 200_000
}

// Addresses is the number of address points at s (about 10% of the layer
// features); there are about as many parcels.
func (s Scale) Addresses() int64 { return s.Features() / 10 }

// Section is a priced group of layers.
type Section struct {
	Key   string
	Name  string
	Price int64 // credits per site; 0 = free
}

// Generator generates one seed's data at one scale. It is immutable after
// New and safe for concurrent use: Features may run for several layers at
// once.
type Generator struct {
	seed      int64
	scale     Scale
	locs      []locality
	addrCount []int32 // addresses per locality
	layers    []*layerSpec
	byID      map[string]*layerSpec
	counts    map[string]int64
	coverage  map[string]orb.Polygon // by coverage key; absent = unknown
	australia orb.Ring               // coarse outline: features stay inside
}

// New returns a generator for seed and scale.
func New(seed int64, scale Scale) (*Generator, error) {
	if _, err := ParseScale(string(scale)); err != nil {
		return nil, err
	}
	locs, err := localities()
	if err != nil {
		return nil, err
	}
	g := &Generator{
		seed:     seed,
		scale:    scale,
		locs:     locs,
		layers:   layerSpecs(),
		byID:     map[string]*layerSpec{},
		counts:   map[string]int64{},
		coverage: map[string]orb.Polygon{},
	}
	g.addrCount = allocateAddresses(seed, locs, scale.Addresses())
	weights := make([]float64, len(g.layers))
	for i, l := range g.layers {
		g.byID[l.ID] = l
		weights[i] = l.Weight
	}
	for i, n := range counts(scale.Features(), weights) {
		g.counts[g.layers[i].ID] = n
	}
	all := make([]orb.Point, len(locs))
	for i, l := range locs {
		all[i] = orb.Point{l.Lon, l.Lat}
	}
	aus := bufferedHull(all, 0.25)
	g.australia = aus[0]
	g.coverage["AUS"] = aus
	for _, l := range g.layers {
		key := l.Coverage
		if key == "" || key == "AUS" || g.coverage[key] != nil {
			continue
		}
		var pts []orb.Point
		for i := range locs {
			if l.eligible(&locs[i]) {
				pts = append(pts, orb.Point{locs[i].Lon, locs[i].Lat})
			}
		}
		if len(pts) < 3 {
			return nil, fmt.Errorf("synth: layer %s: coverage %s has %d localities", l.ID, key, len(pts))
		}
		g.coverage[key] = bufferedHull(pts, 0.1)
	}
	return g, nil
}

// Seed is the generator's seed.
func (g *Generator) Seed() int64 { return g.seed }

// Scale is the generator's scale.
func (g *Generator) Scale() Scale { return g.scale }

// Sections returns the sections, ordered by key.
func (g *Generator) Sections() []Section { return slices.Clone(sections) }

// FeatureCount is the number of features Features yields for layerID (0
// for an unknown layer).
func (g *Generator) FeatureCount(layerID string) int64 { return g.counts[layerID] }
