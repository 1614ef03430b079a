package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"siteenv/geo"
)

// The small-query mix: the queries users mostly run. 60% points and 40%
// small lots (polygons at most about 300 m across), near the synthetic
// (clustered) features, radius log-uniform over 10 m..10 km, and 1, 3 or 5
// layers drawn without replacement. bench api runs it beside the engine's
// mix and reports it on rows of its own.
const (
	smallPointShare = 0.60
	smallMinRadiusM = 10
	smallLotRadiusM = 150    // a lot's vertices lie at most this far from its centre
	smallMixStream  = 0x736d // PCG stream of the small mix ("sm")
)

// smallLayersPerQuery are the layer counts a small query selects, equally likely.
var smallLayersPerQuery = []int{1, 3, 5}

// makeSmallMix generates n small queries over nLayers layers, reproducibly
// from seed, around the anchors (feature positions).
func makeSmallMix(n int, anchors []orb.Point, nLayers int, seed int64) ([]query, error) {
	return makeSiteMix(n, anchors, nLayers, rand.New(rand.NewPCG(uint64(seed), smallMixStream)), siteMix{
		name: "small-query", pointShare: smallPointShare,
		lot: func(rng *rand.Rand, c orb.Point) orb.Polygon { return starLot(rng, c, 15, smallLotRadiusM, 0.55, 0.45) },
	})
}

// siteMix is what a mix of point and lot sites near the features draws:
// its share of points, the lots, and how often its radius is 0 (0: never,
// and no draw for it, so a mix's sequence stays as it was).
type siteMix struct {
	name       string
	pointShare float64
	zeroRadius float64
	lot        func(rng *rand.Rand, c orb.Point) orb.Polygon
}

// makeSiteMix generates n queries of m over nLayers layers from rng:
// sites near the anchors, radius log-uniform over 10 m..10 km (or 0), 1,
// 3 or 5 layers drawn without replacement.
func makeSiteMix(n int, anchors []orb.Point, nLayers int, rng *rand.Rand, m siteMix) ([]query, error) {
	if n > 0 && len(anchors) == 0 {
		return nil, fmt.Errorf("bench: the %s mix needs features to place its sites near", m.name)
	}
	qs := make([]query, n)
	for i := range qs {
		q := &qs[i]
		c := offset(anchors[rng.IntN(len(anchors))], rng.Float64()*360, rng.Float64()*anchorOffset)
		if rng.Float64() < m.pointShare {
			q.kind, q.site = kindPoint, c
		} else {
			q.kind, q.site = kindPolygon, m.lot(rng, c)
		}
		if err := geo.Validate(q.site, 0); err != nil {
			return nil, fmt.Errorf("bench: generated an invalid %s site: %w", q.kind, err)
		}
		if m.zeroRadius == 0 || rng.Float64() >= m.zeroRadius {
			q.radius = math.Exp(rng.Float64()*math.Log(maxRadiusM/smallMinRadiusM)) * smallMinRadiusM
		}
		k := min(smallLayersPerQuery[rng.IntN(len(smallLayersPerQuery))], nLayers)
		q.layers = rng.Perm(nLayers)[:k]
		slices.Sort(q.layers)
		b, err := wkb.Marshal(q.site)
		if err != nil {
			return nil, fmt.Errorf("bench: site wkb: %w", err)
		}
		q.wkb = b
	}
	return qs, nil
}

// starLot is a star-shaped lot of 4 to 8 vertices around c, counter-
// clockwise as polygonSite's: its size r0 uniform over rMin..rMax metres,
// each vertex between inner and inner+spread of r0 from c.
func starLot(rng *rand.Rand, c orb.Point, rMin, rMax, inner, spread float64) orb.Polygon {
	for {
		n := 4 + rng.IntN(5)
		r0 := rMin + rng.Float64()*(rMax-rMin)
		ring := make(orb.Ring, 0, n+1)
		base := rng.Float64() * 360
		for i := n - 1; i >= 0; i-- {
			az := base + (float64(i)+(rng.Float64()-0.5)*0.6)*360/float64(n)
			ring = append(ring, offset(c, az, r0*(inner+spread*rng.Float64())))
		}
		ring = append(ring, ring[0])
		p := orb.Polygon{ring}
		if geo.Validate(p, 0) == nil {
			return p
		}
	}
}
