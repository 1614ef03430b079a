package geo

import (
	"math"
	"slices"
)

// segIndex is a static, packed R-tree over segment bounding boxes, built
// once and only read afterwards. Leaves are packed in input order, 16
// consecutive segments of a ring to a node (consecutive segments are
// neighbours, so the nodes are compact); the nodes of every level are then
// sorted by sort-tile-recursive packing before being grouped into the level
// above, which copes with polygons given in any order. Finding every pair of
// intersecting boxes among n segments then costs about O(n log n + k), k
// the number of pairs, even for long thin segments that a plain x-sweep
// would pair with everything.
type segIndex struct {
	levels [][]box // levels[0] holds the leaves (one box per item), the last the root
}

type box struct {
	minX, minY, maxX, maxY float64
	item                   int // leaf: the item; node: index of its first child in the level below
	n                      int // node: number of children
}

const segNodeSize = 16

func (b *box) overlaps(o *box) bool {
	return b.minX <= o.maxX && o.minX <= b.maxX && b.minY <= o.maxY && o.minY <= b.maxY
}

// newSegIndex builds the index over leaves, which it keeps (and does not
// reorder).
func newSegIndex(leaves []box) *segIndex {
	ix := &segIndex{levels: [][]box{leaves}}
	level := leaves
	for len(level) > 1 {
		up := make([]box, 0, (len(level)+segNodeSize-1)/segNodeSize)
		for i := 0; i < len(level); i += segNodeSize {
			j := min(i+segNodeSize, len(level))
			b := box{minX: math.Inf(1), minY: math.Inf(1), maxX: math.Inf(-1), maxY: math.Inf(-1), item: i, n: j - i}
			for k := i; k < j; k++ {
				c := &level[k]
				b.minX, b.minY = math.Min(b.minX, c.minX), math.Min(b.minY, c.minY)
				b.maxX, b.maxY = math.Max(b.maxX, c.maxX), math.Max(b.maxY, c.maxY)
			}
			up = append(up, b)
		}
		strSort(up)
		ix.levels = append(ix.levels, up)
		level = up
	}
	return ix
}

// strSort orders node boxes by sort-tile-recursive packing: vertical slabs
// by centre x, each sorted by centre y. Nodes keep their child ranges, so
// reordering a level does not disturb the levels below.
func strSort(b []box) {
	n := len(b)
	if n <= segNodeSize {
		return
	}
	slices.SortFunc(b, func(p, q box) int { return cmpFloat(p.minX+p.maxX, q.minX+q.maxX, p.item, q.item) })
	groups := (n + segNodeSize - 1) / segNodeSize
	per := int(math.Ceil(math.Sqrt(float64(groups)))) * segNodeSize
	for i := 0; i < n; i += per {
		s := b[i:min(i+per, n)]
		slices.SortFunc(s, func(p, q box) int { return cmpFloat(p.minY+p.maxY, q.minY+q.maxY, p.item, q.item) })
	}
}

func cmpFloat(a, b float64, ia, ib int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return ia - ib
}

// query appends to out the item of every leaf whose box overlaps q, in an
// order fixed by the index. stack is a reusable buffer; both grown buffers
// are returned.
func (ix *segIndex) query(q *box, out []int, stack []int32) ([]int, []int32) {
	top := len(ix.levels) - 1
	root := &ix.levels[top][0]
	if len(ix.levels[0]) == 0 || !root.overlaps(q) {
		return out, stack
	}
	if top == 0 {
		return append(out, root.item), stack
	}
	// The stack holds (level, index) pairs of overlapping nodes.
	stack = append(stack[:0], int32(top), 0)
	for len(stack) > 0 {
		lv, i := int(stack[len(stack)-2]), int(stack[len(stack)-1])
		stack = stack[:len(stack)-2]
		b := &ix.levels[lv][i]
		children := ix.levels[lv-1][b.item : b.item+b.n]
		if lv == 1 {
			for c := range children {
				if children[c].overlaps(q) {
					out = append(out, children[c].item)
				}
			}
			continue
		}
		for c := len(children) - 1; c >= 0; c-- {
			if children[c].overlaps(q) {
				stack = append(stack, int32(lv-1), int32(b.item+c))
			}
		}
	}
	return out, stack
}
