package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/tiles"
)

// A shard keeps its geometries in one buffer (geomStore), each row either
// as the tile's WKB or, when that loses nothing, packed: the same WKB with
// every position as two int32 of 1e-7 degrees (8 bytes a vertex instead of
// 16). A position packs when math.Round(v*1e7) fits an int32 and dividing
// it by 1e7 gives v's exact bits back, so a packed geometry expands to the
// bytes it was packed from, bit for bit; one position that does not pack
// keeps its whole geometry as WKB. Points stay WKB (the point fast path
// reads them in place, and they are 21 bytes either way within a few).
//
// A packed geometry is the WKB with its first byte (the byte order) set to
// packedMarker; every nested geometry's byte order, type and counts stay
// as they were (little-endian, 2D: anything else is kept as WKB).

// packedMarker starts a packed geometry; WKB starts with 0 or 1.
const packedMarker = 2

// packScale is the fixed-point unit of a packed position: 1e-7 degrees
// (about 1 cm), the precision of the synthetic data and of most published
// layers (GeoJSON writers round to 6 or 7 decimals).
const packScale = 1e7

// geomStore is a shard's geometries: row i's bytes are
// buf[ends[i-1]:ends[i]] (from 0 for row 0). One buffer and 4 bytes a row,
// rather than a slice header (24 bytes) a row.
type geomStore struct {
	buf  []byte
	ends []uint32
}

// raw is row i's stored bytes: WKB, or packed (packedMarker first).
func (g *geomStore) raw(i int32) []byte {
	lo := uint32(0)
	if i > 0 {
		lo = g.ends[i-1]
	}
	return g.buf[lo:g.ends[i]:g.ends[i]]
}

// wkb is row i's WKB: its stored bytes, or the packed geometry expanded
// into *scratch (valid until the next call with the same scratch).
func (g *geomStore) wkb(i int32, scratch *[]byte) ([]byte, error) {
	return expandWKB(g.raw(i), scratch)
}

func (g *geomStore) bytes() int64 { return int64(cap(g.buf)) + 4*int64(cap(g.ends)) }

// expandWKB returns w when it is WKB, or the WKB a packed w was packed
// from, written into *scratch.
func expandWKB(w []byte, scratch *[]byte) ([]byte, error) {
	if len(w) == 0 || w[0] != packedMarker {
		return w, nil
	}
	x := expander{in: w[1:], out: append((*scratch)[:0], 1)}
	if err := x.geometry(0); err != nil {
		return nil, err
	}
	if len(x.in) != 0 {
		return nil, fmt.Errorf("%w: packed geometry: %d trailing bytes", errWKB, len(x.in))
	}
	*scratch = x.out
	return x.out, nil
}

type expander struct {
	in, out []byte
}

var errPacked = fmt.Errorf("%w: malformed packed geometry", errWKB)

func (x *expander) u32() (uint32, error) {
	if len(x.in) < 4 {
		return 0, errPacked
	}
	v := binary.LittleEndian.Uint32(x.in)
	x.out = append(x.out, x.in[:4]...)
	x.in = x.in[4:]
	return v, nil
}

// positions expands n packed positions.
func (x *expander) positions(n uint32) error {
	if uint64(n)*8 > uint64(len(x.in)) {
		return errPacked
	}
	in := x.in[:n*8]
	x.in = x.in[n*8:]
	out := slices.Grow(x.out, int(n)*16)
	o := out[len(out) : len(out)+int(n)*16]
	for j := range int(n) {
		src := in[8*j : 8*j+8 : 8*j+8]
		dst := o[16*j : 16*j+16 : 16*j+16]
		vx := float64(int32(binary.LittleEndian.Uint32(src[0:4]))) / packScale
		vy := float64(int32(binary.LittleEndian.Uint32(src[4:8]))) / packScale
		binary.LittleEndian.PutUint64(dst[0:8], math.Float64bits(vx))
		binary.LittleEndian.PutUint64(dst[8:16], math.Float64bits(vy))
	}
	x.out = out[:len(out)+int(n)*16]
	return nil
}

