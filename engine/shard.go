package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"siteenv/geo"
	"siteenv/store"
	"siteenv/tiles"
)

// shard is one tile of one release in memory: the tile's columns and an
// index over its features' boxes. Immutable once built; safe for concurrent
// queries.
type shard struct {
	// tile holds the ids (its WKB column is moved to geoms: nil).
	tile *tiles.Tile
	ix   *index
	// geoms is the tile's geometries, packed where that loses nothing
	// (packed.go).
	geoms *geomStore
	// key and fileBytes name the tile's file, for reading the properties
	// of matched features (props.go) when tile does not hold them
	// (tile.LazyProperties); rgStarts is then the first row of each of
	// its row groups.
	key       string
	fileBytes int64
	rgStarts  []int
	// whole is the tile with the encoded length of each feature's
	// properties, when the tile holds its properties (a tile decoded
	// whole: buildShard); nil when they are read on demand (props.go).
	whole *tileProps
	// heavy holds the features of at least edgeIndexMinVertices
	// positions, decoded with an edge index (edgeindex.go), by row; nil
	// when there are none.
	heavy map[int32]*heavyGeom
	// bytes is what the shard holds: the tile's columns (without the
	// float64 bounds column, which the index replaces), the index, the
	// property lengths and the heavy features.
	bytes int64
}

// heavyGeom returns row i's edge-indexed geometry (w is its WKB), or nil.
func (s *shard) heavyGeom(i int32, w []byte) *heavyGeom {
	if s.heavy == nil || len(w) < minHeavyWKB {
		return nil
	}
	return s.heavy[i]
}

// setHeavy records the shard's heavy features and counts their bytes.
func (s *shard) setHeavy(h map[int32]*heavyGeom) {
	if len(h) == 0 {
		return
	}
	s.heavy = h
	for _, hg := range h {
		s.bytes += hg.bytes() + 48 // and the map entry
	}
}

// propertiesLen returns the encoded length of feature i's properties,
// which src holds, measured once: results are sized while they are
// collected, and measuring a feature's properties costs more than finding
// it.
func propertiesLen(src propSource, i int, z *sizer) int {
	slot := src.lenSlot(i)
	if v := slot.Load(); v > 0 {
		return int(v - 1)
	}
	n := z.tilePropsLen(src, i)
	if n < math.MaxInt32 {
		slot.Store(int32(n + 1))
	}
	return n
}

// loadShard reads and indexes the tile te. Each row group's boxes are
// computed as soon as its geometries are decoded, on the goroutines
// decoding the tile, overlapping the decoding of the rest; so are the edge
// indexes of its heavy features.
func loadShard(ctx context.Context, st store.Store, te tiles.TileEntry) (*shard, error) {
	return loadShardMin(ctx, st, te, edgeIndexMinVertices)
}

// loadShardMin is loadShard giving an edge index to features of at least
// heavyMin positions (0: none).
func loadShardMin(ctx context.Context, st store.Store, te tiles.TileEntry, heavyMin int) (*shard, error) {
	obj, err := st.Open(ctx, te.Key)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	if obj.Size() != te.Bytes {
		return nil, fmt.Errorf("engine: tile %s has %d bytes, manifest says %d: %w", te.Key, obj.Size(), te.Bytes, tiles.ErrInvalidTile)
	}
	if te.Rows < 0 || te.Rows > max(te.Bytes, 1<<20) {
		// Not an allocation to make on the manifest's word.
		return nil, fmt.Errorf("engine: tile %s: manifest says %d rows in %d bytes: %w", te.Key, te.Rows, te.Bytes, tiles.ErrInvalidTile)
	}
	sc := newBoxScanner(int(te.Rows), heavyMin)
	// The index boxes come from the geometries: the bbox column is not read.
	// Properties are read when a query returns their features (props.go).
	t, err := tiles.ReadTileWith(ctx, obj, obj.Size(), tiles.ReadTileOptions{SkipBounds: true, SkipProperties: true, Geometry: sc.scan})
	if err != nil {
		return nil, fmt.Errorf("engine: tile %s: %w", te.Key, err)
	}
	if int64(t.Len()) != te.Rows {
		return nil, fmt.Errorf("engine: tile %s has %d rows, manifest says %d: %w", te.Key, t.Len(), te.Rows, tiles.ErrInvalidTile)
	}
	if err := sc.err(t, te.Key); err != nil {
		return nil, err
	}
	if err := checkGeomBytes(t, te.Key); err != nil {
		return nil, err
	}
	s := newShard(t, sc.leaves)
	s.setHeavy(sc.heavy)
	s.key, s.fileBytes, s.rgStarts = te.Key, te.Bytes, t.RowGroupStarts()
	s.bytes += t.MetadataBytes() + int64(len(s.rgStarts))*8
	return s, nil
}

