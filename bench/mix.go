package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/tidwall/geodesic"

	"siteenv/geo"
	"siteenv/ingest/synth"
	"siteenv/tiles"
)

// The query mix: 60% point, 25% line and 15% polygon sites near synthetic
// features (so results are not trivially empty), radius log-uniform over
// 1 m..10 km with an exact 0 (intersection) 5% of the time, and 1, 3 or 10
// layers drawn without replacement.
const (
	pointShare   = 0.60
	lineShare    = 0.25
	zeroRadius   = 0.05
	minRadiusM   = 1
	maxRadiusM   = 10_000
	anchorOffset = 300    // metres: sites sit up to this far from a feature
	maxSiteArea  = 40e4   // square metres (40 ha)
	anchorCount  = 4096   // features sampled as site anchors
	mixStream    = 0x6d69 // PCG stream of the mix ("mi")
)

// layersPerQuery are the layer counts a query selects, equally likely.
var layersPerQuery = []int{1, 3, 10}

// wgs84 is the bench's own ellipsoid: geodesic.Ellipsoid values hold no
// locks, and the engine's geo package shares geodesic.WGS84.
var wgs84 = geodesic.NewEllipsoid(6378137, 1/298.257223563)

type siteKind int

const (
	kindPoint siteKind = iota
	kindLine
	kindPolygon
)

func (k siteKind) String() string {
	return [...]string{"point", "line", "polygon"}[k]
}

// query is one query of the mix, with its site also as WKB for PostGIS.
type query struct {
	kind   siteKind
	site   orb.Geometry
	wkb    []byte
	radius float64
	layers []int // indexes into dataset.layers
}

// sampleAnchors draws about total feature positions (the first position of
// each sampled feature), each layer contributing in proportion to its
// size, and counts each layer's vertices on the way. Each layer samples with its own seeded stream, in tile order, so the
// anchors depend only on the data and the seed.
func sampleAnchors(ctx context.Context, ds *dataset, total int, seed int64) ([]orb.Point, error) {
	var anchors []orb.Point
	for li, l := range ds.layers {
		k := int(math.Ceil(float64(total) * float64(l.manifest.FeatureCount) / float64(ds.features)))
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(li)+1))
		res := make([][]byte, 0, k)
		var n int64
		var vertices int64
		err := ds.eachTile(ctx, l, func(t *tiles.Tile) error {
			for i := range t.Len() {
				n++
				v, err := wkbVertices(t.WKB[i])
				if err != nil {
					return fmt.Errorf("bench: layer %s: feature %q: %w", l.id, t.IDs[i], err)
				}
				vertices += v
				// Copies: a slice of the tile would keep its whole row
				// group's buffer alive.
				if len(res) < k {
					res = append(res, slices.Clone(t.WKB[i]))
				} else if j := rng.Int64N(n); j < int64(k) {
					res[j] = slices.Clone(t.WKB[i])
				}
			}
			return nil
		})
		l.vertices = vertices
		if err != nil {
			return nil, err
		}
		for _, b := range res {
			g, err := geo.DecodeWKB(b, math.MaxInt)
			if err != nil {
				return nil, fmt.Errorf("bench: layer %s: anchor geometry: %w", l.id, err)
			}
			anchors = append(anchors, firstPoint(g))
		}
	}
	if len(anchors) == 0 {
		return nil, fmt.Errorf("bench: no features to place sites near")
	}
	return anchors, nil
}

func firstPoint(g orb.Geometry) orb.Point {
	switch g := g.(type) {
	case orb.Point:
		return g
	case orb.MultiPoint:
		return g[0]
	case orb.LineString:
		return g[0]
	case orb.MultiLineString:
		return g[0][0]
	case orb.Polygon:
		return g[0][0]
	case orb.MultiPolygon:
		return g[0][0][0]
	}
	return g.Bound().Center()
}

