package bench

import (
	"encoding/binary"
	"errors"
)

var errVertexWKB = errors.New("bench: malformed WKB")

// wkbVertices counts the positions of an ISO WKB geometry (2D, Z, M or
// ZM) without decoding them: the per-vertex memory figures divide by it.
func wkbVertices(b []byte) (int64, error) {
	n, _, err := wkbCount(b, 0)
	return n, err
}

// wkbCount counts the positions of the geometry at b[off:] and returns
// the offset after it.
func wkbCount(b []byte, depth int) (int64, []byte, error) {
	if depth > 32 || len(b) < 5 {
		return 0, nil, errVertexWKB
	}
	var order binary.ByteOrder = binary.LittleEndian
	if b[0] == 0 {
		order = binary.BigEndian
	}
	typ := order.Uint32(b[1:5])
	b = b[5:]
	dims := 2
	switch typ / 1000 {
	case 1, 2:
		dims = 3
	case 3:
		dims = 4
	}
	size := 8 * dims
	count := func() (int, bool) {
		if len(b) < 4 {
			return 0, false
		}
		n := int(order.Uint32(b))
		b = b[4:]
		return n, n >= 0
	}
	switch typ % 1000 {
	case 1: // point
		if len(b) < size {
			return 0, nil, errVertexWKB
		}
		return 1, b[size:], nil
	case 2: // line string
		n, ok := count()
		if !ok || n > len(b)/size {
			return 0, nil, errVertexWKB
		}
		return int64(n), b[n*size:], nil
	case 3: // polygon
		nr, ok := count()
		if !ok {
			return 0, nil, errVertexWKB
		}
		var total int64
		for range nr {
			n, ok := count()
			if !ok || n > len(b)/size {
				return 0, nil, errVertexWKB
			}
			total += int64(n)
			b = b[n*size:]
		}
		return total, b, nil
	case 4, 5, 6, 7: // multi-geometries and collections
		n, ok := count()
		if !ok {
			return 0, nil, errVertexWKB
		}
		var total int64
		for range n {
			v, rest, err := wkbCount(b, depth+1)
			if err != nil {
				return 0, nil, err
			}
			total += v
			b = rest
		}
		return total, b, nil
	}
	return 0, nil, errVertexWKB
}