// boxScanner computes index boxes for rows scanned in any order, on any
// goroutines, remembering the first malformed row.
type boxScanner struct {
	leaves   []box32
	heavyMin int // positions from which a feature gets an edge index; 0: never
	mu       sync.Mutex
	bad      int // first malformed row, or -1
	badErr   error
	heavy    map[int32]*heavyGeom // under mu
}

func newBoxScanner(n, heavyMin int) *boxScanner {
	return &boxScanner{leaves: make([]box32, n), bad: -1, heavyMin: heavyMin}
}

var errTooManyRows = fmt.Errorf("more rows than the manifest says: %w", tiles.ErrInvalidTile)

// scan computes the boxes of rows row0... from their WKB.
func (sc *boxScanner) scan(row0 int, wkb [][]byte) error {
	if row0+len(wkb) > len(sc.leaves) {
		return errTooManyRows
	}
	for i, w := range wkb {
		b, err := wkbIndexBox(w)
		if err != nil {
			sc.mu.Lock()
			if sc.bad < 0 || row0+i < sc.bad {
				sc.bad, sc.badErr = row0+i, err
			}
			sc.mu.Unlock()
			return nil // the read goes on; err reports the first bad row
		}
		sc.leaves[row0+i] = b
		if sc.heavyMin > 0 && len(w) >= sc.heavyMin*16 {
			hg, err := newHeavyGeom(w, sc.heavyMin)
			if err != nil { // not expected: wkbIndexBox read it
				return err
			}
			if hg != nil {
				sc.mu.Lock()
				if sc.heavy == nil {
					sc.heavy = map[int32]*heavyGeom{}
				}
				sc.heavy[int32(row0+i)] = hg
				sc.mu.Unlock()
			}
		}
	}
	return nil
}

// err reports the first malformed geometry of t, once every row is
// scanned.
func (sc *boxScanner) err(t *tiles.Tile, name string) error {
	if sc.bad < 0 {
		return nil
	}
	return fmt.Errorf("engine: tile %s: feature %q: %v: %w", name, t.IDs[sc.bad], sc.badErr, tiles.ErrInvalidTile)
}

// buildShardSplit is the fewest features per goroutine when buildShard
// computes boxes concurrently.
const buildShardSplit = 4096

// buildShard indexes a decoded tile t. Every geometry is scanned here, so
// a tile with malformed WKB fails to load instead of failing queries
// later. Large tiles are scanned on several goroutines.
func buildShard(t *tiles.Tile, name string) (*shard, error) {
	n := t.Len()
	sc := newBoxScanner(n, edgeIndexMinVertices)
	parts := min(runtime.GOMAXPROCS(0), max(1, n/buildShardSplit))
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Go(func() { sc.scan(p*n/parts, t.WKB[p*n/parts:(p+1)*n/parts]) })
	}
	sc.scan(0, t.WKB[:n/parts])
	wg.Wait()
	if err := sc.err(t, name); err != nil {
		return nil, err
	}
	if err := checkGeomBytes(t, name); err != nil {
		return nil, err
	}
	s := newShard(t, sc.leaves)
	s.setHeavy(sc.heavy)
	return s, nil
}

// newShard indexes t by its features' boxes and moves its geometries into
// a geomStore (t.WKB is nil afterwards).
func newShard(t *tiles.Tile, leaves []box32) *shard {
	ix := newIndex(leaves)
	geoms, wkbBytes := newGeomStore(t.WKB)
	s := &shard{tile: t, ix: ix, geoms: geoms}
	// The tile's count holds the WKB and a slice header a row; the store
	// replaces both.
	s.bytes = t.Bytes() - wkbBytes - int64(len(t.WKB))*24 + geoms.bytes() - int64(len(t.Bounds))*32 + ix.bytes()
	t.WKB = nil
	if !t.LazyProperties() {
		s.whole = &tileProps{Tile: t, lens: make([]atomic.Int32, t.Len())}
		s.bytes += int64(t.Len()) * 4
	}
	// The index carries the boxes; a float64 copy is not needed.
	t.Bounds = nil
	return s
}

// wkbIndexBox is the index box of the geometry encoded in w: the box of its
// positions widened by the bulge of its geodesic edges (a long east-west
// edge bows poleward of its ends). An empty geometry, which matches
// nothing, gets an inverted box. It accepts and rejects exactly what
// flat.decodeWKB does and gives the box geodesicBox would (but for the
// sign of a zero), without building a flat: loading a tile is mostly this
// scan.
func wkbIndexBox(w []byte) (box32, error) {
	if p, ok := wkbPointXY(w); ok {
		return box32{down(p[0]), down(p[1]), up(p[0]), up(p[1])}, nil
	}
	s := boxScan{
		w:    newWKBWalk(w),
		minX: math.Inf(1), minY: math.Inf(1), maxX: math.Inf(-1), maxY: math.Inf(-1),
		bulge: -1,
	}
	if err := s.geometry(); err != nil {
		return box32{}, err
	}
	if s.w.Off != len(w) {
		return box32{}, fmt.Errorf("%w: %d trailing bytes", errWKB, len(w)-s.w.Off)
	}
	if s.minX > s.maxX {
		inf := float32(math.Inf(1))
		return box32{inf, inf, -inf, -inf}, nil
	}
	var m float64
	if s.bulge >= 0 {
		// bulgeWith is edgeQ/4*scale + 1e-9 (1e-9 for a meridian), which
		// grows with edgeQ, so the largest edgeQ gives the largest bulge.
		scale := bulgeScale(math.Max(math.Abs(s.minY), math.Abs(s.maxY)))
		m = s.bulge/4*scale + 1e-9
	}
	return box32{down(s.minX - m), down(s.minY - m), up(s.maxX + m), up(s.maxY + m)}, nil
}

