package engine

import (
	"math"

	"github.com/paulmach/orb"
)

// index is a static packed R-tree over a tile's feature boxes, in row
// order. Tiles are written sorted along a Hilbert curve (tiles.WriteTile),
// so consecutive rows are neighbours and packing them 16 to a node gives
// compact nodes, as in a Hilbert R-tree, without sorting or per-node
// allocation: building costs one pass, and the tree is two flat arrays.
//
// Boxes are float32, rounded outwards, so a box always contains the
// float64 box it stands for. Memory: 16 bytes per feature plus about 1/15
// of that for the upper levels, and no item ids (a leaf's position is its
// row). github.com/tidwall/rtree, a dynamic R-tree, inserts about 0.8M
// boxes/s here and keeps ~30 bytes per item in pointer-linked nodes; a
// static tree suits immutable tiles better (BenchmarkIndexBuild compares).
//
// An index is immutable once built and safe for concurrent searches.
type index struct {
	boxes []box32 // all levels: leaves first, root last
	start []int32 // start of each level in boxes; start[len] = len(boxes)
}

type box32 struct{ minX, minY, maxX, maxY float32 }

const indexNode = 16

// down and up round a float64 to the nearest float32 below / above it.
func down(v float64) float32 {
	f := float32(v)
	if float64(f) > v {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f
}

func up(v float64) float32 {
	f := float32(v)
	if float64(f) < v {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

func toBox32(b orb.Bound) box32 {
	return box32{down(b.Min[0]), down(b.Min[1]), up(b.Max[0]), up(b.Max[1])}
}

func (b *box32) intersects(o *box32) bool {
	return b.minX <= o.maxX && o.minX <= b.maxX && b.minY <= o.maxY && o.minY <= b.maxY
}

// newIndex builds the tree over leaves (one box per row), which it keeps.
func newIndex(leaves []box32) *index {
	n := len(leaves)
	total := n
	for m := n; m > 1; {
		m = (m + indexNode - 1) / indexNode
		total += m
	}
	boxes := append(make([]box32, 0, total), leaves...)
	ix := &index{start: []int32{0}}
	lo, hi := 0, n
	for hi-lo > 1 {
		for i := lo; i < hi; i += indexNode {
			b := boxes[i]
			for _, c := range boxes[i+1 : min(i+indexNode, hi)] {
				b.minX = min(b.minX, c.minX)
				b.minY = min(b.minY, c.minY)
				b.maxX = max(b.maxX, c.maxX)
				b.maxY = max(b.maxY, c.maxY)
			}
			boxes = append(boxes, b)
		}
		ix.start = append(ix.start, int32(hi))
		lo, hi = hi, len(boxes)
	}
	ix.start = append(ix.start, int32(len(boxes)))
	ix.boxes = boxes
	return ix
}

// len is the number of leaves.
func (ix *index) len() int { return int(ix.start[1]) }

// bytes is the memory the index holds.
func (ix *index) bytes() int64 { return int64(cap(ix.boxes))*16 + int64(cap(ix.start))*4 }

// search appends to out the rows whose boxes intersect q, in row order.
func (ix *index) search(q box32, out []int32) []int32 {
	levels := len(ix.start) - 1
	if ix.len() == 0 {
		return out
	}
	root := &ix.boxes[len(ix.boxes)-1]
	if !root.intersects(&q) {
		return out
	}
	return ix.searchNode(levels-1, 0, &q, out)
}

// searchNode visits node i (counted within its level) of level lv.
func (ix *index) searchNode(lv, i int, q *box32, out []int32) []int32 {
	if lv == 0 {
		return append(out, int32(i))
	}
	cbase := int(ix.start[lv-1])
	cend := int(ix.start[lv])
	lo := cbase + i*indexNode
	hi := min(lo+indexNode, cend)
	for j := lo; j < hi; j++ {
		if ix.boxes[j].intersects(q) {
			if lv == 1 {
				out = append(out, int32(j-cbase))
			} else {
				out = ix.searchNode(lv-1, j-cbase, q, out)
			}
		}
	}
	return out
}
