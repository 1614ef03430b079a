package tiles

import "github.com/paulmach/orb"

// hilbertOrder is the number of bits per axis of the Hilbert grid.
const hilbertOrder = 16

// hilbertIndex maps p, which lies in extent, to its distance along a Hilbert
// curve of order 16 filling extent. Points outside extent are clamped.
func hilbertIndex(extent orb.Bound, p orb.Point) uint64 {
	return HilbertIndex(extent, p, hilbertOrder)
}

// HilbertIndex maps p to its distance along a Hilbert curve of the given
// order (bits per axis, at most 31) filling extent; points outside extent
// are clamped. Ingest sorts by it over the whole world before tiling.
func HilbertIndex(extent orb.Bound, p orb.Point, order uint) uint64 {
	n := uint32(1) << order
	x := gridCoord(p[0], extent.Min[0], extent.Max[0], n)
	y := gridCoord(p[1], extent.Min[1], extent.Max[1], n)
	return hilbertXY(n, x, y)
}

func gridCoord(v, lo, hi float64, n uint32) uint32 {
	if !(hi > lo) {
		return 0
	}
	f := (v - lo) / (hi - lo) * float64(n)
	switch {
	case !(f > 0): // also NaN
		return 0
	case f >= float64(n):
		return n - 1
	}
	return uint32(f)
}

// hilbertXY is the classic xy -> d conversion for an n x n grid (n a power
// of two).
func hilbertXY(n, x, y uint32) uint64 {
	var d uint64
	for s := n / 2; s > 0; s /= 2 {
		var rx, ry uint32
		if x&s != 0 {
			rx = 1
		}
		if y&s != 0 {
			ry = 1
		}
		d += uint64(s) * uint64(s) * uint64((3*rx)^ry)
		if ry == 0 {
			if rx == 1 {
				x = n - 1 - x
				y = n - 1 - y
			}
			x, y = y, x
		}
	}
	return d
}
