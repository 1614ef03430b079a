package geo

import (
	"encoding/binary"
	"math"

	"github.com/paulmach/orb"
)

// WKBMaxDepth is how deeply WKBWalker lets multi-geometries and
// collections nest.
const WKBMaxDepth = 16

// WKBWalker is the one walk over a WKB body, in place: it reads the headers
// (ReadWKBHeader), element counts (each checked against the bytes left, so
// a hostile count neither allocates nor reads out of bounds) and nesting
// (collections and multi-geometries, up to WKBMaxDepth), and stops at each
// part. It reads a Point's position itself; the positions of a LineString
// or ring are left for the caller to read at Off (8*Dims bytes each, in
// Order), in its own loop, before calling Next again. It judges no
// values: non-finite ordinates pass, as do mixed multi-geometries and
// collections. Its two callers differ, by WKBWalkOptions and by what they
// check themselves:
//   - DecodeWKB (ingest's GeoPackage rows, to orb) is strict: with
//     Containers it sees each polygon and multi-geometry, refuses
//     collections, nesting, members of another type and empty points,
//     and keeps empty rings.
//   - The engine's tile reads (flat.decodeWKB, wkbIndexBox) are lenient:
//     with SkipEmpty empty points, rings and polygons pass unseen,
//     collections and nested multi-geometries are read, and the engine
//     refuses non-finite ordinates itself.
//
// A WKBWalker allocates nothing; errors are *WKBError.
type WKBWalker struct {
	B     []byte           // the WKB
	Off   int              // the next byte to read
	Order binary.ByteOrder // byte order of the geometry Next stopped at
	Dims  int              // ordinates per position of that geometry (2..4)
	Type  uint32           // its base type (WKBPoint .. WKBGeometryCollection)
	Depth int              // open multi-geometries and collections
	// Ring numbers the rings of the current polygon from 1 (with
	// SkipEmpty, its non-empty rings); 0 before the first.
	Ring int

	opts WKBWalkOptions
	// left is the number of geometries still to read at each depth.
	left [WKBMaxDepth + 2]int
	// rings is how many rings of the current polygon are still to read.
	rings     int
	inPolygon bool
}

// WKBPart is what WKBWalker.Next stopped at.
type WKBPart uint8

const (
	WKBDone         WKBPart = iota // the geometry is read (Off is where it ends)
	WKBAtPoint                     // a Point: Next's p, as written (NaN, NaN for POINT EMPTY unless SkipEmpty)
	WKBAtLine                      // a LineString of Next's n positions at Off
	WKBAtPolygon                   // with Containers: a Polygon of Next's n rings (then its rings and WKBAtPolygonEnd)
	WKBAtRing                      // ring number Ring of the current polygon: Next's n positions at Off (n > 0 with SkipEmpty)
	WKBAtPolygonEnd                // the end of the current polygon
	WKBAtMulti                     // with Containers: a multi-geometry or collection (Type) of Next's n members
)

// WKBWalkOptions say where WKBWalker.Next stops.
type WKBWalkOptions struct {
	// Containers: stop at each polygon (WKBAtPolygon) and multi-geometry
	// or collection (WKBAtMulti) too, for a caller that builds them.
	// Without, their headers are read and checked without stopping.
	Containers bool
	// SkipEmpty: pass over empty points (NaN, NaN: POINT EMPTY as WKB
	// writes it), empty rings, and the end of a polygon without a
	// non-empty ring.
	SkipEmpty bool
}

// NewWKBWalker returns a walker at the start of the one geometry in b.
func NewWKBWalker(b []byte, opts WKBWalkOptions) WKBWalker {
	w := WKBWalker{B: b, opts: opts}
	w.left[0] = 1
	return w
}

