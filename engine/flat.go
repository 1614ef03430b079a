package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// flat is a geometry held in flat, reusable buffers: its positions
// (longitude, latitude) and the elements they form. Decoding a feature's WKB
// into a flat that is reused across features allocates nothing once the
// buffers have grown, which keeps the per-candidate cost of a query low.
//
// A flat is owned by one goroutine.
type flat struct {
	pts   []orb.Point
	elems []elem
	polys int32     // number of polygons (rings carry their polygon's index)
	comps []int32   // index into pts of one position of each connected component
	box   orb.Bound // bounding box of pts
}

type elemKind uint8

const (
	elemPoint elemKind = iota // pts[start:end] are isolated points
	elemLine                  // pts[start:end] is a line string (at least 2 positions)
	elemRing                  // pts[start:end] is a closed ring of polygon poly
)

type elem struct {
	kind       elemKind
	start, end int32
	poly       int32 // rings: the polygon; otherwise -1
}

func (f *flat) reset() {
	f.pts = f.pts[:0]
	f.elems = f.elems[:0]
	f.comps = f.comps[:0]
	f.polys = 0
	f.box = orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
}

func (f *flat) hasArea() bool { return f.polys > 0 }

func (f *flat) add(p orb.Point) {
	f.pts = append(f.pts, p)
	f.box.Min[0] = math.Min(f.box.Min[0], p[0])
	f.box.Min[1] = math.Min(f.box.Min[1], p[1])
	f.box.Max[0] = math.Max(f.box.Max[0], p[0])
	f.box.Max[1] = math.Max(f.box.Max[1], p[1])
}

// addPoints records isolated points.
func (f *flat) addPoints(ps ...orb.Point) {
	if len(ps) == 0 {
		return
	}
	start := int32(len(f.pts))
	for i, p := range ps {
		f.comps = append(f.comps, start+int32(i))
		f.add(p)
	}
	f.elems = append(f.elems, elem{kind: elemPoint, start: start, end: int32(len(f.pts)), poly: -1})
}

func (f *flat) addLine(ls []orb.Point) {
	switch len(ls) {
	case 0:
		return
	case 1:
		f.addPoints(ls[0])
		return
	}
	start := int32(len(f.pts))
	f.comps = append(f.comps, start)
	for _, p := range ls {
		f.add(p)
	}
	f.elems = append(f.elems, elem{kind: elemLine, start: start, end: int32(len(f.pts)), poly: -1})
}

func (f *flat) addPolygon(p orb.Polygon) {
	if len(p) == 0 || len(p[0]) == 0 {
		return
	}
	poly := f.polys
	f.polys++
	for i, r := range p {
		if len(r) == 0 {
			continue
		}
		start := int32(len(f.pts))
		if i == 0 {
			f.comps = append(f.comps, start)
		}
		for _, q := range r {
			f.add(q)
		}
		if r[0] != r[len(r)-1] { // close the ring
			f.add(r[0])
		}
		f.elems = append(f.elems, elem{kind: elemRing, start: start, end: int32(len(f.pts)), poly: poly})
	}
}

// setOrb fills f with an orb geometry: Point, MultiPoint, LineString,
// MultiLineString, Polygon, MultiPolygon, Ring, Bound or Collection.
func (f *flat) setOrb(g orb.Geometry) {
	f.reset()
	f.appendOrb(g)
}

func (f *flat) appendOrb(g orb.Geometry) {
	switch g := g.(type) {
	case orb.Point:
		f.addPoints(g)
	case orb.MultiPoint:
		f.addPoints(g...)
	case orb.LineString:
		f.addLine(g)
	case orb.MultiLineString:
		for _, l := range g {
			f.addLine(l)
		}
	case orb.Ring:
		f.addPolygon(orb.Polygon{g})
	case orb.Bound:
		f.addPolygon(g.ToPolygon())
	case orb.Polygon:
		f.addPolygon(g)
	case orb.MultiPolygon:
		for _, p := range g {
			f.addPolygon(p)
		}
	case orb.Collection:
		for _, h := range g {
			f.appendOrb(h)
		}
	}
}

// WKB decoding. Tiles hold ISO WKB written by orb (2D); Z, M and ZM
// variants, in ISO or EWKB form, are read too, keeping x and y.

var errWKB = errors.New("engine: malformed WKB")

const (
	wkbPoint              = geo.WKBPoint
	wkbLineString         = geo.WKBLineString
	wkbPolygon            = geo.WKBPolygon
	wkbMultiPoint         = geo.WKBMultiPoint
	wkbMultiLineString    = geo.WKBMultiLineString
	wkbMultiPolygon       = geo.WKBMultiPolygon
	wkbGeometryCollection = geo.WKBGeometryCollection

	wkbMaxDepth = geo.WKBMaxDepth
)

