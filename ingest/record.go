package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/tiles"
)

// A record is one validated feature in the compact binary form that is
// buffered, spilled and sorted between reading and tiling:
//
//	key    8 bytes, little endian: the spatial sort key (see spatialKey)
//	id     uvarint length + bytes
//	wkb    uvarint length + ISO WKB geometry in CRS84
//	props  one entry per schema field, in schema order: a tag byte (0 null,
//	       1 value, 2 true for booleans) then the value: strings, dates and
//	       date-times as uvarint length + canonical text, integers as a
//	       zigzag varint, numbers as 8 bytes of IEEE 754 bits
//
// Runs on disk frame each record with a uvarint length.

var errBadRecord = errors.New("ingest: corrupt spill record")

// appendRecord encodes a feature whose properties are in canonical form
// (FieldSchema.Normalize).
func appendRecord(b []byte, key uint64, id string, g orb.Geometry, props map[string]any, schema tiles.FieldSchema) ([]byte, error) {
	b = binary.LittleEndian.AppendUint64(b, key)
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	// Reserve a fixed-width length for the WKB so it can be written in place.
	lenAt := len(b)
	b = append(b, 0, 0, 0, 0, 0)
	start := len(b)
	b, err := appendWKB(b, g)
	if err != nil {
		return nil, err
	}
	putUvarint5(b[lenAt:start], uint64(len(b)-start))
	for _, f := range schema {
		v := props[f.Name]
		if v == nil {
			b = append(b, 0)
			continue
		}
		switch x := v.(type) {
		case string:
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(x)))
			b = append(b, x...)
		case int64:
			b = append(b, 1)
			b = binary.AppendVarint(b, x)
		case float64:
			b = append(b, 1)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		case bool:
			if x {
				b = append(b, 2)
			} else {
				b = append(b, 1)
			}
		default:
			return nil, fmt.Errorf("ingest: property %q has non-canonical type %T", f.Name, v)
		}
	}
	return b, nil
}

// putUvarint5 writes v as a uvarint padded to exactly 5 bytes (v < 2^35).
func putUvarint5(b []byte, v uint64) {
	for i := 0; i < 4; i++ {
		b[i] = byte(v) | 0x80
		v >>= 7
	}
	b[4] = byte(v)
}

func recordKey(rec []byte) uint64 { return binary.LittleEndian.Uint64(rec) }

// recordID returns the id bytes of rec (a view into rec).
func recordID(rec []byte) []byte {
	n, k := binary.Uvarint(rec[8:])
	if k <= 0 || uint64(len(rec)-8-k) < n {
		return nil
	}
	return rec[8+k : 8+k+int(n)]
}

// decodeRecord turns a record back into a tile feature.
func decodeRecord(rec []byte, schema tiles.FieldSchema) (tiles.Feature, error) {
	var f tiles.Feature
	if len(rec) < 8 {
		return f, errBadRecord
	}
	r := rec[8:]
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(r)
		if k <= 0 || uint64(len(r)-k) < n {
			return nil, false
		}
		out := r[k : k+int(n)]
		r = r[k+int(n):]
		return out, true
	}
	id, ok := next()
	if !ok {
		return f, errBadRecord
	}
	f.ID = string(id)
	w, ok := next()
	if !ok {
		return f, errBadRecord
	}
	g, err := geo.DecodeWKB(w, math.MaxInt)
	if err != nil {
		return f, fmt.Errorf("%w: %v", errBadRecord, err)
	}
	f.Geometry = g
	f.Properties = make(map[string]any, len(schema))
	for _, fd := range schema {
		if len(r) == 0 {
			return f, errBadRecord
		}
		tag := r[0]
		r = r[1:]
		if tag == 0 {
			f.Properties[fd.Name] = nil
			continue
		}
		switch fd.Type {
		case tiles.TypeString:
			s, ok := next()
			if !ok {
				return f, errBadRecord
			}
			f.Properties[fd.Name] = string(s)
		case tiles.TypeInteger:
			v, k := binary.Varint(r)
			if k <= 0 {
				return f, errBadRecord
			}
			r = r[k:]
			f.Properties[fd.Name] = v
		case tiles.TypeNumber:
			if len(r) < 8 {
				return f, errBadRecord
			}
			f.Properties[fd.Name] = math.Float64frombits(binary.LittleEndian.Uint64(r))
			r = r[8:]
		case tiles.TypeBoolean:
			f.Properties[fd.Name] = tag == 2
		default:
			return f, errBadRecord
		}
	}
	if len(r) != 0 {
		return f, errBadRecord
	}
	return f, nil
}

// The spatial key of a feature is the distance along a Hilbert curve of
// order keyOrder (2^31 x 2^31 cells over longitude -180..180 and latitude
// -90..90) of its bounding box's centre. Sorting by key (then id) gives the
// order tiles are cut from; a key's top 2L bits name the level-L quadtree
// square it lies in.
const keyOrder = 31

func spatialKey(b orb.Bound) uint64 {
	return tiles.HilbertIndex(world, b.Center(), keyOrder)
}

var world = orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}

// hilbertD2XY is the inverse of hilbertXY for an n x n grid.
func hilbertD2XY(n uint32, d uint64) (x, y uint32) {
	t := d
	for s := uint32(1); s < n; s *= 2 {
		rx := uint32(1 & (t / 2))
		ry := uint32(1 & (t ^ uint64(rx)))
		if ry == 0 {
			if rx == 1 {
				x = s - 1 - x
				y = s - 1 - y
			}
			x, y = y, x
		}
		x += s * rx
		y += s * ry
		t /= 4
	}
	return x, y
}
