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
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/store"
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
	// Workers bounds the goroutines one query scans tiles with. Default
	// GOMAXPROCS.
	Workers int
	// Logger receives a WARN for every release manifest or tile the engine
	// cannot read (the layer is answered source_unavailable). Default
	// slog.Default().
	Logger *slog.Logger
}

// ErrInvalidOptions reports an Options field outside its range.
var ErrInvalidOptions = errors.New("engine: invalid options")

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.MemoryBudget == 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate reports the first field of filled options out of range
// (ErrInvalidOptions, naming the field): zero took the default, so a
// negative value was set on purpose.
func (o Options) validate() error {
	if o.MemoryBudget < 0 {
		return fmt.Errorf("%w: MemoryBudget must not be negative (0 takes the default), got %d", ErrInvalidOptions, o.MemoryBudget)
	}
	if o.Workers < 0 {
		return fmt.Errorf("%w: Workers must not be negative (0 takes the default), got %d", ErrInvalidOptions, o.Workers)
	}
	return nil
}

// Engine answers buffered intersection queries over immutable releases.
// It is safe for concurrent use.
type Engine struct {
	store   store.Store
	budget  int64
	workers int
	log     *slog.Logger
	// parallelMin is parallelMinCandidates and scanChunk scanChunk
	// (tests lower them).
	parallelMin float64
	scanChunk   int
	// edgeMin is edgeIndexMinVertices (0 in tests that compare with the
	// plain path: no feature gets an edge index).
	edgeMin int

	mu struct {
		sync.Mutex
		shards    map[string]*shardEntry // by tile key
		idle      shardEntry             // sentinel of the idle list
		manifests map[releaseKey]*manifestEntry
		covers    map[releaseKey]*cover
		tick      uint64
		locals    map[int32]geo.Local // by row of latitude cells (local)

		resident, features, indexBytes int64
		loads, loadErrors, evictions   int64
		loadedFeatures, hits           int64
		loadedBytes, loadedIndexBytes  int64

		props                              map[propKey]*propEntry
		propIdle                           propEntry // sentinel of the property blocks' LRU list
		propBytes                          int64
		propReads, propHits, propEvictions int64
		loadTime                           time.Duration
		sharedTiles                        int64
	}
}

// New returns an engine over the releases in store. Zero fields of opt take
// their defaults (WithDefaults); a field out of range is refused with
// ErrInvalidOptions naming it.
func New(st store.Store, opt Options) (*Engine, error) {
	opt = opt.WithDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	e := &Engine{store: st, budget: opt.MemoryBudget, workers: opt.Workers, log: opt.Logger, parallelMin: parallelMinCandidates, scanChunk: scanChunk, edgeMin: edgeIndexMinVertices}
	e.mu.shards = map[string]*shardEntry{}
	e.mu.manifests = map[releaseKey]*manifestEntry{}
	e.mu.covers = map[releaseKey]*cover{}
	e.mu.locals = map[int32]geo.Local{}
	e.mu.idle.next, e.mu.idle.prev = &e.mu.idle, &e.mu.idle
	e.mu.props = map[propKey]*propEntry{}
	e.mu.propIdle.next, e.mu.propIdle.prev = &e.mu.propIdle, &e.mu.propIdle
	return e, nil
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
	// SiteChecked says the caller ran geo.Validate on Site itself, and it
	// passed: Query then skips that check (its cost grows with the
	// site's positions: about 1.4 ms for 10,000), keeping the others. A
	// caller sets it only for a geometry it checked (jobs: a precomputed
	// answer of a site the API validated); an invalid Site with it set
	// gives unspecified results.
	SiteChecked bool
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

	// The properties are read from their columns when asked for
	// (Properties): most of a large result is counted, sorted and written
	// once, and a map per feature built up front was a fifth of a query's
	// time. src is the tile, or the block of the tile's row group that
	// holds them (props.go); row is the feature's row in the tile.
	src   propSource
	row   int32
	props map[string]any // when src is nil (tests)
}

