package geo

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/paulmach/orb"
)

// DecodeGeometry parses a GeoJSON geometry object (RFC 8259 JSON, RFC 7946
// geometry) strictly, then checks it with Validate, and returns it as an
// orb geometry. Every failure is a *ValidationError (errors.Is(err,
// ErrInvalidGeometry)) whose Path names the member or position at fault.
//
// Strictness: the object has exactly the members "type" and
// "coordinates", and optionally "bbox" (an array of 4 or 6 finite numbers,
// checked and then ignored); any other member, a duplicate member, or
// anything after the object is refused. type is one of Point, MultiPoint,
// LineString, MultiLineString, Polygon, MultiPolygon (case-sensitive).
// coordinates must have exactly the nesting of its type; a position is an
// array of 2 or 3 JSON numbers (longitude, latitude, and an optional
// altitude that is dropped). NaN, Infinity, numbers that overflow float64,
// strings and nulls in place of numbers are refused.
//
// Positions are counted while parsing: input with more than maxVertices
// positions (maxVertices <= 0: no limit) is refused as soon as the limit
// is passed, having built at most maxVertices positions, whatever the size
// of raw. Deep nesting is refused at depth 4 of coordinates, so recursion
// is bounded. Safe for concurrent use; raw is only read.
func DecodeGeometry(raw []byte, maxVertices int) (orb.Geometry, error) {
	d := decoder{data: raw, max: maxVertices}
	g, err := d.geometry()
	if err != nil {
		return nil, err
	}
	if err := Validate(g, maxVertices); err != nil {
		return nil, err
	}
	return g, nil
}

// geometryDepth is the nesting depth of coordinates for each type (a
// position is depth 0).
var geometryDepth = map[string]int{
	"Point": 0, "MultiPoint": 1, "LineString": 1,
	"MultiLineString": 2, "Polygon": 2, "MultiPolygon": 3,
}

type decoder struct {
	data  []byte
	pos   int
	max   int
	count int   // positions parsed so far
	path  []int // array indices of the position being parsed, for errors
}

func (d *decoder) syntax(what string) *ValidationError {
	if d.pos >= len(d.data) {
		return invalid("", "invalid JSON: unexpected end of input, expected %s", what)
	}
	return invalid("", "invalid JSON at byte %d: expected %s", d.pos, what)
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte, or 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

func (d *decoder) expect(c byte) bool {
	if d.peek() != c {
		return false
	}
	d.pos++
	return true
}

func (d *decoder) geometry() (orb.Geometry, *ValidationError) {
	if !d.expect('{') {
		if d.peek() == 0 {
			return nil, invalid("", "geometry is missing")
		}
		return nil, invalid("", "a geometry must be a JSON object")
	}
	var (
		typ                  string
		haveType, haveCoords bool
		haveBBox             bool
		coordsAt             = -1 // start of coordinates seen before type
		geom                 orb.Geometry
	)
	if d.peek() != '}' {
		for {
			if d.peek() != '"' {
				return nil, d.syntax("a member name")
			}
			key, err := d.str()
			if err != nil {
				return nil, err
			}
			if !d.expect(':') {
				return nil, d.syntax("':'")
			}
			switch key {
			case "type":
				if haveType {
					return nil, invalid("type", "duplicate member")
				}
				haveType = true
				if d.peek() != '"' {
					return nil, invalid("type", "must be a string")
				}
				if typ, err = d.str(); err != nil {
					return nil, err
				}
				if _, ok := geometryDepth[typ]; !ok {
					return nil, invalid("type", "type %s is not allowed; use %s", strconv.Quote(truncate(typ, 64)), allowedTypes)
				}
				if coordsAt >= 0 {
					save := d.pos
					d.pos = coordsAt
					if geom, err = d.coordinates(typ); err != nil {
						return nil, err
					}
					d.pos = save
				}
			case "coordinates":
				if haveCoords {
					return nil, invalid("coordinates", "duplicate member")
				}
				haveCoords = true
				if haveType {
					if geom, err = d.coordinates(typ); err != nil {
						return nil, err
					}
				} else {
					coordsAt = d.pos
					if err := d.skip(); err != nil {
						return nil, err
					}
				}
			case "bbox":
				if haveBBox {
					return nil, invalid("bbox", "duplicate member")
				}
				haveBBox = true
				if err := d.bbox(); err != nil {
					return nil, err
				}
			default:
				return nil, invalid(truncate(key, 64), "unknown member; a geometry has only type, coordinates and bbox")
			}
			if d.expect(',') {
				continue
			}
			if d.expect('}') {
				break
			}
			return nil, d.syntax("',' or '}'")
		}
	} else {
		d.pos++
	}
	if d.peek() != 0 {
		return nil, d.syntax("the end of input after the geometry object")
	}
	switch {
	case !haveType:
		return nil, invalid("type", "member is missing")
	case !haveCoords:
		return nil, invalid("coordinates", "member is missing")
	}
	return geom, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// str parses a JSON string at d.pos.
func (d *decoder) str() (string, *ValidationError) {
	start := d.pos
	d.pos++ // opening quote
	escaped := false
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			raw := d.data[start:d.pos]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				d.pos = start
				return "", d.syntax("a valid string")
			}
			return s, nil
		case c == '\\':
			escaped = true
			d.pos += 2
		case c < 0x20:
			return "", d.syntax("no control characters in a string")
		default:
			d.pos++
		}
	}
	return "", d.syntax("'\"'")
}