// Next walks on to the next part. After WKBAtLine and WKBAtRing the caller
// must pass the n positions (Off += n*8*Dims; Next checked they are
// there) before calling Next again.
func (w *WKBWalker) Next() (part WKBPart, n int, p orb.Point, err error) {
	for {
		if w.inPolygon {
			if w.rings > 0 {
				w.rings--
				if n, err = w.count(8 * w.Dims); err != nil {
					return 0, 0, p, err
				}
				if n == 0 && w.opts.SkipEmpty {
					continue
				}
				w.Ring++
				return WKBAtRing, n, p, nil
			}
			w.inPolygon = false
			if w.Ring == 0 && w.opts.SkipEmpty {
				continue
			}
			return WKBAtPolygonEnd, 0, p, nil
		}
		if w.left[w.Depth] == 0 {
			if w.Depth == 0 {
				return WKBDone, 0, p, nil
			}
			w.Depth--
			continue
		}
		w.left[w.Depth]--
		if w.Depth > WKBMaxDepth {
			return 0, 0, p, wkbErr("nested too deeply")
		}
		h, err := ReadWKBHeader(w.B[w.Off:])
		if err != nil {
			return 0, 0, p, err
		}
		w.Off += h.Len
		w.Order, w.Dims, w.Type = h.Order, h.Dims, h.Type
		switch h.Type {
		case WKBPoint:
			if w.Off+8*w.Dims > len(w.B) {
				return 0, 0, p, wkbErr("truncated")
			}
			p = orb.Point{math.Float64frombits(w.Order.Uint64(w.B[w.Off:])), math.Float64frombits(w.Order.Uint64(w.B[w.Off+8:]))}
			w.Off += 8 * w.Dims
			if w.opts.SkipEmpty && math.IsNaN(p[0]) && math.IsNaN(p[1]) {
				continue
			}
			return WKBAtPoint, 0, p, nil
		case WKBLineString:
			if n, err = w.count(8 * w.Dims); err != nil {
				return 0, 0, p, err
			}
			return WKBAtLine, n, p, nil
		case WKBPolygon:
			if w.rings, err = w.count(4); err != nil {
				return 0, 0, p, err
			}
			w.inPolygon, w.Ring = true, 0
			if w.opts.Containers {
				return WKBAtPolygon, w.rings, p, nil
			}
		default: // multi-geometries and collections: nested geometries
			if n, err = w.count(5); err != nil {
				return 0, 0, p, err
			}
			w.Depth++
			w.left[w.Depth] = n
			if w.opts.Containers {
				return WKBAtMulti, n, p, nil
			}
		}
	}
}

// count reads an element count that must fit in the bytes left, each
// element taking at least minBytes.
func (w *WKBWalker) count(minBytes int) (int, error) {
	if len(w.B)-w.Off < 4 {
		return 0, wkbErr("truncated")
	}
	n := w.Order.Uint32(w.B[w.Off:])
	w.Off += 4
	if int64(n)*int64(minBytes) > int64(len(w.B)-w.Off) {
		return 0, wkbErr("count %d is larger than the input", n)
	}
	return int(n), nil
}

// ReadPositions reads len(ps) positions at Off into ps (X and Y; Z and M
// are passed over) and passes them. Next has checked that the n positions
// it reported are there; ReadPositions checks again.
func (w *WKBWalker) ReadPositions(ps []orb.Point) error {
	step := 8 * w.Dims
	if len(ps)*step > len(w.B)-w.Off {
		return wkbErr("truncated")
	}
	b := w.B[w.Off:]
	if w.Order == binary.LittleEndian && step == 16 {
		// The common case, with the byte order called directly rather than
		// through the interface (a decode's innermost loop).
		for i := range ps {
			q := b[16*i : 16*i+16 : 16*i+16]
			ps[i] = orb.Point{math.Float64frombits(binary.LittleEndian.Uint64(q[0:8])), math.Float64frombits(binary.LittleEndian.Uint64(q[8:16]))}
		}
	} else {
		for i := range ps {
			ps[i] = orb.Point{math.Float64frombits(w.Order.Uint64(b[i*step:])), math.Float64frombits(w.Order.Uint64(b[i*step+8:]))}
		}
	}
	w.Off += len(ps) * step
	return nil
}
