package ingest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/store"
	"siteenv/tiles"
)

// DiffSummary counts what changed between two releases of a layer, by
// feature id.
type DiffSummary struct {
	LayerID     string `json:"layer_id"`
	FromRelease string `json:"from_release"`
	ToRelease   string `json:"to_release"`
	From        int64  `json:"from_features"`
	To          int64  `json:"to_features"`
	Added       int64  `json:"added"`
	Removed     int64  `json:"removed"`
	Changed     int64  `json:"changed"` // same id, geometry moved beyond the tolerance or other fields
	// GeometryChanged and PropertiesChanged count the changed features
	// whose geometry, or fields, changed (a feature may count in both).
	GeometryChanged   int64   `json:"geometry_changed"`
	PropertiesChanged int64   `json:"properties_changed"`
	ToleranceM        float64 `json:"tolerance_m"`
	Unchanged         int64   `json:"unchanged"`
	ElapsedS          float64 `json:"elapsed_s"`
	ChangesFile       string  `json:"changes_file,omitempty"`
}

// DiffReleases compares release from with release to of a layer, feature by
// feature id, with the default tolerance (DiffOptions). When out is not nil
// it receives the added, removed and changed features as CSV: change
// (added, removed, changed), feature_id, geometry (WKT, CRS84; the new one,
// or the old one for removed), properties (a JSON object) and what changed
// (for changed features: "geometry moved 2.1 m; name: \"A\" -> \"B\""),
// in the order of the tiles.
func DiffReleases(ctx context.Context, st store.Store, layerID, from, to string, out io.Writer) (DiffSummary, error) {
	return DiffReleasesAs(ctx, st, layerID, from, to, out, ChangesCSV)
}

// Formats of the changed features DiffReleasesAs writes.
const (
	ChangesCSV        = "csv"
	ChangesGeoParquet = "geoparquet"
)

// DefaultTolerance is how far (metres) a feature's vertices may move before
// its geometry counts as changed: re-projecting the same data from another
// CRS moves them by nanometres.
const DefaultTolerance = 0.001

// DiffOptions configure DiffReleasesWith.
type DiffOptions struct {
	// Tolerance in metres: a geometry whose vertices each moved at most
	// this far (same type and vertex count) is unchanged. Default
	// DefaultTolerance; negative means exact (byte for byte).
	Tolerance float64
	// Out receives the added, removed and changed features in Format
	// (ChangesCSV, the default, or ChangesGeoParquet). Default nil: none.
	Out    io.Writer
	Format string
	// OnChange, when set, is called for every added, removed and changed
	// feature, in the order Out receives them.
	OnChange func(FeatureChange) error
}

// FeatureChange is one feature that differs between two releases.
type FeatureChange struct {
	Change string // added, removed or changed
	ID     string
	// Old and New are the feature's geometry (CRS84) and properties in
	// each release; nil where it is absent (added: Old; removed: New).
	OldGeometry, NewGeometry     orb.Geometry
	OldProperties, NewProperties map[string]any
	// GeometryChanged is true when the geometry differs beyond the
	// tolerance; MovedM is then the largest distance a vertex moved, in
	// metres (-1 when the vertices do not correspond: another type or
	// count).
	GeometryChanged bool
	MovedM          float64
	// Properties lists the fields whose values differ, by name.
	Properties []PropertyChange
}

// PropertyChange is one field's value in the old and new release (nil:
// null or absent).
type PropertyChange struct {
	Name     string
	From, To any
}

// What says in words what changed: "geometry moved 2.1 m; name: "A" -> "B"".
func (c FeatureChange) What() string {
	var parts []string
	switch {
	case c.Change != "changed":
		return c.Change
	case c.GeometryChanged && c.MovedM < 0:
		parts = append(parts, "geometry reshaped")
	case c.GeometryChanged:
		parts = append(parts, "geometry moved "+fmtMetres(c.MovedM))
	}
	for _, p := range c.Properties {
		parts = append(parts, p.Name+": "+fmtValue(p.From)+" -> "+fmtValue(p.To))
	}
	return strings.Join(parts, "; ")
}

func fmtMetres(m float64) string {
	switch {
	case m >= 1000:
		return strconv.FormatFloat(m/1000, 'f', 2, 64) + " km"
	case m >= 1:
		return strconv.FormatFloat(m, 'f', 2, 64) + " m"
	}
	return strconv.FormatFloat(m*1000, 'f', 1, 64) + " mm"
}