// skip passes over one JSON value without building it; coordinates are
// parsed later once the type is known. Arrays nest at most skipDepth deep.
func (d *decoder) skip() *ValidationError {
	const skipDepth = 8
	depth := 0
	for {
		switch c := d.peek(); {
		case c == '[':
			depth++
			if depth > skipDepth {
				return invalid("coordinates", "nested too deeply")
			}
			d.pos++
			switch c := d.peek(); {
			case c == ']':
				d.pos++
			case c == '-' || (c >= '0' && c <= '9'):
				// An array of numbers: a position. Count it now so that a
				// huge input is refused without scanning it all.
				d.count++
				if d.max > 0 && d.count > d.max {
					return tooManyPositions(d.max)
				}
				continue
			default:
				continue
			}
		case c == '"':
			if _, err := d.str(); err != nil {
				return err
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if _, err := d.number(); err != nil {
				return err
			}
		case c == 't' || c == 'f' || c == 'n' || c == '{':
			// Not valid anywhere in coordinates: report it where it is
			// once the type is known, or now.
			return invalid("coordinates", "must be an array of numbers")
		default:
			return d.syntax("a value")
		}
		// After a complete value: close arrays or continue with ','.
		for {
			if depth == 0 {
				return nil
			}
			if d.expect(',') {
				break
			}
			if d.expect(']') {
				depth--
				continue
			}
			return d.syntax("',' or ']'")
		}
	}
}

func (d *decoder) bbox() *ValidationError {
	if !d.expect('[') {
		return invalid("bbox", "must be an array of 4 or 6 numbers")
	}
	n := 0
	if !d.expect(']') {
		for {
			if c := d.peek(); c != '-' && (c < '0' || c > '9') {
				return invalid("bbox", "must be an array of 4 or 6 numbers")
			}
			if _, err := d.number(); err != nil {
				return invalid("bbox", "%s", err.Reason)
			}
			n++
			if d.expect(',') {
				continue
			}
			if d.expect(']') {
				break
			}
			return d.syntax("',' or ']'")
		}
	}
	if n != 4 && n != 6 {
		return invalid("bbox", "must be an array of 4 or 6 numbers")
	}
	return nil
}

// number parses a JSON number at d.pos (RFC 8259 grammar) into a finite
// float64.
func (d *decoder) number() (float64, *ValidationError) {
	start := d.pos
	data := d.data
	i := d.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		digits()
	default:
		d.pos = i
		return 0, d.syntax("a number")
	}
	if i < len(data) && data[i] == '.' {
		i++
		if digits() == 0 {
			d.pos = i
			return 0, d.syntax("a digit after '.'")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if digits() == 0 {
			d.pos = i
			return 0, d.syntax("a digit in the exponent")
		}
	}
	d.pos = i
	if v, ok := fastFloat(data[start:i]); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(data[start:i]), 64)
	if err != nil && (math.IsInf(v, 0) || math.IsNaN(v)) {
		return 0, invalid("", "number %s is out of range", truncate(string(data[start:i]), 32))
	}
	return v, nil
}

// coordinates parses the coordinates member for a geometry of type typ.
func (d *decoder) coordinates(typ string) (orb.Geometry, *ValidationError) {
	d.path = d.path[:0]
	d.count = 0 // counted again, exactly, if skip counted before
	switch typ {
	case "Point":
		p, err := d.position()
		return p, err
	case "MultiPoint":
		ps, err := d.positions()
		return orb.MultiPoint(ps), err
	case "LineString":
		ps, err := d.positions()
		return orb.LineString(ps), err
	case "MultiLineString":
		var out orb.MultiLineString
		err := d.array("an array of LineString coordinates", func() *ValidationError {
			ps, err := d.positions()
			out = append(out, orb.LineString(ps))
			return err
		})
		return out, err
	case "Polygon":
		p, err := d.polygon()
		return p, err
	case "MultiPolygon":
		var out orb.MultiPolygon
		err := d.array("an array of Polygon coordinates", func() *ValidationError {
			p, err := d.polygon()
			out = append(out, p)
			return err
		})
		return out, err
	}
	return nil, invalid("type", "unknown type")
}

