// Package engine is siteenv's in-memory spatial engine: it answers buffered
// intersection queries (the features of a layer release within a radius of
// a site) over immutable release tiles.
//
// Each tile of a release is a shard: the tile's columns plus a packed
// R-tree over its features' boxes, loaded from the store on first use and
// kept under a byte budget (least recently used shards are evicted, never
// one a query is using). Releases are immutable and shards are keyed by
// their store key (layer, release, tile), so a new release is simply new
// shards: queries on older releases are never blocked or changed.
//
// Distances are geodesic on the WGS 84 ellipsoid, with edges taken as
// geodesics; membership is exact to well under a millimetre (see eval.go).
// Result limits are enforced while a layer runs and fail the layer
// explicitly: a result is never truncated.
package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paulmach/orb"

	"siteenv/engine/geo"
	"siteenv/tiles"
)

// Defaults and bounds.
const (
	DefaultMemoryBudget    = 2 << 30
	DefaultMaxFeatures     = 100_000
	DefaultMaxBytes        = 50 << 20
	DefaultMaxFeatureBytes = 1 << 20
	MaxRadiusM             = 10_000
)

// Layer statuses and reasons (the contract's per-layer values).
const (
	StatusDataPresent = "data_present"
	StatusNoData      = "no_data"
	StatusUnavailable = "unavailable"

	ReasonNoMatches           = "no_matches"
	ReasonOutsideCoverage     = "outside_coverage"
	ReasonSourceUnavailable   = "source_unavailable"
	ReasonResultLimitExceeded = "result_limit_exceeded"
	ReasonFeatureTooLarge     = "feature_too_large"

	// LimitCode values: the contract's error code for a failed limit.
	LimitResultLimitExceeded = "result_limit_exceeded"
	LimitOutputTooLarge      = "output_too_large"
	LimitFeatureTooLarge     = "feature_too_large"
)

// ErrInvalidRequest reports a Request the engine cannot run. Per-layer
// failures are not errors: they are reported in LayerResult.
var ErrInvalidRequest = errors.New("engine: invalid request")

// Options configure an Engine.
type Options struct {
	// MemoryBudget bounds the bytes of loaded shards (tile columns and
	// indexes). Default DefaultMemoryBudget (2 GiB); the caller parses
	// SITEENV_ENGINE_MEMORY. The budget can be exceeded while running
	// queries hold more shards than it allows.
	MemoryBudget int64
}

// Engine answers buffered intersection queries over immutable releases.
// It is safe for concurrent use.
type Engine struct {
	store  tiles.Store
	budget int64

	mu struct {
		sync.Mutex
		shards    map[string]*shardEntry // by tile key
		idle      shardEntry             // sentinel of the idle list
		manifests map[string]*manifestEntry
		tick      uint64
		locals    map[[2]int32]geo.Local // by snapped centre (localFor)

		resident, features, indexBytes int64
		loads, loadErrors, evictions   int64
		loadedFeatures, hits           int64
		loadTime                       time.Duration
	}
}

// New returns an engine over the releases in store.
func New(store tiles.Store, opt Options) *Engine {
	if opt.MemoryBudget <= 0 {
		opt.MemoryBudget = DefaultMemoryBudget
	}
	e := &Engine{store: store, budget: opt.MemoryBudget}
	e.mu.shards = map[string]*shardEntry{}
	e.mu.manifests = map[string]*manifestEntry{}
	e.mu.locals = map[[2]int32]geo.Local{}
	e.mu.idle.next, e.mu.idle.prev = &e.mu.idle, &e.mu.idle
	return e
}

// LayerRequest selects one layer release and its limits.
type LayerRequest struct {
	// LayerID and ReleaseID name the frozen release; its shards are keyed
	// by (layer, release, tile).
	LayerID, ReleaseID string
	// Coverage is the release's coverage polygon (Polygon or
	// MultiPolygon, CRS84); nil (or any other type) means unknown.
	Coverage orb.Geometry
	// MaxFeatures: more matches fail the layer. Default DefaultMaxFeatures.
	MaxFeatures int
	// MaxBytes caps the encoded size of the layer's features. Default
	// DefaultMaxBytes.
	MaxBytes int64
	// MaxFeatureBytes caps one feature's encoded size. Default
	// DefaultMaxFeatureBytes.
	MaxFeatureBytes int64
	// IncludeGeometry: Feature.Geometry is set and the encoded size counts
	// it. Distances are computed either way.
	IncludeGeometry bool
}

