package bench

import "siteenv/geo"

// wkbVertices counts the positions of a WKB geometry (2D, Z, M or ZM)
// without decoding them: the per-vertex memory figures divide by it. It
// walks b with geo.WKBWalker, passing each line's and ring's positions.
func wkbVertices(b []byte) (int64, error) {
	w := geo.NewWKBWalker(b, geo.WKBWalkOptions{})
	var total int64
	for {
		part, n, _, err := w.Next()
		if err != nil {
			return 0, err
		}
		switch part {
		case geo.WKBDone:
			return total, nil
		case geo.WKBAtPoint:
			total++
		case geo.WKBAtLine, geo.WKBAtRing:
			total += int64(n)
			w.Off += n * 8 * w.Dims
		}
	}
}
