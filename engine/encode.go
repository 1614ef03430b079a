package engine

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/paulmach/orb"
)

// Encoded size of a matched feature, as the service writes it: one line of
// newline-delimited JSON per feature,
//
//	{"layer_id":L,"feature_id":F,"distance_m":D,"properties":{...},"geometry":G}\n
//
// with G the GeoJSON geometry (orb's geojson encoding) or null, written by
// encoding/json with HTML escaping off. The size is computed exactly,
// without encoding: string escapes, number formatting and GeoJSON nesting
// follow encoding/json (the tests compare against it byte for byte).

type sizer struct {
	num []byte     // scratch for number formatting
	pv  propsSizer // tilePropsLen's visitor (no allocation per feature)
}

const (
	recPrefix   = len(`{"layer_id":`)
	recFeature  = len(`,"feature_id":`)
	recDistance = len(`,"distance_m":`)
	recProps    = len(`,"properties":`)
	recGeometry = len(`,"geometry":`)
	recEnd      = len("}\n")
)

// record returns the encoded size of one feature line. g nil means
// "geometry":null.
func (z *sizer) record(layerID, featureID string, dist float64, props map[string]any, g orb.Geometry) int64 {
	return z.recordLen(layerID, featureID, dist, z.mapLen(props), g)
}

// recordLen is record with the properties' encoded length.
func (z *sizer) recordLen(layerID, featureID string, dist float64, propsLen int, g orb.Geometry) int64 {
	n := recPrefix + jsonStringLen(layerID) + recFeature + jsonStringLen(featureID) +
		recDistance + z.floatLen(dist) + recProps + propsLen + recGeometry + recEnd
	if g == nil {
		n += 4
	} else {
		n += z.geometryLen(g)
	}
	return int64(n)
}

// jsonStringLen is the length of s as a JSON string written by
// encoding/json without HTML escaping.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// floatLen is the length of v as encoding/json writes a float64.
func (z *sizer) floatLen(v float64) int {
	abs := math.Abs(v)
	f := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		f = 'e'
	}
	z.num = strconv.AppendFloat(z.num[:0], v, f, -1, 64)
	n := len(z.num)
	if f == 'e' && n >= 4 && z.num[n-4] == 'e' && z.num[n-3] == '-' && z.num[n-2] == '0' {
		n-- // e-09 is written e-9
	}
	return n
}

func (z *sizer) valueLen(v any) int {
	switch v := v.(type) {
	case nil:
		return 4
	case string:
		return jsonStringLen(v)
	case int64:
		z.num = strconv.AppendInt(z.num[:0], v, 10)
		return len(z.num)
	case int:
		z.num = strconv.AppendInt(z.num[:0], int64(v), 10)
		return len(z.num)
	case float64:
		return z.floatLen(v)
	case bool:
		if v {
			return 4
		}
		return 5
	}
	// Not produced by tiles; measured by encoding it.
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// tilePropsLen is mapLen(t.Properties(i)) measured from the tile's columns,
// without building the map or copying strings (a feature's first
// measurement is on the query's path).
func (z *sizer) tilePropsLen(t propVisitor, i int) int {
	z.pv = propsSizer{z: z, n: 2, first: true}
	t.VisitProperties(i, &z.pv)
	return z.pv.n
}

// propsSizer sums what mapLen would for the values it is shown.
type propsSizer struct {
	z     *sizer
	n     int
	first bool
}

func (p *propsSizer) key(name string) {
	if !p.first {
		p.n++
	}
	p.first = false
	p.n += jsonStringLen(name) + 1
}

func (p *propsSizer) Null(name string) { p.key(name); p.n += 4 }

func (p *propsSizer) String(name string, v []byte) {
	p.key(name)
	p.n += jsonStringLen(unsafe.String(unsafe.SliceData(v), len(v))) // not kept
}

func (p *propsSizer) Int(name string, v int64) {
	p.key(name)
	p.z.num = strconv.AppendInt(p.z.num[:0], v, 10)
	p.n += len(p.z.num)
}

func (p *propsSizer) Float(name string, v float64) { p.key(name); p.n += p.z.floatLen(v) }

func (p *propsSizer) Bool(name string, v bool) {
	p.key(name)
	if v {
		p.n += 4
	} else {
		p.n += 5
	}
}

func (z *sizer) mapLen(m map[string]any) int {
	if m == nil {
		return 4
	}
	n := 2
	first := true
	for k, v := range m {
		if !first {
			n++
		}
		first = false
		n += jsonStringLen(k) + 1 + z.valueLen(v)
	}
	return n
}

// geometryLen is the length of g as orb's geojson.NewGeometry(g) encodes.
func (z *sizer) geometryLen(g orb.Geometry) int {
	switch g := g.(type) {
	case orb.Collection:
		// {"type":"GeometryCollection","geometries":[...]}
		n := len(`{"type":"GeometryCollection"}`)
		if len(g) > 0 {
			n += len(`,"geometries":[]`) + len(g) - 1
			for _, h := range g {
				n += z.geometryLen(h)
			}
		}
		return n
	case orb.Ring:
		g2 := orb.Polygon{g}
		return z.geometryLen(g2)
	case orb.Bound:
		return z.geometryLen(g.ToPolygon())
	case nil:
		return 4
	}
	// {"type":"T","coordinates":C}
	return len(`{"type":"","coordinates":}`) + len(g.GeoJSONType()) + z.coordsLen(g)
}

func (z *sizer) pointLen(p orb.Point) int { return 3 + z.floatLen(p[0]) + z.floatLen(p[1]) }

func (z *sizer) pointsLen(ps []orb.Point) int {
	if ps == nil {
		return 4
	}
	n := 2 + max(len(ps)-1, 0)
	for _, p := range ps {
		n += z.pointLen(p)
	}
	return n
}

func (z *sizer) coordsLen(g orb.Geometry) int {
	switch g := g.(type) {
	case orb.Point:
		return z.pointLen(g)
	case orb.MultiPoint:
		return z.pointsLen(g)
	case orb.LineString:
		return z.pointsLen(g)
	case orb.Ring:
		return z.pointsLen(g)
	case orb.MultiLineString:
		if g == nil {
			return 4
		}
		n := 2 + max(len(g)-1, 0)
		for _, l := range g {
			n += z.pointsLen(l)
		}
		return n
	case orb.Polygon:
		if g == nil {
			return 4
		}
		n := 2 + max(len(g)-1, 0)
		for _, r := range g {
			n += z.pointsLen(r)
		}
		return n
	case orb.MultiPolygon:
		if g == nil {
			return 4
		}
		n := 2 + max(len(g)-1, 0)
		for _, p := range g {
			n += z.coordsLen(p)
		}
		return n
	}
	return 4
}