// Request is one query.
type Request struct {
	// Site is a Point, MultiPoint, LineString, MultiLineString, Polygon or
	// MultiPolygon in CRS84 that passes geo.Validate.
	Site orb.Geometry
	// RadiusM is 0..MaxRadiusM. 0 means intersection: features touching
	// or inside a polygon site, containing or touching a point site,
	// touching a line site.
	RadiusM float64
	Layers  []LayerRequest
}

// Feature is a matched feature.
type Feature struct {
	ID string
	// DistanceM is the geodesic distance from the site in metres, 0 when
	// the feature and the site intersect.
	DistanceM float64
	// Geometry is set when the layer request asked for it.
	Geometry orb.Geometry

	// The properties are read from the tile when asked for (Properties):
	// most of a large result is counted, sorted and written once, and a
	// map per feature built up front was a fifth of a query's time.
	tile  *tiles.Tile
	row   int32
	props map[string]any // when tile is nil (tests)
}

// Properties returns the feature's properties, a new map on each call.
func (f *Feature) Properties() map[string]any {
	if f.tile == nil {
		return f.props
	}
	return f.tile.Properties(int(f.row))
}

// LayerResult is the outcome for one layer.
type LayerResult struct {
	LayerID, ReleaseID string
	// Status is StatusDataPresent, StatusNoData or StatusUnavailable.
	Status string
	// Reason is "" (data present), ReasonNoMatches, ReasonOutsideCoverage,
	// ReasonSourceUnavailable, ReasonResultLimitExceeded or
	// ReasonFeatureTooLarge.
	Reason string
	// LimitCode is the error code of a failed limit: LimitResultLimitExceeded
	// (too many features), LimitOutputTooLarge (too many bytes) or
	// LimitFeatureTooLarge; "" otherwise.
	LimitCode string
	// Coverage is complete, partial, none or unknown, for the search area
	// (the site buffered by the radius).
	Coverage string
	// Count is the number of matches; nil when unknown (unavailable).
	Count *int
	// Features are sorted by DistanceM, then ID; empty unless data present.
	Features []Feature
	// EncodedBytes is the encoded size of Features (see encode.go).
	EncodedBytes int64
}

// Stats describes the engine's caches.
type Stats struct {
	Shards        int   // shards loaded
	ResidentBytes int64 // bytes held by loaded shards (columns and indexes)
	IndexBytes    int64 // of which indexes
	Features      int64 // features in loaded shards
	Manifests     int
	Loads         int64 // shard loads completed
	LoadErrors    int64 // failed loads (not counting abandoned ones)
	// LoadedFeatures and LoadSeconds total every load;
	// LoadFeaturesPerSec is their ratio.
	LoadedFeatures     int64
	LoadSeconds        float64
	LoadFeaturesPerSec float64
	Evictions          int64
	Hits               int64 // acquisitions that found the shard loaded or loading
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Stats{
		Shards:         len(e.mu.shards),
		ResidentBytes:  e.mu.resident,
		IndexBytes:     e.mu.indexBytes,
		Features:       e.mu.features,
		Manifests:      len(e.mu.manifests),
		Loads:          e.mu.loads,
		LoadErrors:     e.mu.loadErrors,
		LoadedFeatures: e.mu.loadedFeatures,
		LoadSeconds:    e.mu.loadTime.Seconds(),
		Evictions:      e.mu.evictions,
		Hits:           e.mu.hits,
	}
	for _, se := range e.mu.shards {
		if se.s == nil {
			s.Shards-- // still loading
		}
	}
	if s.LoadSeconds > 0 {
		s.LoadFeaturesPerSec = float64(s.LoadedFeatures) / s.LoadSeconds
	}
	return s
}

func (lr LayerRequest) withDefaults() LayerRequest {
	if lr.MaxFeatures == 0 {
		lr.MaxFeatures = DefaultMaxFeatures
	}
	if lr.MaxBytes == 0 {
		lr.MaxBytes = DefaultMaxBytes
	}
	if lr.MaxFeatureBytes == 0 {
		lr.MaxFeatureBytes = DefaultMaxFeatureBytes
	}
	return lr
}

