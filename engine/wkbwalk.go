package engine

import (
	"fmt"

	"siteenv/geo"
)

// newWKBWalk is the engine's walk over a WKB geometry: geo.WKBWalker (the
// one walk over WKB, which also serves geo.DecodeWKB) with SkipEmpty, for
// the two readers that build something from it: flat.decodeWKB (the
// geometry an evaluation reads) and wkbIndexBox (a row's index box, on
// load). The engine is the walker's lenient caller (geo.DecodeWKB the
// strict one): collections and nested or mixed multi-geometries are read
// (up to geo.WKBMaxDepth), empty points, empty rings and polygons without
// a non-empty ring pass unseen. Both readers refuse a non-finite point
// (errNonFinite) and non-finite positions (in their own position loops,
// which read a line's or ring's n positions at w.Off, 8*w.Dims bytes each,
// in w.Order), and wrap the walk's errors with wkbWalkErr, so they accept
// and reject exactly the same input (FuzzWKBIndexBox).
func newWKBWalk(b []byte) geo.WKBWalker {
	return geo.NewWKBWalker(b, geo.WKBWalkOptions{SkipEmpty: true})
}

// wkbWalkErr is an error of the walk (a *geo.WKBError) as the engine
// reports it: matching errWKB.
func wkbWalkErr(err error) error { return fmt.Errorf("%w: %v", errWKB, err) }