// boxScan walks WKB with newWKBWalk, as flat.decodeWKB does, keeping only the
// box and the largest edge bulge factor.
type boxScan struct {
	w                      geo.WKBWalker
	minX, minY, maxX, maxY float64
	bulge                  float64 // largest edgeQ of a line or ring edge; -1: no edges
}

// edgeQ is the part of bulgeWith that depends on the edge, times 4: it is
// 0 for a meridian, or NaN for one whose latitudes are far apart enough
// to overflow, which callers must count as 0.
func edgeQ(ax, ay, bx, by float64) float64 {
	dl := math.Abs(ax-bx) * deg
	dp := math.Abs(ay-by) * deg
	return dl * (dl + 2*dp)
}

func (s *boxScan) geometry() error {
	for {
		part, n, p, err := s.w.Next()
		switch {
		case err != nil:
			return wkbWalkErr(err)
		case part == geo.WKBDone:
			return nil
		case part == geo.WKBAtPoint:
			if !finite(p[0]) || !finite(p[1]) {
				return errNonFinite
			}
			s.add(p[0], p[1])
		case part == geo.WKBAtLine || part == geo.WKBAtRing:
			if err := s.positions(n, s.w.Dims, part == geo.WKBAtRing); err != nil {
				return err
			}
		}
	}
}

func (s *boxScan) add(x, y float64) {
	if x < s.minX {
		s.minX = x
	}
	if x > s.maxX {
		s.maxX = x
	}
	if y < s.minY {
		s.minY = y
	}
	if y > s.maxY {
		s.maxY = y
	}
}

// positions reads n positions of a line string or (ring) a polygon ring,
// whose edges include the closing one when the ring is not closed. It is
// the hot loop of a load.
func (s *boxScan) positions(n, dims int, ring bool) error {
	w := &s.w
	size := 8 * dims
	if n*size > len(w.B)-w.Off {
		return errWKB
	}
	b := w.B[w.Off : w.Off+n*size]
	w.Off += n * size
	if n == 0 {
		return nil
	}
	little := w.Order == binary.ByteOrder(binary.LittleEndian)
	xy := func(b []byte) (float64, float64) {
		if little {
			return math.Float64frombits(binary.LittleEndian.Uint64(b[:8])), math.Float64frombits(binary.LittleEndian.Uint64(b[8:16]))
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b[:8])), math.Float64frombits(binary.BigEndian.Uint64(b[8:16]))
	}
	x0, y0 := xy(b)
	// v-v is 0 exactly when v is finite (NaN otherwise).
	if (x0-x0)+(y0-y0) != 0 {
		return errNonFinite
	}
	// Plain comparisons below: unlike min and max, they may keep +0 over
	// -0, which compare equal everywhere boxes are used.
	minX, minY, maxX, maxY := min(s.minX, x0), min(s.minY, y0), max(s.maxX, x0), max(s.maxY, y0)
	q := s.bulge
	if n > 1 {
		q = max(q, 0) // there are edges; a meridian's edgeQ is 0
	}
	px, py := x0, y0
	stride := size
	if little && dims == 2 {
		stride = 16 // as tiles are written; lets the compiler drop checks
	}
	for b = b[stride:]; len(b) >= 16; b = b[stride:] {
		var x, y float64
		if stride == 16 && little {
			x = math.Float64frombits(binary.LittleEndian.Uint64(b[:8]))
			y = math.Float64frombits(binary.LittleEndian.Uint64(b[8:16]))
		} else {
			x, y = xy(b)
		}
		if (x-x)+(y-y) != 0 {
			return errNonFinite
		}
		if x < minX {
			minX = x
		}
		if x > maxX {
			maxX = x
		}
		if y < minY {
			minY = y
		}
		if y > maxY {
			maxY = y
		}
		if e := edgeQ(px, py, x, y); e > q { // false for NaN
			q = e
		}
		px, py = x, y
	}
	if ring && (px != x0 || py != y0) {
		if e := edgeQ(px, py, x0, y0); e > q {
			q = e
		}
	}
	s.minX, s.minY, s.maxX, s.maxY = minX, minY, maxX, maxY
	s.bulge = q
	return nil
}

var errNonFinite = fmt.Errorf("%w: non-finite coordinate", errWKB)
