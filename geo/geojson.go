package geo

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
)

// AppendGeoJSON appends g as json.Marshal(geojson.NewGeometry(g)) writes
// it, byte for byte, and returns the extended buffer: a site's stored
// geometry, which fingerprints and replays compare as bytes. It writes the
// six site geometry types itself, several times faster than encoding/json's
// reflection (a 10,000-position polygon in about a fifth of the time); any
// other value (nil, orb.Ring, orb.Bound, orb.Collection), and a geometry
// with a non-finite coordinate, goes through json.Marshal, whose error
// (*json.UnsupportedValueError for NaN or ±Inf) it returns with dst
// unchanged. Safe for concurrent use.
func AppendGeoJSON(dst []byte, g orb.Geometry) ([]byte, error) {
	n := len(dst)
	var ok bool
	switch g := g.(type) {
	case orb.Point:
		dst = append(dst, `{"type":"Point","coordinates":`...)
		dst, ok = appendJSONPosition(dst, g)
	case orb.MultiPoint:
		dst = append(dst, `{"type":"MultiPoint","coordinates":`...)
		dst, ok = appendJSONArray(dst, g, appendJSONPosition)
	case orb.LineString:
		dst = append(dst, `{"type":"LineString","coordinates":`...)
		dst, ok = appendJSONArray(dst, g, appendJSONPosition)
	case orb.MultiLineString:
		dst = append(dst, `{"type":"MultiLineString","coordinates":`...)
		dst, ok = appendJSONArray(dst, g, appendJSONLine)
	case orb.Polygon:
		dst = append(dst, `{"type":"Polygon","coordinates":`...)
		dst, ok = appendJSONArray(dst, g, appendJSONRing)
	case orb.MultiPolygon:
		dst = append(dst, `{"type":"MultiPolygon","coordinates":`...)
		dst, ok = appendJSONArray(dst, g, appendJSONRings)
	}
	if ok {
		return append(dst, '}'), nil
	}
	raw, err := json.Marshal(geojson.NewGeometry(g))
	if err != nil {
		return dst[:n], err
	}
	return append(dst[:n], raw...), nil
}

// appendJSONArray appends s as encoding/json writes a slice (null when
// nil), each element by elem; ok is false when an element's is.
func appendJSONArray[S ~[]E, E any](dst []byte, s S, elem func([]byte, E) ([]byte, bool)) ([]byte, bool) {
	if s == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i, e := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = elem(dst, e); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

func appendJSONLine(dst []byte, l orb.LineString) ([]byte, bool) {
	return appendJSONArray(dst, l, appendJSONPosition)
}

func appendJSONRing(dst []byte, r orb.Ring) ([]byte, bool) {
	return appendJSONArray(dst, r, appendJSONPosition)
}

func appendJSONRings(dst []byte, p orb.Polygon) ([]byte, bool) {
	return appendJSONArray(dst, p, appendJSONRing)
}

func appendJSONPosition(dst []byte, p orb.Point) ([]byte, bool) {
	dst = append(dst, '[')
	dst, ok := appendJSONFloat(dst, p[0])
	if !ok {
		return dst, false
	}
	dst = append(dst, ',')
	if dst, ok = appendJSONFloat(dst, p[1]); !ok {
		return dst, false
	}
	return append(dst, ']'), true
}

// appendJSONFloat appends v as encoding/json writes a float64 (its
// floatEncoder): the shortest decimal that parses back to v, in 'f' form
// for 1e-6 <= |v| < 1e21 and 0, else in 'e' form with a one-digit negative
// exponent unpadded (1e-7, not 1e-07). ok is false for NaN and ±Inf, which
// encoding/json refuses.
//
// A value on the canonical grid (k/1e8 for an integer k, as every
// coordinate of a canonical geometry is) with |v| in [1e-6, 1e7) is
// written from k, without strconv's shortest-digit search: k/1e8 has at
// most 15 significant digits, and two different decimals of 15 or fewer
// significant digits never round to the same float64 (DBL_DIG is 15), so
// it is the shortest decimal that parses back to v, and the one
// strconv.AppendFloat(v, 'f', -1, 64) writes.
func appendJSONFloat(dst []byte, v float64) ([]byte, bool) {
	a := math.Abs(v)
	if a >= 1e-6 && a < 1e7 {
		if k := math.Round(a * canonicalScale); k/canonicalScale == a {
			if v < 0 {
				dst = append(dst, '-')
			}
			return appendGridDecimal(dst, uint64(k)), true
		}
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return dst, false
	}
	f := byte('f')
	if a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	dst = strconv.AppendFloat(dst, v, f, -1, 64)
	if f == 'e' {
		// e-09 -> e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// appendGridDecimal appends k/1e8 in decimal, without trailing zeros after the
// point, and without the point when k is a multiple of 1e8.
func appendGridDecimal(dst []byte, k uint64) []byte {
	dst = strconv.AppendUint(dst, k/canonicalScale, 10)
	frac := k % canonicalScale
	if frac == 0 {
		return dst
	}
	var digits [CanonicalDecimals]byte
	for i := CanonicalDecimals - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := CanonicalDecimals
	for digits[end-1] == '0' {
		end--
	}
	dst = append(dst, '.')
	return append(dst, digits[:end]...)
}