// geometry expands one geometry whose byte order byte was read (the
// outermost's is the marker, already written as 1).
func (x *expander) geometry(depth int) error {
	if depth > wkbMaxDepth {
		return errPacked
	}
	typ, err := x.u32()
	if err != nil {
		return err
	}
	switch typ {
	case wkbPoint:
		return x.positions(1)
	case wkbLineString:
		n, err := x.u32()
		if err != nil {
			return err
		}
		return x.positions(n)
	case wkbPolygon:
		nr, err := x.u32()
		if err != nil {
			return err
		}
		for range nr {
			n, err := x.u32()
			if err != nil {
				return err
			}
			if err := x.positions(n); err != nil {
				return err
			}
		}
		return nil
	case wkbMultiPoint, wkbMultiLineString, wkbMultiPolygon, wkbGeometryCollection:
		n, err := x.u32()
		if err != nil {
			return err
		}
		for range n {
			if len(x.in) == 0 || x.in[0] != 1 {
				return errPacked
			}
			x.out = append(x.out, 1)
			x.in = x.in[1:]
			if err := x.geometry(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	return errPacked
}

// packWKB appends w packed to dst, or reports false (dst unchanged in
// length) when w does not pack: a point, not little-endian 2D WKB, or a
// position that 1e-7 degrees do not hold exactly. It reads w with
// geo.WKBWalker, stopping at every part (Containers), and writes each
// header, count and position as it comes.
func packWKB(dst, w []byte) ([]byte, bool) {
	if len(w) < 9 || len(w) == 21 || w[0] != 1 {
		return dst, false
	}
	out := dst
	wk := geo.NewWKBWalker(w, geo.WKBWalkOptions{Containers: true})
	for {
		at := wk.Off
		part, n, p, err := wk.Next()
		if err != nil {
			return dst, false
		}
		switch part {
		case geo.WKBDone:
			if wk.Off != len(w) {
				return dst, false
			}
			return out, true
		case geo.WKBAtPolygonEnd:
			continue
		case geo.WKBAtRing:
			out = binary.LittleEndian.AppendUint32(out, uint32(n))
			var ok bool
			if out, ok = packPositions(out, &wk, n); !ok {
				return dst, false
			}
			continue
		}
		// A geometry's header: it packs when it is the plain 5 bytes of
		// little-endian 2D WKB (no Z, M or SRID), so that the packed form
		// expands to the same bytes. Next read it and a count (4 bytes) or
		// a point's position (16).
		head := wk.Off - at - 4
		if part == geo.WKBAtPoint {
			head = wk.Off - at - 16
		}
		if wk.Order != binary.LittleEndian || wk.Dims != 2 || head != 5 {
			return dst, false
		}
		if at == 0 {
			out = append(out, packedMarker)
		} else {
			out = append(out, 1)
		}
		out = binary.LittleEndian.AppendUint32(out, wk.Type)
		switch part {
		case geo.WKBAtPoint:
			x, okx := packCoord(p[0])
			y, oky := packCoord(p[1])
			if !okx || !oky {
				return dst, false
			}
			out = binary.LittleEndian.AppendUint32(out, uint32(x))
			out = binary.LittleEndian.AppendUint32(out, uint32(y))
		case geo.WKBAtLine:
			out = binary.LittleEndian.AppendUint32(out, uint32(n))
			var ok bool
			if out, ok = packPositions(out, &wk, n); !ok {
				return dst, false
			}
		default: // a polygon's ring count, a multi-geometry's member count
			out = binary.LittleEndian.AppendUint32(out, uint32(n))
		}
	}
}

// packCoord is v in units of 1e-7 degrees, when that is exact.
func packCoord(v float64) (int32, bool) {
	k := math.Round(v * packScale)
	if !(k >= math.MinInt32 && k <= math.MaxInt32) { // false for NaN
		return 0, false
	}
	if math.Float64bits(float64(int32(k))/packScale) != math.Float64bits(v) {
		return 0, false
	}
	return int32(k), true
}

// packPositions appends the n 2D positions at w.Off packed, and passes
// them (Next checked they are there).
func packPositions(out []byte, w *geo.WKBWalker, n int) ([]byte, bool) {
	in := w.B[w.Off : w.Off+16*n]
	w.Off += 16 * n
	out = slices.Grow(out, 8*n)
	o := out[len(out) : len(out)+8*n]
	for j := range n {
		src := in[16*j : 16*j+16 : 16*j+16]
		dst := o[8*j : 8*j+8 : 8*j+8]
		x, okx := packCoord(math.Float64frombits(binary.LittleEndian.Uint64(src[0:8])))
		y, oky := packCoord(math.Float64frombits(binary.LittleEndian.Uint64(src[8:16])))
		if !okx || !oky {
			return out, false
		}
		binary.LittleEndian.PutUint32(dst[0:4], uint32(x))
		binary.LittleEndian.PutUint32(dst[4:8], uint32(y))
	}
	return out[:len(out)+8*n], true
}

// packSplit is the fewest rows per goroutine when newGeomStore packs
// concurrently.
const packSplit = 4096

// newGeomStore stores the geometries wkb (which it does not keep),
// packing those that pack, on several goroutines for many rows. It
// returns the store and the bytes of wkb it replaces. Each part packs
// into its own region of one buffer of the WKB's size (a packed geometry
// is never longer than its WKB), the parts are then moved together, and
// the buffer is copied to its length only when packing left an eighth of
// it unused.
func newGeomStore(wkb [][]byte) (*geomStore, int64) {
	n := len(wkb)
	parts := min(runtime.GOMAXPROCS(0), max(1, n/packSplit))
	starts := make([]int, parts+1) // each part's region in buf
	var wkbBytes int64
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		size := 0
		for _, w := range wkb[lo:hi] {
			size += len(w)
		}
		starts[p+1] = starts[p] + size
		wkbBytes += int64(size)
	}
	buf := make([]byte, starts[parts])
	ends := make([]uint32, n)
	lens := make([]int, parts) // bytes each part wrote
	pack := func(p int) {
		lo, hi := p*n/parts, (p+1)*n/parts
		out := buf[starts[p]:starts[p]:starts[p+1]]
		for i, w := range wkb[lo:hi] {
			var ok bool
			if out, ok = packWKB(out, w); !ok {
				out = append(out, w...)
			}
			ends[lo+i] = uint32(len(out))
		}
		lens[p] = len(out)
	}
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Go(func() { pack(p) })
	}
	pack(0)
	wg.Wait()
	total := 0
	for p := range parts {
		if p > 0 {
			copy(buf[total:], buf[starts[p]:starts[p]+lens[p]]) // to the left: regions are in order
			lo, hi := p*n/parts, (p+1)*n/parts
			for i := lo; i < hi; i++ {
				ends[i] += uint32(total)
			}
		}
		total += lens[p]
	}
	buf = buf[:total]
	if total < cap(buf)*7/8 {
		buf = slices.Clone(buf)
	}
	return &geomStore{buf: buf, ends: ends}, wkbBytes
}

// checkGeomBytes refuses a tile whose geometries a geomStore cannot
// address (4 GiB; tiles are cut far below that).
func checkGeomBytes(t *tiles.Tile, name string) error {
	var n int64
	for _, w := range t.WKB {
		n += int64(len(w))
	}
	if n >= math.MaxUint32 {
		return fmt.Errorf("engine: tile %s: %d bytes of geometry: %w", name, n, tiles.ErrInvalidTile)
	}
	return nil
}

// geometry decodes row i's geometry, as tiles.Tile.Geometry does.
func (s *shard) geometry(i int) (orb.Geometry, error) {
	var scratch []byte
	w, err := s.geoms.wkb(int32(i), &scratch)
	if err != nil {
		return nil, fmt.Errorf("%w: feature %q: %v", tiles.ErrInvalidTile, s.tile.IDs[i], err)
	}
	g, err := geo.DecodeWKB(w, math.MaxInt)
	if err != nil {
		return nil, fmt.Errorf("%w: feature %q: %v", tiles.ErrInvalidTile, s.tile.IDs[i], err)
	}
	return g, nil
}