// makeMix generates n queries over nLayers layers, reproducibly from seed.
func makeMix(n int, anchors []orb.Point, nLayers int, seed int64) ([]query, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), mixStream))
	qs := make([]query, n)
	for i := range qs {
		q := &qs[i]
		c := offset(anchors[rng.IntN(len(anchors))], rng.Float64()*360, rng.Float64()*anchorOffset)
		switch u := rng.Float64(); {
		case u < pointShare:
			q.kind, q.site = kindPoint, c
		case u < pointShare+lineShare:
			q.kind, q.site = kindLine, lineSite(rng, c)
		default:
			q.kind, q.site = kindPolygon, polygonSite(rng, c)
		}
		if err := geo.Validate(q.site, 0); err != nil {
			return nil, fmt.Errorf("bench: generated an invalid %s site: %w", q.kind, err)
		}
		if rng.Float64() >= zeroRadius {
			q.radius = math.Exp(rng.Float64()*math.Log(maxRadiusM/minRadiusM)) * minRadiusM
		}
		k := min(layersPerQuery[rng.IntN(len(layersPerQuery))], nLayers)
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

// offset returns the point dist metres from p along azimuth az (degrees).
func offset(p orb.Point, az, dist float64) orb.Point {
	var lat, lon float64
	wgs84.Direct(p[1], p[0], az, dist, &lat, &lon, nil)
	return orb.Point{lon, lat}
}

// lineSite is a polyline of 2 to 6 positions, 100 to 800 m long in all,
// turning by up to 50 degrees at each vertex.
func lineSite(rng *rand.Rand, start orb.Point) orb.LineString {
	n := 2 + rng.IntN(5)
	step := (100 + rng.Float64()*700) / float64(n-1)
	az := rng.Float64() * 360
	ls := orb.LineString{start}
	for range n - 1 {
		ls = append(ls, offset(ls[len(ls)-1], az, step))
		az += (rng.Float64() - 0.5) * 100
	}
	return ls
}

// polygonSite is a star-shaped polygon of 4 to 10 vertices around c, at
// most 300 m from it, so at most ~28 ha (checked against maxSiteArea).
// Vertex bearings are jittered around equal steps, so they stay in order
// and the ring never crosses itself.
func polygonSite(rng *rand.Rand, c orb.Point) orb.Polygon {
	for {
		n := 4 + rng.IntN(7)
		r0 := 60 + rng.Float64()*240
		ring := make(orb.Ring, 0, n+1)
		base := rng.Float64() * 360
		// Descending bearings: bearings turn clockwise, so this ring runs
		// counter-clockwise as RFC 7946 asks for exterior rings.
		for i := n - 1; i >= 0; i-- {
			az := base + (float64(i)+(rng.Float64()-0.5)*0.6)*360/float64(n)
			ring = append(ring, offset(c, az, r0*(0.55+0.45*rng.Float64())))
		}
		ring = append(ring, ring[0])
		p := orb.Polygon{ring}
		if geo.Area(p) <= maxSiteArea && geo.Validate(p, 0) == nil {
			return p
		}
	}
}

// workload is a harness's data and query mix in its own work directory.
type workload struct {
	dir string
	gen layerSource
	ds  *dataset
	mix []query
	// anchors are the feature positions the mix's sites sit near.
	anchors []orb.Point
}

// prepareWorkload makes a work directory under workDir (named for the
// harness), builds the scale's dataset there and the seeded query mix over
// it. The caller removes w.dir (also on error, when it is set).
func prepareWorkload(ctx context.Context, name, workDir, keepDir string, scale synth.Scale, seed int64, queries int, maxPerLayer int64, log *slog.Logger) (w workload, err error) {
	if w.dir, err = os.MkdirTemp(workDir, "bench-"+name+"-"); err != nil {
		return w, fmt.Errorf("bench: work dir: %w", err)
	}
	// When run as root PostgreSQL runs as postgres, which must traverse
	// this directory to reach its cluster.
	if err := os.Chmod(w.dir, 0o755); err != nil {
		return w, fmt.Errorf("bench: work dir: %w", err)
	}
	if scale == ScaleHeavy {
		return prepareHeavyWorkload(ctx, w, seed, queries, log)
	}
	if scale == ScaleSydney {
		if w.gen, err = newSydneySource(seed); err != nil {
			return w, err
		}
	} else if w.gen, err = synth.New(seed, scale); err != nil {
		return w, fmt.Errorf("bench: %w", err)
	}
	if keepDir != "" {
		kept := datasetCacheDir(keepDir, scale, seed, maxPerLayer)
		if w.ds, err = keptDataset(ctx, w.gen, kept, maxPerLayer, log); err != nil {
			return w, err
		}
		w.anchors, err = keptAnchors(ctx, kept, w.ds, anchorCount, seed)
	} else {
		if w.ds, err = buildDataset(ctx, w.gen, w.dir, maxPerLayer, log); err != nil {
			return w, err
		}
		w.anchors, err = sampleAnchors(ctx, w.ds, anchorCount, seed)
	}
	if err != nil {
		return w, err
	}
	w.mix, err = makeMix(queries, w.anchors, len(w.ds.layers), seed)
	return w, err
}
