package austates

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/paulmach/orb"
)

// The file format is documented in internal/gen/main.go, which writes it.

const (
	magic = "AUBM\x01"
	// Limits far above the real file's (about 100 arcs, 14,000 points) so
	// that a corrupt length cannot make the decoder allocate without bound.
	maxDecoded = 16 << 20
	maxCount   = 1 << 20
)

// ErrFormat reports a file that is not a valid au.bin file.
var ErrFormat = errors.New("austates: invalid file")

type data struct {
	states  []State
	bounds  []orb.Bound // per state, same order
	coast   orb.MultiLineString
	borders orb.MultiLineString
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: truncated or overlong integer", ErrFormat)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: truncated or overlong integer", ErrFormat)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length and checks it against the limit and the bytes left
// (every counted item takes at least one byte).
func (r *reader) count(what string) int {
	v := r.uvarint()
	if r.err == nil && (v > maxCount || v > uint64(len(r.b))) {
		r.err = fmt.Errorf("%w: %s count %d too large", ErrFormat, what, v)
	}
	if r.err != nil {
		return 0
	}
	return int(v)
}

func (r *reader) string() string {
	n := r.count("string")
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// decode parses a gzip-compressed au.bin file.
func decode(gz []byte) (*data, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if len(raw) > maxDecoded {
		return nil, fmt.Errorf("%w: more than %d bytes decompressed", ErrFormat, maxDecoded)
	}
	return parse(raw)
}

// parse reads the decompressed file.
func parse(raw []byte) (*data, error) {
	if !bytes.HasPrefix(raw, []byte(magic)) {
		return nil, fmt.Errorf("%w: bad magic or version", ErrFormat)
	}
	r := &reader{b: raw[len(magic):]}

	const µ = 1e-6
	arcs := make([][]orb.Point, r.count("arc"))
	var x, y int64
	for i := range arcs {
		n := r.count("point")
		if r.err == nil && n < 2 {
			return nil, fmt.Errorf("%w: arc %d has %d points", ErrFormat, i, n)
		}
		a := make([]orb.Point, n)
		for j := range a {
			x += r.varint()
			y += r.varint()
			a[j] = orb.Point{float64(x) * µ, float64(y) * µ}
		}
		arcs[i] = a
	}

	d := &data{}
	// Which states use each arc: coastline arcs are used by one ring,
	// border arcs by two states.
	users := make([][]int, len(arcs))
	uses := make([]int, len(arcs))
	nstates := r.count("state")
	for si := 0; si < nstates && r.err == nil; si++ {
		s := State{Code: r.string(), Name: r.string()}
		polys := make(orb.MultiPolygon, r.count("polygon"))
		for pi := range polys {
			rings := make(orb.Polygon, r.count("ring"))
			for ri := range rings {
				refs := r.count("arc reference")
				if r.err == nil && refs == 0 {
					return nil, fmt.Errorf("%w: %s has an empty ring", ErrFormat, s.Code)
				}
				var ring orb.Ring
				for k := 0; k < refs && r.err == nil; k++ {
					ref := r.varint()
					idx, rev := ref, false
					if ref < 0 {
						idx, rev = ^ref, true
					}
					if idx >= int64(len(arcs)) {
						return nil, fmt.Errorf("%w: %s refers to arc %d of %d", ErrFormat, s.Code, idx, len(arcs))
					}
					a := arcs[idx]
					if rev {
						a = slices.Clone(a)
						slices.Reverse(a)
					}
					if k > 0 {
						if ring[len(ring)-1] != a[0] {
							return nil, fmt.Errorf("%w: %s ring arcs do not join", ErrFormat, s.Code)
						}
						a = a[1:]
					}
					ring = append(ring, a...)
					uses[idx]++
					if !slices.Contains(users[idx], si) {
						users[idx] = append(users[idx], si)
					}
				}
				if r.err == nil && (len(ring) < 4 || !ring.Closed()) {
					return nil, fmt.Errorf("%w: %s has an open or degenerate ring", ErrFormat, s.Code)
				}
				rings[ri] = ring
			}
			polys[pi] = rings
		}
		if r.err == nil && len(polys) == 0 {
			return nil, fmt.Errorf("%w: %s has no polygon", ErrFormat, s.Code)
		}
		s.Geometry = polys
		d.states = append(d.states, s)
		d.bounds = append(d.bounds, polys.Bound())
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrFormat, len(r.b))
	}
	if !slices.IsSortedFunc(d.states, func(a, b State) int { return strings.Compare(a.Code, b.Code) }) {
		return nil, fmt.Errorf("%w: states not sorted by code", ErrFormat)
	}
	for i, a := range arcs {
		switch {
		case uses[i] == 1:
			d.coast = append(d.coast, orb.LineString(a))
		case len(users[i]) >= 2:
			d.borders = append(d.borders, orb.LineString(a))
		}
		// An arc used twice by one state lies inside it: neither.
	}
	return d, nil
}
