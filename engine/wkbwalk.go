package engine

import (
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"siteenv/engine/geo"
)

// wkbWalk is the engine's reading of a WKB geometry over geo.WKBWalker (the
// one walk over WKB, which also serves geo.DecodeWKB), for the two readers
// that build something from it: flat.decodeWKB (the geometry an evaluation
// reads) and wkbIndexBox (a row's index box, on load). Both therefore
// accept and reject exactly the same input. The engine is the lenient
// caller (geo.DecodeWKB the strict one): collections and nested or mixed
// multi-geometries are read (up to geo.WKBMaxDepth), empty points (NaN
// coordinates, as WKB writes them), empty rings and polygons without a
// non-empty ring are skipped, and a non-finite point is refused (the
// callers refuse non-finite positions of lines and rings in their own
// loops). next stops at each point, LineString and non-empty polygon
// ring; the positions of a line or ring are left for the caller to read
// at w.Off (8*w.Dims bytes each, in w.Order), in its own hot loop.
type wkbWalk struct {
	geo.WKBWalker
	// ring numbers the non-empty rings of the current polygon from 1.
	ring int
}

func newWKBWalk(b []byte) wkbWalk {
	return wkbWalk{WKBWalker: geo.NewWKBWalker(b)}
}

// next walks on to the next part the engine reads: geo.WKBDone,
// geo.WKBAtPoint (p), geo.WKBAtLine and geo.WKBAtRing (ring number w.ring:
// n > 0 positions at w.Off), or geo.WKBAtPolygonEnd (the end of a polygon
// with at least one non-empty ring). After a line or ring the caller must
// pass the n positions (w.Off += n*8*w.Dims, checking they are there)
// before calling next again. Errors match errWKB.
func (w *wkbWalk) next() (part geo.WKBPart, n int, p orb.Point, err error) {
	for {
		part, n, p, err = w.Next()
		if err != nil {
			return 0, 0, p, fmt.Errorf("%w: %v", errWKB, err)
		}
		switch part {
		case geo.WKBAtPoint:
			if math.IsNaN(p[0]) && math.IsNaN(p[1]) {
				continue // POINT EMPTY
			}
			if !finite(p[0]) || !finite(p[1]) {
				return 0, 0, p, errNonFinite
			}
		case geo.WKBAtPolygon:
			w.ring = 0
			continue
		case geo.WKBAtRing:
			if n == 0 {
				continue
			}
			w.ring++
		case geo.WKBAtPolygonEnd:
			if w.ring == 0 {
				continue
			}
		case geo.WKBAtMulti:
			continue
		}
		return part, n, p, nil
	}
}