func fmtValue(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// DiffReleasesAs is DiffReleases writing the changed features to out in
// format: ChangesCSV (as DiffReleases) or ChangesGeoParquet, a GeoParquet
// 1.1 file written by tiles.ChangeWriter: feature_id, change, geometry
// (WKB, CRS84), the bbox covering and one typed column per field of the
// two releases' field schemas (tiles.UnionSchema). Rows come in the same
// order as the CSV's.
func DiffReleasesAs(ctx context.Context, st store.Store, layerID, from, to string, out io.Writer, format string) (DiffSummary, error) {
	return DiffReleasesWith(ctx, st, layerID, from, to, DiffOptions{Out: out, Format: format})
}

// DiffReleasesWith compares release from with release to of a layer,
// feature by feature id: a feature is added (only in to), removed (only in
// from), changed (in both, with its geometry moved beyond opt.Tolerance or
// other field values) or unchanged.
//
// Memory: two 8-byte hashes per feature of to (about 40 MB per million
// features), and the old geometry and fields of the features whose bytes
// differ; the tiles are read one at a time per worker (to twice, from once,
// and once more when features were removed and changes are written). Ids
// are compared by a 64-bit hash (two distinct ids share one with
// probability about n²/2^65, 1e-7 at two million features).
func DiffReleasesWith(ctx context.Context, st store.Store, layerID, from, to string, opt DiffOptions) (DiffSummary, error) {
	sum := DiffSummary{LayerID: layerID, FromRelease: from, ToRelease: to}
	if opt.Format == "" {
		opt.Format = ChangesCSV
	}
	if opt.Tolerance == 0 {
		opt.Tolerance = DefaultTolerance
	}
	sum.ToleranceM = max(opt.Tolerance, 0)
	if opt.Format != ChangesCSV && opt.Format != ChangesGeoParquet {
		return sum, fmt.Errorf("unknown changes format %q", opt.Format)
	}
	mf, err := tiles.ReadManifest(ctx, st, layerID, from)
	if err != nil {
		return sum, fmt.Errorf("release %s: %w", from, err)
	}
	mt, err := tiles.ReadManifest(ctx, st, layerID, to)
	if err != nil {
		return sum, fmt.Errorf("release %s: %w", to, err)
	}
	seed := maphash.MakeSeed()
	hashTile := func(t *tiles.Tile) (any, error) {
		ids, cs := make([]uint64, t.Len()), make([]uint64, t.Len())
		var v hashVisitor
		for i := range ids {
			ids[i] = maphash.String(seed, t.IDs[i])
			cs[i] = v.contentHash(seed, t, i)
		}
		return [2][]uint64{ids, cs}, nil
	}
	// Pass 1: to's features, id hash -> content hash.
	newer := make(map[uint64]uint64, mt.FeatureCount)
	err = eachTileOrdered(ctx, st, mt, hashTile, func(t *tiles.Tile, v any) error {
		h := v.([2][]uint64)
		for i, id := range h[0] {
			newer[id] = h[1][i]
		}
		sum.To += int64(len(h[0]))
		return nil
	})
	if err != nil {
		return sum, err
	}
	// Pass 2: from's features. Those in both whose bytes differ are kept
	// (geometry and fields) to be judged against the new ones.
	type oldFeature struct {
		g     orb.Geometry
		props map[string]any
	}
	candidates := map[uint64]oldFeature{}
	inFrom := make(map[uint64]struct{}, mf.FeatureCount)
	err = eachTileOrdered(ctx, st, mf, hashTile, func(t *tiles.Tile, v any) error {
		h := v.([2][]uint64)
		for i, id := range h[0] {
			sum.From++
			inFrom[id] = struct{}{}
			c, ok := newer[id]
			if !ok || c == h[1][i] {
				continue
			}
			g, err := t.Geometry(i)
			if err != nil {
				return err
			}
			candidates[id] = oldFeature{g, t.Properties(i)}
		}
		return nil
	})
	if err != nil {
		return sum, err
	}
	var sink changeSink
	if opt.Out != nil {
		if sink, err = newChangeSink(opt.Out, opt.Format, mf, mt); err != nil {
			return sum, err
		}
	}
	emit := func(fc FeatureChange, t *tiles.Tile, i int) error {
		if sink != nil {
			if err := sink.write(fc.Change, t, i, fc.What()); err != nil {
				return err
			}
		}
		if opt.OnChange != nil {
			return opt.OnChange(fc)
		}
		return nil
	}
	// Pass 3: to's features in tile order, so the output is deterministic.
	err = eachTileOrdered(ctx, st, mt, func(t *tiles.Tile) (any, error) { return nil, nil }, func(t *tiles.Tile, _ any) error {
		for i := range t.IDs {
			id := maphash.String(seed, t.IDs[i])
			if _, ok := inFrom[id]; !ok {
				sum.Added++
				fc := FeatureChange{Change: "added", ID: t.IDs[i]}
				if opt.OnChange != nil {
					fc.NewGeometry, _ = t.Geometry(i)
					fc.NewProperties = t.Properties(i)
				}
				if err := emit(fc, t, i); err != nil {
					return err
				}
				continue
			}
			old, ok := candidates[id]
			if !ok {
				sum.Unchanged++
				continue
			}
			g, err := t.Geometry(i)
			if err != nil {
				return err
			}
			fc := compareFeature(t.IDs[i], old.g, g, old.props, t.Properties(i), opt.Tolerance)
			if !fc.GeometryChanged && len(fc.Properties) == 0 {
				sum.Unchanged++
				continue
			}
			sum.Changed++
			if fc.GeometryChanged {
				sum.GeometryChanged++
			}
			if len(fc.Properties) > 0 {
				sum.PropertiesChanged++
			}
			if err := emit(fc, t, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return sum, err
	}
	sum.Removed = sum.From - sum.Changed - sum.Unchanged
	// Pass 4, only when writing: from's features that to lacks.
	if (sink != nil || opt.OnChange != nil) && sum.Removed > 0 {
		err = eachTileOrdered(ctx, st, mf, func(t *tiles.Tile) (any, error) { return nil, nil }, func(t *tiles.Tile, _ any) error {
			for i := range t.IDs {
				if _, ok := newer[maphash.String(seed, t.IDs[i])]; !ok {
					fc := FeatureChange{Change: "removed", ID: t.IDs[i]}
					if opt.OnChange != nil {
						fc.OldGeometry, _ = t.Geometry(i)
						fc.OldProperties = t.Properties(i)
					}
					if err := emit(fc, t, i); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return sum, err
		}
	}
	if sink != nil {
		if err := sink.close(); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// compareFeature says what differs between a feature's old and new
// geometry and fields.
func compareFeature(id string, og, ng orb.Geometry, op, np map[string]any, tol float64) FeatureChange {
	fc := FeatureChange{Change: "changed", ID: id, OldGeometry: og, NewGeometry: ng, OldProperties: op, NewProperties: np}
	if moved, same := vertexShift(og, ng); !same {
		fc.GeometryChanged, fc.MovedM = true, -1
	} else if moved > 0 && moved > tol {
		fc.GeometryChanged, fc.MovedM = true, moved
	}
	names := map[string]bool{}
	for k := range op {
		names[k] = true
	}
	for k := range np {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		a, b := op[k], np[k]
		if !sameValue(a, b) {
			fc.Properties = append(fc.Properties, PropertyChange{Name: k, From: a, To: b})
		}
	}
	return fc
}

func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if reflect.DeepEqual(a, b) {
		return true
	}
	return fmtValue(a) == fmtValue(b)
}

// vertexShift returns the largest geodesic distance (metres) between
// corresponding vertices of a and b; same is false when they do not
// correspond (another type or number of positions).
func vertexShift(a, b orb.Geometry) (max float64, same bool) {
	pa, pb := slices.Collect(geo.Points(a)), slices.Collect(geo.Points(b))
	if a == nil || b == nil || a.GeoJSONType() != b.GeoJSONType() || len(pa) != len(pb) || !sameShape(a, b) {
		return 0, false
	}
	for i := range pa {
		if pa[i] != pb[i] {
			if d := geo.Distance(pa[i], pb[i]); d > max {
				max = d
			}
		}
	}
	return max, true
}

// sameShape reports whether a and b have the same nesting of parts.
func sameShape(a, b orb.Geometry) bool {
	switch a := a.(type) {
	case orb.MultiLineString:
		b := b.(orb.MultiLineString)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if len(a[i]) != len(b[i]) {
				return false
			}
		}
	case orb.Polygon:
		b := b.(orb.Polygon)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if len(a[i]) != len(b[i]) {
				return false
			}
		}
	case orb.MultiPolygon:
		b := b.(orb.MultiPolygon)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameShape(a[i], b[i]) {
				return false
			}
		}
	}
	return true
}

// contentHash hashes feature i's geometry (its WKB) and field values. One
// visitor serves a whole tile, so its buffer is reused (and the visitor
// escapes to the heap once per tile, not once per feature).
func (h *hashVisitor) contentHash(seed maphash.Seed, t *tiles.Tile, i int) uint64 {
	h.buf = h.buf[:0]
	h.buf = binary.AppendUvarint(h.buf, uint64(len(t.WKB[i])))
	h.buf = append(h.buf, t.WKB[i]...)
	t.VisitProperties(i, h)
	return maphash.Bytes(seed, h.buf)
}

type hashVisitor struct{ buf []byte }

func (h *hashVisitor) tag(name string, kind byte) {
	h.buf = binary.AppendUvarint(h.buf, uint64(len(name)))
	h.buf = append(h.buf, name...)
	h.buf = append(h.buf, kind)
}
func (h *hashVisitor) Null(name string) { h.tag(name, 0) }
func (h *hashVisitor) String(name string, v []byte) {
	h.tag(name, 1)
	h.buf = binary.AppendUvarint(h.buf, uint64(len(v)))
	h.buf = append(h.buf, v...)
}
func (h *hashVisitor) Int(name string, v int64) {
	h.tag(name, 2)
	h.buf = binary.AppendVarint(h.buf, v)
}
func (h *hashVisitor) Float(name string, v float64) {
	h.tag(name, 3)
	h.buf = binary.LittleEndian.AppendUint64(h.buf, math.Float64bits(v))
}
func (h *hashVisitor) Bool(name string, v bool) {
	h.tag(name, 4)
	if v {
		h.buf = append(h.buf, 1)
	} else {
		h.buf = append(h.buf, 0)
	}
}

func readTile(ctx context.Context, st store.Store, key string) (*tiles.Tile, error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	t, err := tiles.ReadTileWith(ctx, obj, obj.Size(), tiles.ReadTileOptions{SkipBounds: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return t, nil
}

// eachTile calls fn on every tile of m, from a few workers at once.
func eachTile(ctx context.Context, st store.Store, m *tiles.Manifest, fn func(*tiles.Tile) error) error {
	return eachTileOrdered(ctx, st, m, func(t *tiles.Tile) (any, error) { return nil, fn(t) }, func(*tiles.Tile, any) error { return nil })
}

// eachTileOrdered reads and maps tiles on a few workers and hands them to
// reduce one at a time in manifest order.
func eachTileOrdered(ctx context.Context, st store.Store, m *tiles.Manifest, mapFn func(*tiles.Tile) (any, error), reduce func(*tiles.Tile, any) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type res struct {
		t   *tiles.Tile
		v   any
		err error
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), 4))
	slots := make([]chan res, len(m.Tiles))
	for i := range slots {
		slots[i] = make(chan res, 1)
	}
	sem := make(chan struct{}, workers+1)
	go func() {
		for i, te := range m.Tiles {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func(i int, key string) {
				t, err := readTile(ctx, st, key)
				var v any
				if err == nil {
					v, err = mapFn(t)
				}
				slots[i] <- res{t, v, err}
			}(i, te.Key)
		}
	}()
	for i := range slots {
		var r res
		select {
		case r = <-slots[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-sem
		if r.err != nil {
			return r.err
		}
		if err := reduce(r.t, r.v); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseFeatures returns up to limit features of a release, in tile
// order, and whether there were more (for pictures of a release, such as
// the review page's map).
func ReleaseFeatures(ctx context.Context, st store.Store, layerID, releaseID string, limit int) ([]tiles.Feature, bool, error) {
	m, err := tiles.ReadManifest(ctx, st, layerID, releaseID)
	if err != nil {
		return nil, false, fmt.Errorf("release %s: %w", releaseID, err)
	}
	var out []tiles.Feature
	more := false
	for _, te := range m.Tiles {
		if len(out) >= limit {
			more = true
			break
		}
		t, err := readTile(ctx, st, te.Key)
		if err != nil {
			return nil, false, err
		}
		for i := range t.IDs {
			if len(out) >= limit {
				more = true
				break
			}
			g, err := t.Geometry(i)
			if err != nil {
				return nil, false, err
			}
			out = append(out, tiles.Feature{ID: t.IDs[i], Geometry: g, Properties: t.Properties(i)})
		}
	}
	return out, more, nil
}
