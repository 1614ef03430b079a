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
	if n > 0 && len(anchors) == 0 {
		return nil, fmt.Errorf("bench: the small-query mix needs features to place its sites near")
	}
	rng := rand.New(rand.NewPCG(uint64(seed), smallMixStream))
	qs := make([]query, n)
	for i := range qs {
		q := &qs[i]
		c := offset(anchors[rng.IntN(len(anchors))], rng.Float64()*360, rng.Float64()*anchorOffset)
		if rng.Float64() < smallPointShare {
			q.kind, q.site = kindPoint, c
		} else {
			q.kind, q.site = kindPolygon, smallLot(rng, c)
		}
		if err := geo.Validate(q.site, 0); err != nil {
			return nil, fmt.Errorf("bench: generated an invalid %s site: %w", q.kind, err)
		}
		q.radius = math.Exp(rng.Float64()*math.Log(maxRadiusM/smallMinRadiusM)) * smallMinRadiusM
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

// smallLot is a star-shaped lot of 4 to 8 vertices within smallLotRadiusM
// of c (at most about 300 m across), counter-clockwise as polygonSite's.
func smallLot(rng *rand.Rand, c orb.Point) orb.Polygon {
	for {
		n := 4 + rng.IntN(5)
		r0 := 15 + rng.Float64()*(smallLotRadiusM-15)
		ring := make(orb.Ring, 0, n+1)
		base := rng.Float64() * 360
		for i := n - 1; i >= 0; i-- {
			az := base + (float64(i)+(rng.Float64()-0.5)*0.6)*360/float64(n)
			ring = append(ring, offset(c, az, r0*(0.55+0.45*rng.Float64())))
		}
		ring = append(ring, ring[0])
		p := orb.Polygon{ring}
		if geo.Validate(p, 0) == nil {
			return p
		}
	}
}