func (d *decoder) here() string { return coordPath(d.path...) }

// array parses a JSON array whose elements are parsed by elem, keeping
// d.path up to date.
func (d *decoder) array(what string, elem func() *ValidationError) *ValidationError {
	if d.peek() != '[' {
		return d.wrongValue(what)
	}
	d.pos++
	if d.expect(']') {
		return nil
	}
	d.path = append(d.path, 0)
	for {
		if err := elem(); err != nil {
			return err
		}
		if d.expect(',') {
			d.path[len(d.path)-1]++
			continue
		}
		if d.expect(']') {
			d.path = d.path[:len(d.path)-1]
			return nil
		}
		return d.syntax("',' or ']'")
	}
}

// wrongValue reports a value of the wrong kind at the current path.
func (d *decoder) wrongValue(what string) *ValidationError {
	switch c := d.peek(); {
	case c == 0:
		return d.syntax(what)
	case c == '[' || c == '-' || (c >= '0' && c <= '9'):
		return invalid(d.here(), "expected %s (wrong nesting)", what)
	case c == '"' || c == 't' || c == 'f' || c == 'n' || c == '{':
		return invalid(d.here(), "expected %s", what)
	}
	return d.syntax(what)
}

func (d *decoder) polygon() (orb.Polygon, *ValidationError) {
	var out orb.Polygon
	err := d.array("an array of rings", func() *ValidationError {
		ps, err := d.positions()
		out = append(out, orb.Ring(ps))
		return err
	})
	return out, err
}

func (d *decoder) positions() ([]orb.Point, *ValidationError) {
	var out []orb.Point
	err := d.array("an array of positions", func() *ValidationError {
		p, err := d.position()
		out = append(out, p)
		return err
	})
	return out, err
}

// position parses [lon, lat] or [lon, lat, alt] and counts it.
func (d *decoder) position() (orb.Point, *ValidationError) {
	var p orb.Point
	if d.peek() != '[' {
		return p, d.wrongValue("a position [longitude, latitude]")
	}
	d.count++
	if d.max > 0 && d.count > d.max {
		return p, tooManyPositions(d.max)
	}
	d.pos++
	n := 0
	if !d.expect(']') {
		for {
			c := d.peek()
			if c != '-' && (c < '0' || c > '9') {
				if c == '[' {
					return p, invalid(d.here(), "expected a number (wrong nesting)")
				}
				if c == 0 || c == ',' || c == ']' {
					return p, d.syntax("a number")
				}
				return p, invalid(d.here(), "expected a number")
			}
			v, err := d.number()
			if err != nil {
				if err.Path == "" && err.Reason != "" && d.pos > 0 {
					err.Path = d.here()
				}
				return p, err
			}
			if n < 2 {
				p[n] = v
			}
			n++
			if n > 3 {
				return p, invalid(d.here(), "a position has at most 3 numbers (longitude, latitude, altitude)")
			}
			if d.expect(',') {
				continue
			}
			if d.expect(']') {
				break
			}
			return p, d.syntax("',' or ']'")
		}
	}
	if n < 2 {
		return p, invalid(d.here(), "a position needs longitude and latitude")
	}
	return p, nil
}

func tooManyPositions(max int) *ValidationError {
	e := invalid("coordinates", "geometry has more than %d positions", max)
	e.tooMany = true
	return e
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat converts a JSON number already checked against the grammar
// without allocating, when Clinger's fast path applies: at most 15
// significant digits and a decimal exponent within ±22, so that the result
// is one correctly rounded multiplication or division of two exactly
// represented values. ok is false otherwise (use strconv.ParseFloat).
func fastFloat(b []byte) (v float64, ok bool) {
	i, neg := 0, false
	if b[0] == '-' {
		neg, i = true, 1
	}
	var mant uint64
	sig, exp10 := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if mant != 0 || b[i] != '0' {
			mant = mant*10 + uint64(b[i]-'0')
			sig++
		}
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if mant != 0 || b[i] != '0' {
				mant = mant*10 + uint64(b[i]-'0')
				sig++
			}
			exp10--
		}
	}
	if sig > 15 {
		return 0, false
	}
	if i < len(b) { // exponent
		i++
		eneg := false
		if b[i] == '+' || b[i] == '-' {
			eneg = b[i] == '-'
			i++
		}
		e := 0
		for ; i < len(b); i++ {
			e = e*10 + int(b[i]-'0')
			if e > 1000 {
				return 0, false
			}
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	v = float64(mant)
	switch {
	case mant == 0:
	case exp10 < 0 && exp10 >= -22:
		v /= pow10[-exp10]
	case exp10 >= 0 && exp10 <= 22:
		v *= pow10[exp10]
	default:
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