// Properties returns the feature's properties, a new map on each call.
func (f *Feature) Properties() map[string]any {
	if f.src == nil {
		return f.props
	}
	return f.src.Properties(int(f.row))
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
	LoadedFeatures int64
	LoadSeconds    float64
	// LoadedBytes and LoadedIndexBytes total the bytes of every shard
	// loaded (ResidentBytes counts only those still held): loading each
	// shard once, they are what the data needs resident.
	LoadedBytes, LoadedIndexBytes int64
	// PropertyBytes are held by cached property blocks (one row group's
	// properties each, read for the features queries returned; they share
	// the budget with the shards and are evicted first). PropertyReads
	// counts blocks read from the store, PropertyHits those found cached.
	PropertyBytes                                  int64
	PropertyReads, PropertyHits, PropertyEvictions int64
	LoadFeaturesPerSec                             float64
	Evictions                                      int64
	Hits                                           int64 // acquisitions that found the shard loaded or loading
	// SharedTiles counts tiles whose candidates a query's workers
	// evaluated together (scan.go).
	SharedTiles int64
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Stats{
		Shards:            len(e.mu.shards),
		ResidentBytes:     e.mu.resident,
		IndexBytes:        e.mu.indexBytes,
		Features:          e.mu.features,
		Manifests:         len(e.mu.manifests),
		Loads:             e.mu.loads,
		LoadErrors:        e.mu.loadErrors,
		LoadedFeatures:    e.mu.loadedFeatures,
		LoadedBytes:       e.mu.loadedBytes,
		LoadedIndexBytes:  e.mu.loadedIndexBytes,
		PropertyBytes:     e.mu.propBytes,
		PropertyReads:     e.mu.propReads,
		PropertyHits:      e.mu.propHits,
		PropertyEvictions: e.mu.propEvictions,
		LoadSeconds:       e.mu.loadTime.Seconds(),
		Evictions:         e.mu.evictions,
		Hits:              e.mu.hits,
		SharedTiles:       e.mu.sharedTiles,
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
	if !req.SiteChecked {
		if err := geo.Validate(req.Site, 0); err != nil {
			return fmt.Errorf("%w: site: %w", ErrInvalidRequest, err)
		}
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
//
// The layers' coverage and tiles are found first; then every (layer, tile)
// pair is scanned on every core, each worker with its own evaluator
// (scratch buffers) over the shared, immutable site, and a tile with many
// candidates is shared among the workers (scan.go), so a query's latency
// follows its total work rather than its heaviest layer or tile. Limits
// are counted per layer across workers as matches come, and the first
// failure of a layer stops its other tiles.
func (e *Engine) Query(ctx context.Context, req Request) ([]LayerResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := prepareSite(req.Site, e.local)
	ev := newEvaluator(s, req.RadiusM)
	runs := make([]*layerRun, len(req.Layers))
	var items []tileItem
	for i, lr := range req.Layers {
		run, tiles, err := e.planLayer(ctx, ev, lr.withDefaults())
		if err != nil {
			return nil, err
		}
		runs[i] = run
		for _, te := range tiles {
			items = append(items, tileItem{run: run, te: te, est: ev.estimate(te)})
		}
	}
	if err := e.scanItems(ctx, ev, items); err != nil {
		return nil, err
	}
	out := make([]LayerResult, len(runs))
	for i, run := range runs {
		out[i] = run.result(items)
	}
	return out, nil
}

// layerRun is one layer of a running query.
type layerRun struct {
	lr  LayerRequest
	res LayerResult // identity and coverage; status when decided early
	// decided: res is final (outside coverage, manifest unreadable).
	decided bool
	// count and bytes total the layer's matches so far, over all workers.
	count, bytes atomic.Int64
	failure      atomic.Pointer[layerFailure] // the first failure wins
}

type layerFailure struct{ reason, code string }

func (r *layerRun) fail(reason, code string) {
	r.failure.CompareAndSwap(nil, &layerFailure{reason, code})
}

func (r *layerRun) failed() bool { return r.failure.Load() != nil }

// tileItem is one tile of one layer to scan, and what it matched.
type tileItem struct {
	run   *layerRun
	te    tiles.TileEntry
	est   float64 // candidates expected (estimate)
	feats []Feature
}

// planLayer classifies the search area against the layer's coverage and
// lists the tiles that may hold matches.
func (e *Engine) planLayer(ctx context.Context, ev *evaluator, lr LayerRequest) (*layerRun, []tiles.TileEntry, error) {
	run := &layerRun{lr: lr, res: LayerResult{LayerID: lr.LayerID, ReleaseID: lr.ReleaseID}}
	cov := ev.coverage(e.coverFor(lr))
	run.res.Coverage = string(cov)
	if cov == CoverageNone {
		run.res.Status, run.res.Reason = StatusNoData, ReasonOutsideCoverage
		run.res.Count = new(int)
		run.decided = true
		return run, nil, nil
	}
	m, err := e.manifest(ctx, lr.LayerID, lr.ReleaseID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		e.log.Warn("engine: release manifest unavailable; layer answered source_unavailable",
			"layer_id", lr.LayerID, "release_id", lr.ReleaseID, "err", err)
		run.fail(ReasonSourceUnavailable, "")
		return run, nil, nil
	}
	var tl []tiles.TileEntry
	for _, te := range m.Tiles {
		if ev.mayMatch(te) {
			tl = append(tl, te)
		}
	}
	return run, tl, nil
}

// result assembles the layer's result from its items.
func (r *layerRun) result(items []tileItem) LayerResult {
	res := r.res
	if r.decided {
		return res
	}
	if f := r.failure.Load(); f != nil {
		res.Status, res.Reason, res.LimitCode = StatusUnavailable, f.reason, f.code
		return res
	}
	var feats []Feature
	for i := range items {
		if items[i].run == r {
			feats = append(feats, items[i].feats...)
		}
	}
	n := len(feats)
	res.Count = &n
	if n == 0 {
		res.Status, res.Reason = StatusNoData, ReasonNoMatches
		return res
	}
	res.Status = StatusDataPresent
	res.Features = sortFeatures(feats)
	res.EncodedBytes = r.bytes.Load()
	return res
}

// sameGeometry reports whether polygons a and b are equal: the same
// slices (a caller passing the release's polygon each time), or equal
// positions.
func sameGeometry(a, b orb.Geometry) bool {
	switch a := a.(type) {
	case orb.Polygon:
		if b, ok := b.(orb.Polygon); ok && len(a) == len(b) && len(a) > 0 && &a[0] == &b[0] {
			return true
		}
	case orb.MultiPolygon:
		if b, ok := b.(orb.MultiPolygon); ok && len(a) == len(b) && len(a) > 0 && &a[0] == &b[0] {
			return true
		}
	}
	return orb.Equal(a, b)
}

// maxCovers bounds the prepared coverage polygons kept.
const maxCovers = 1024

// releaseKey names a layer's release in the engine's caches (a struct: no
// string to build per query).
type releaseKey struct{ layer, release string }

// coverFor returns lr.Coverage prepared. A release's coverage is
// immutable, so it is prepared once per release and shared; a request
// carrying a different polygon for the same release (orb.Equal compares
// them, far cheaper than preparing) is served uncached.
func (e *Engine) coverFor(lr LayerRequest) *cover {
	if !isPolygonal(lr.Coverage) {
		return nil
	}
	key := releaseKey{lr.LayerID, lr.ReleaseID}
	e.mu.Lock()
	c, ok := e.mu.covers[key]
	e.mu.Unlock()
	if ok && c != nil && sameGeometry(c.geom, lr.Coverage) {
		return c
	}
	c = newCover(lr.Coverage, coverPiece)
	if !ok {
		e.mu.Lock()
		if len(e.mu.covers) >= maxCovers {
			clear(e.mu.covers)
		}
		e.mu.covers[key] = c
		e.mu.Unlock()
	}
	return c
}

// Site projections are shared: a query's projection is centred on the
// centre of a localSnap-degree cell rather than on the site itself (at most
// ~1.1 km away), and the fitted tables depend only on the centre's latitude
// (geo.Local.At), so every site in a 2 km band of latitude reuses one fit
// instead of paying NewLocal's 25 geodesic solutions (tens of microseconds,
// the largest fixed cost of a small query). Exactness does not depend on the
// centre: ErrorBound holds for any pair within 16 km of it, and prepareSite
// splits sites that reach too far from it.
const (
	localSnap      = 0.02
	maxLocalsCache = 4096
)

func (e *Engine) local(c orb.Point) geo.Local {
	row := int32(math.Floor(c[1] / localSnap))
	lon := (math.Floor(c[0]/localSnap) + 0.5) * localSnap
	e.mu.Lock()
	l, ok := e.mu.locals[row]
	e.mu.Unlock()
	if ok {
		return l.At(lon)
	}
	l = geo.NewLocal(orb.Point{lon, (float64(row) + 0.5) * localSnap})
	e.mu.Lock()
	if len(e.mu.locals) >= maxLocalsCache {
		for k := range e.mu.locals { // drop an arbitrary one
			delete(e.mu.locals, k)
			break
		}
	}
	e.mu.locals[row] = l
	e.mu.Unlock()
	return l
}

// tileBulgeMargin widens the search box when pruning tiles that hold
// lines or polygons: manifests record the boxes of positions, and a
// geodesic edge bows poleward of its ends (bulgeDeg). 0.01 degree covers
// edges up to about 0.7 degree (70 km) long.
const tileBulgeMargin = 0.01

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

// estimate is the number of candidates expected from tile te: its rows
// times the share of its box the search boxes cover.
func (ev *evaluator) estimate(te tiles.TileEntry) float64 {
	b := te.BBox.Bound()
	w, h := b.Max[0]-b.Min[0], b.Max[1]-b.Min[1]
	if w <= 0 || h <= 0 {
		return float64(te.Rows)
	}
	var covered float64
	for _, sb := range ev.boxes {
		x := math.Min(b.Max[0], sb.Max[0]) - math.Max(b.Min[0], sb.Min[0])
		y := math.Min(b.Max[1], sb.Max[1]) - math.Max(b.Min[1], sb.Min[1])
		if x > 0 && y > 0 {
			covered += x * y
		}
	}
	return float64(te.Rows) * math.Min(1, covered/(w*h))
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

// collector gathers one tile's matches for a layer and counts them
// against the layer's limits as they come.
type collector struct {
	run   *layerRun
	feats []Feature
	z     *sizer
	// e and ctx read property blocks; last is the block of the previous
	// match (matches come in tile order, mostly from one row group).
	e    *Engine
	ctx  context.Context
	last *propBlock
}

func (c *collector) add(s *shard, i int, d float64) error {
	t := s.tile
	lr := &c.run.lr
	if c.run.count.Add(1) > int64(lr.MaxFeatures) {
		c.run.fail(ReasonResultLimitExceeded, LimitResultLimitExceeded)
		return nil
	}
	src, last, err := c.e.propSourceFor(c.ctx, s, i, c.last)
	if err != nil {
		return err
	}
	c.last = last
	f := Feature{ID: t.IDs[i], DistanceM: d, src: src, row: int32(i)}
	if lr.IncludeGeometry {
		g, err := s.geometry(i)
		if err != nil {
			return err
		}
		f.Geometry = g
	}
	size := c.z.recordLen(lr.LayerID, f.ID, d, propertiesLen(src, i, c.z), f.Geometry)
	if size > lr.MaxFeatureBytes {
		c.run.fail(ReasonFeatureTooLarge, LimitFeatureTooLarge)
		return nil
	}
	if c.run.bytes.Add(size) > lr.MaxBytes {
		c.run.fail(ReasonResultLimitExceeded, LimitOutputTooLarge)
		return nil
	}
	c.feats = append(c.feats, f)
	return nil
}

// VisitProperties passes the feature's properties to v as
// tiles.Tile.VisitProperties does, without building a map. It reports
// false, visiting nothing, for a feature not backed by a tile (tests):
// use Properties then.
func (f *Feature) VisitProperties(v tiles.PropertyVisitor) bool {
	if f.src == nil {
		return false
	}
	f.src.VisitProperties(int(f.row), v)
	return true
}
