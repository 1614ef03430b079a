package engine

import (
	"fmt"
	"math"

	"github.com/paulmach/orb"
)

// wkbWalk is the engine's one walk over a WKB geometry, for the two
// readers that build something from it: flat.decodeWKB (the geometry an
// evaluation reads) and wkbIndexBox (a row's index box, on load). It
// checks the structure (byte orders, types, element counts against the
// bytes left, nesting, empty and non-finite points) and stops at each
// point, LineString and non-empty polygon ring; the positions of a line or
// ring are left for the caller to read from r (8*dims bytes each), in its
// own hot loop. Both readers therefore accept and reject exactly the same
// input.
type wkbWalk struct {
	r     *wkbReader
	dims  int // ordinates per position of the current geometry
	depth int // open multi-geometries and collections
	// left is the number of geometries still to read at each depth.
	left [wkbMaxDepth + 2]int
	// ring numbers the non-empty rings of the current polygon from 1;
	// rings is how many of its rings are still to read.
	ring, rings int
	inPolygon   bool
}

// wkbPart is what wkbWalk.next stopped at.
type wkbPart uint8

const (
	wkbDone         wkbPart = iota // the geometry is read
	wkbAtPoint                     // a point: next's p
	wkbAtLine                      // a LineString of next's n positions at r.off
	wkbAtRing                      // ring number w.ring of a polygon: n positions at r.off
	wkbAtPolygonEnd                // the end of a polygon with at least one non-empty ring
)

func newWKBWalk(r *wkbReader) wkbWalk {
	w := wkbWalk{r: r}
	w.left[0] = 1
	return w
}

// next walks on to the next part. After wkbAtLine and wkbAtRing the
// caller must pass the n positions (r.off += n*8*w.dims, checking they are
// there) before calling next again. Empty points (NaN coordinates, as WKB
// writes them) and empty rings are skipped.
func (w *wkbWalk) next() (part wkbPart, n int, p orb.Point, err error) {
	r := w.r
	for {
		if w.inPolygon {
			if w.rings > 0 {
				w.rings--
				if n, err = r.count(16); err != nil {
					return 0, 0, p, err
				}
				if n == 0 {
					continue
				}
				w.ring++
				return wkbAtRing, n, p, nil
			}
			w.inPolygon = false
			if w.ring > 0 {
				return wkbAtPolygonEnd, 0, p, nil
			}
		}
		if w.left[w.depth] == 0 {
			if w.depth == 0 {
				return wkbDone, 0, p, nil
			}
			w.depth--
			continue
		}
		w.left[w.depth]--
		if w.depth > wkbMaxDepth {
			return 0, 0, p, fmt.Errorf("%w: nested too deeply", errWKB)
		}
		typ, dims, err := r.header()
		if err != nil {
			return 0, 0, p, err
		}
		w.dims = dims
		switch typ {
		case wkbPoint:
			if r.off+8*dims > len(r.b) {
				return 0, 0, p, errWKB
			}
			p = r.point(dims)
			if math.IsNaN(p[0]) && math.IsNaN(p[1]) {
				continue // POINT EMPTY
			}
			if !finite(p[0]) || !finite(p[1]) {
				return 0, 0, p, errNonFinite
			}
			return wkbAtPoint, 0, p, nil
		case wkbLineString:
			if n, err = r.count(16); err != nil {
				return 0, 0, p, err
			}
			return wkbAtLine, n, p, nil
		case wkbPolygon:
			if w.rings, err = r.count(4); err != nil {
				return 0, 0, p, err
			}
			w.inPolygon, w.ring = true, 0
		default: // multi-geometries and collections: nested geometries
			if n, err = r.count(5); err != nil {
				return 0, 0, p, err
			}
			w.depth++
			w.left[w.depth] = n
		}
	}
}