func (req *Request) validate() error {
	switch req.Site.(type) {
	case orb.Point, orb.MultiPoint, orb.LineString, orb.MultiLineString, orb.Polygon, orb.MultiPolygon:
	case nil:
		return fmt.Errorf("%w: no site", ErrInvalidRequest)
	default:
		return fmt.Errorf("%w: site type %T", ErrInvalidRequest, req.Site)
	}
	if err := geo.Validate(req.Site, 0); err != nil {
		return fmt.Errorf("%w: site: %w", ErrInvalidRequest, err)
	}
	if !(req.RadiusM >= 0 && req.RadiusM <= MaxRadiusM) {
		return fmt.Errorf("%w: radius %v outside 0..%d", ErrInvalidRequest, req.RadiusM, MaxRadiusM)
	}
	for i, lr := range req.Layers {
		switch {
		case lr.LayerID == "" || lr.ReleaseID == "":
			return fmt.Errorf("%w: layer %d: layer and release ids are required", ErrInvalidRequest, i)
		case strings.Contains(lr.LayerID, "/") || strings.Contains(lr.ReleaseID, "/"):
			return fmt.Errorf("%w: layer %d: malformed id", ErrInvalidRequest, i)
		case lr.MaxFeatures < 0 || lr.MaxBytes < 0 || lr.MaxFeatureBytes < 0:
			return fmt.Errorf("%w: layer %d: negative limit", ErrInvalidRequest, i)
		}
	}
	return nil
}

// Query runs req. The error is non-nil only for an invalid request
// (ErrInvalidRequest) or when ctx ends; everything that goes wrong with a
// layer is reported in its LayerResult. Results are in the order of
// req.Layers.
func (e *Engine) Query(ctx context.Context, req Request) ([]LayerResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := prepareSite(req.Site, e.local)
	out := make([]LayerResult, len(req.Layers))
	workers := min(len(req.Layers), runtime.GOMAXPROCS(0))
	if workers <= 1 {
		ev := newEvaluator(s, req.RadiusM)
		for i, lr := range req.Layers {
			res, err := e.queryLayer(ctx, ev, lr.withDefaults())
			if err != nil {
				return nil, err
			}
			out[i] = res
		}
		return out, nil
	}
	// Layers are independent: run them on every core, each worker with
	// its own evaluator (scratch buffers) over the shared, immutable site.
	// A query's latency is then bounded by its heaviest layer rather than
	// the sum of its layers.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int32
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := newEvaluator(s, req.RadiusM)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(req.Layers) || ctx.Err() != nil {
					return
				}
				res, err := e.queryLayer(ctx, ev, req.Layers[i].withDefaults())
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
					return
				}
				out[i] = res
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Site projections are shared: a query's projection is centred on the
// centre of a localSnap-degree cell rather than on the site itself (at most
// ~1.1 km away), so sites in the same area reuse one geo.Local instead of
// paying NewLocal's 36 geodesic solutions (tens of microseconds, the largest
// fixed cost of a small query). Exactness does not depend on the centre:
// ErrorBound holds for any pair within 16 km of it, and prepareSite splits
// sites that reach too far from it.
const (
	localSnap      = 0.02
	maxLocalsCache = 4096
)

func (e *Engine) local(c orb.Point) geo.Local {
	key := [2]int32{int32(math.Floor(c[0] / localSnap)), int32(math.Floor(c[1] / localSnap))}
	e.mu.Lock()
	l, ok := e.mu.locals[key]
	e.mu.Unlock()
	if ok {
		return l
	}
	l = geo.NewLocal(orb.Point{(float64(key[0]) + 0.5) * localSnap, (float64(key[1]) + 0.5) * localSnap})
	e.mu.Lock()
	if len(e.mu.locals) >= maxLocalsCache {
		for k := range e.mu.locals { // drop an arbitrary one
			delete(e.mu.locals, k)
			break
		}
	}
	e.mu.locals[key] = l
	e.mu.Unlock()
	return l
}

// tileBulgeMargin widens the search box when pruning tiles that hold
// lines or polygons: manifests record the boxes of positions, and a
// geodesic edge bows poleward of its ends (bulgeDeg). 0.01 degree covers
// edges up to about 0.7 degree (70 km) long.
const tileBulgeMargin = 0.01