// wkbPositions appends the n positions at w.Off to f.pts (without
// elements) and passes them. It is the innermost loop of every query (each
// candidate is decoded), hence the direct byte order and the bitwise
// finiteness test.
func wkbPositions(w *geo.WKBWalker, f *flat, n int) error {
	step := 8 * w.Dims
	if n*step > len(w.B)-w.Off {
		return errWKB
	}
	start := len(f.pts)
	f.pts = slices.Grow(f.pts, n)[:start+n]
	pts := f.pts[start:]
	b := w.B[w.Off : w.Off+n*step]
	// bad becomes 1 when an ordinate's exponent is all ones (infinite or
	// NaN): exponent+1 reaches bit 11 only then.
	var bad uint64
	if w.Order == binary.ByteOrder(binary.LittleEndian) {
		for i := range pts {
			ux, uy := binary.LittleEndian.Uint64(b[i*step:]), binary.LittleEndian.Uint64(b[i*step+8:])
			bad |= (ux>>52&0x7ff+1)>>11 | (uy>>52&0x7ff+1)>>11
			pts[i] = orb.Point{math.Float64frombits(ux), math.Float64frombits(uy)}
		}
	} else {
		for i := range pts {
			ux, uy := binary.BigEndian.Uint64(b[i*step:]), binary.BigEndian.Uint64(b[i*step+8:])
			bad |= (ux>>52&0x7ff+1)>>11 | (uy>>52&0x7ff+1)>>11
			pts[i] = orb.Point{math.Float64frombits(ux), math.Float64frombits(uy)}
		}
	}
	w.Off += n * step
	if bad != 0 {
		return fmt.Errorf("%w: non-finite coordinate", errWKB)
	}
	bx := &f.box
	for _, p := range pts {
		if p[0] < bx.Min[0] {
			bx.Min[0] = p[0]
		}
		if p[0] > bx.Max[0] {
			bx.Max[0] = p[0]
		}
		if p[1] < bx.Min[1] {
			bx.Min[1] = p[1]
		}
		if p[1] > bx.Max[1] {
			bx.Max[1] = p[1]
		}
	}
	return nil
}

// decodeWKB fills f with the geometry encoded in b. Empty points (NaN
// coordinates, as WKB writes them) are skipped.
func (f *flat) decodeWKB(b []byte) error {
	f.reset()
	w := newWKBWalk(b)
	for {
		part, n, p, err := w.Next()
		if err != nil {
			return wkbWalkErr(err)
		}
		start := int32(len(f.pts))
		switch part {
		case geo.WKBDone:
			if w.Off != len(b) {
				return fmt.Errorf("%w: %d trailing bytes", errWKB, len(b)-w.Off)
			}
			return nil
		case geo.WKBAtPoint:
			if !finite(p[0]) || !finite(p[1]) {
				return errNonFinite
			}
			f.comps = append(f.comps, start)
			f.add(p)
			// Merge consecutive isolated points into one element.
			if n := len(f.elems); n > 0 && f.elems[n-1].kind == elemPoint && f.elems[n-1].end == start {
				f.elems[n-1].end++
			} else {
				f.elems = append(f.elems, elem{kind: elemPoint, start: start, end: start + 1, poly: -1})
			}
		case geo.WKBAtLine:
			if err := wkbPositions(&w, f, n); err != nil {
				return err
			}
			switch n {
			case 0:
			case 1:
				f.comps = append(f.comps, start)
				f.elems = append(f.elems, elem{kind: elemPoint, start: start, end: start + 1, poly: -1})
			default:
				f.comps = append(f.comps, start)
				f.elems = append(f.elems, elem{kind: elemLine, start: start, end: int32(len(f.pts)), poly: -1})
			}
		case geo.WKBAtRing:
			if err := wkbPositions(&w, f, n); err != nil {
				return err
			}
			if w.Ring == 1 {
				f.comps = append(f.comps, start)
			}
			if f.pts[start] != f.pts[len(f.pts)-1] {
				f.add(f.pts[start])
			}
			f.elems = append(f.elems, elem{kind: elemRing, start: start, end: int32(len(f.pts)), poly: f.polys})
		case geo.WKBAtPolygonEnd:
			f.polys++
		}
	}
}

// wkbPointXY decodes b when it is a 2D ISO Point, without touching a flat:
// the fast path for point layers.
func wkbPointXY(b []byte) (orb.Point, bool) {
	if len(b) != 21 {
		return orb.Point{}, false
	}
	var order binary.ByteOrder
	switch b[0] {
	case 0:
		order = binary.BigEndian
	case 1:
		order = binary.LittleEndian
	default:
		return orb.Point{}, false
	}
	if order.Uint32(b[1:]) != wkbPoint {
		return orb.Point{}, false
	}
	p := orb.Point{math.Float64frombits(order.Uint64(b[5:])), math.Float64frombits(order.Uint64(b[13:]))}
	if !finite(p[0]) || !finite(p[1]) {
		return orb.Point{}, false
	}
	return p, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