func (e *Engine) queryLayer(ctx context.Context, ev *evaluator, lr LayerRequest) (LayerResult, error) {
	res := LayerResult{LayerID: lr.LayerID, ReleaseID: lr.ReleaseID}
	cov := ev.coverage(lr.Coverage)
	res.Coverage = string(cov)
	if cov == CoverageNone {
		res.Status, res.Reason = StatusNoData, ReasonOutsideCoverage
		res.Count = new(int)
		return res, nil
	}
	unavailable := func(reason, code string) LayerResult {
		res.Status, res.Reason, res.LimitCode = StatusUnavailable, reason, code
		return res
	}
	m, err := e.manifest(ctx, lr.LayerID, lr.ReleaseID)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return unavailable(ReasonSourceUnavailable, ""), nil
	}
	col := collector{lr: lr}
	for _, te := range m.Tiles {
		if !ev.mayMatch(te) {
			continue
		}
		se, err := e.acquire(ctx, te)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return unavailable(ReasonSourceUnavailable, ""), nil
		}
		err = ev.scan(ctx, se.s, &col)
		e.release(se)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return unavailable(ReasonSourceUnavailable, ""), nil
		}
		if col.reason != "" {
			return unavailable(col.reason, col.code), nil
		}
	}
	n := len(col.feats)
	res.Count = &n
	if n == 0 {
		res.Status, res.Reason = StatusNoData, ReasonNoMatches
		return res, nil
	}
	res.Status = StatusDataPresent
	res.Features = sortFeatures(col.feats)
	res.EncodedBytes = col.bytes
	return res, nil
}

// sortFeatures orders features by distance, then id. It sorts small keys
// and permutes once, which is cheaper than moving Features around.
func sortFeatures(feats []Feature) []Feature {
	type key struct {
		d float64
		i int32
	}
	keys := make([]key, len(feats))
	for i := range feats {
		keys[i] = key{feats[i].DistanceM, int32(i)}
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.d < b.d:
			return -1
		case a.d > b.d:
			return 1
		}
		return strings.Compare(feats[a.i].ID, feats[b.i].ID)
	})
	out := make([]Feature, len(feats))
	for i, k := range keys {
		out[i] = feats[k.i]
	}
	return out
}

// mayMatch reports whether tile te can hold features within the radius.
func (ev *evaluator) mayMatch(te tiles.TileEntry) bool {
	b := te.BBox.Bound()
	pointsOnly := len(te.GeometryTypes) > 0
	for _, t := range te.GeometryTypes {
		if t != "Point" && t != "MultiPoint" {
			pointsOnly = false
		}
	}
	if !pointsOnly {
		b = padDeg(b, tileBulgeMargin)
	}
	if !b.Intersects(ev.union) {
		return false
	}
	if len(ev.boxes) == 1 {
		return true
	}
	for _, sb := range ev.boxes {
		if b.Intersects(sb) {
			return true
		}
	}
	return false
}

// scan evaluates the shard's candidates and hands members to col. It stops
// early when col fails a limit.
func (ev *evaluator) scan(ctx context.Context, s *shard, col *collector) error {
	cands := ev.cands[:0]
	for _, sb := range ev.boxes {
		cands = s.ix.search(toBox32(sb), cands)
	}
	if len(ev.boxes) > 1 {
		slices.Sort(cands)
		cands = slices.Compact(cands)
	}
	ev.cands = cands
	t := s.tile
	for j, i := range cands {
		if j&255 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		w := t.WKB[i]
		var member bool
		var d float64
		if p, ok := wkbPointXY(w); ok {
			member, d = ev.point(p)
		} else {
			if err := ev.fg.decodeWKB(w); err != nil {
				return err
			}
			member, d = ev.feature(&ev.fg)
		}
		if member {
			if err := col.add(t, int(i), d); err != nil {
				return err
			}
			if col.reason != "" {
				return nil
			}
		}
	}
	return nil
}

// collector gathers a layer's matches and enforces its limits as they come.
type collector struct {
	lr           LayerRequest
	feats        []Feature
	bytes        int64
	reason, code string // set when a limit failed the layer
	z            sizer
}

func (c *collector) add(t *tiles.Tile, i int, d float64) error {
	if len(c.feats) >= c.lr.MaxFeatures {
		c.reason, c.code = ReasonResultLimitExceeded, LimitResultLimitExceeded
		c.feats = nil
		return nil
	}
	f := Feature{ID: t.IDs[i], DistanceM: d, tile: t, row: int32(i)}
	if c.lr.IncludeGeometry {
		g, err := t.Geometry(i)
		if err != nil {
			return err
		}
		f.Geometry = g
	}
	size := c.z.recordLen(c.lr.LayerID, f.ID, d, c.z.mapLen(t.Properties(i)), f.Geometry)
	if size > c.lr.MaxFeatureBytes {
		c.reason, c.code = ReasonFeatureTooLarge, LimitFeatureTooLarge
		c.feats = nil
		return nil
	}
	c.bytes += size
	if c.bytes > c.lr.MaxBytes {
		c.reason, c.code = ReasonResultLimitExceeded, LimitOutputTooLarge
		c.feats = nil
		return nil
	}
	c.feats = append(c.feats, f)
	return nil
}
