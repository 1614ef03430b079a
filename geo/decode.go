package geo

import (
	"errors"
	"math"
	"strconv"

	"github.com/paulmach/orb"

	"siteenv/internal/jsonscan"
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
	s := jsonscan.Scanner{B: raw}
	g, err := ReadGeometry(&s, ReadOptions{MaxVertices: maxVertices})
	if err != nil {
		return nil, err
	}
	if err := Validate(g, maxVertices); err != nil {
		return nil, err
	}
	return g, nil
}

// ReadOptions says how ReadGeometry reads.
type ReadOptions struct {
	// MaxVertices caps the positions read (<= 0: no cap): the read stops
	// as soon as one more is seen, having built at most MaxVertices.
	MaxVertices int
	// Source reads a source row's geometry (ingest) rather than a client's
	// site geometry (the API, DecodeGeometry). A source geometry is read in
	// place inside its feature and the scanner is left after it; null
	// yields (nil, nil); members other than type and coordinates (bbox, a
	// legacy crs, foreign members) are skipped unchecked, a repeated
	// member replaces the earlier one, ordinates past the second are
	// dropped, and numbers are not range-checked (they may be MGA metres).
	// Errors are *ValidationError, or the scanner's *jsonscan.SyntaxError
	// for broken JSON, worded as ingest's reject reports word them.
	//
	// A site geometry (Source false) is the whole input (anything after
	// the object is refused), has only the members type, coordinates and
	// bbox (checked), each once, and positions of 2 or 3 finite numbers;
	// every error is a *ValidationError, broken JSON included.
	Source bool
}

// ReadGeometry reads the GeoJSON geometry object at s's offset into an orb
// geometry of one of the six GeoJSON types, counting positions as it goes
// (see ReadOptions). It checks the nesting of coordinates for the type and
// the shape of positions, not the geometry itself: see Validate. Never
// panics on malformed input.
func ReadGeometry(s *jsonscan.Scanner, opt ReadOptions) (orb.Geometry, error) {
	r := reader{s: s, max: opt.MaxVertices, source: opt.Source}
	g, err := r.geometry()
	if err != nil {
		if !opt.Source {
			return nil, siteError(err)
		}
		return nil, err
	}
	return g, nil
}

// siteError words a scanner error as a site geometry's *ValidationError.
func siteError(err error) *ValidationError {
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		if se.Found < 0 {
			return invalid("", "invalid JSON: unexpected end of input, expected %s", se.Expected)
		}
		return invalid("", "invalid JSON at byte %d: expected %s", se.Offset, se.Expected)
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	return invalid("", "%v", err)
}

// geometryDepth is the nesting depth of coordinates for each type (a
// position is depth 0).
var geometryDepth = map[string]int{
	"Point": 0, "MultiPoint": 1, "LineString": 1,
	"MultiLineString": 2, "Polygon": 2, "MultiPolygon": 3,
}

type reader struct {
	s      *jsonscan.Scanner
	max    int
	source bool
	count  int   // positions parsed so far
	path   []int // array indices of the position being parsed, for errors
}

func isNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

func (r *reader) geometry() (orb.Geometry, error) {
	s := r.s
	switch c := s.Peek(); {
	case c == '{':
		s.I++
	case r.source && c == 'n':
		if err := s.Literal("null"); err != nil {
			return nil, err
		}
		return nil, nil
	case r.source:
		return nil, invalid("", "geometry must be a JSON object or null")
	case c == 0:
		return nil, invalid("", "geometry is missing")
	default:
		return nil, invalid("", "a geometry must be a JSON object")
	}
	var (
		typ                  string
		haveType, haveCoords bool
		haveBBox             bool
		coordsAt             = -1 // start of coordinates seen before type
		geom                 orb.Geometry
	)
	if s.Peek() == '}' {
		s.I++
	} else {
		for {
			key, err := s.KeyRaw()
			if err != nil {
				return nil, err
			}
			switch string(key) {
			case "type":
				if haveType && !r.source {
					return nil, invalid("type", "duplicate member")
				}
				haveType = true
				if s.Peek() != '"' {
					return nil, invalid("type", "must be a string")
				}
				if typ, err = s.Str(); err != nil {
					return nil, err
				}
				if _, ok := geometryDepth[typ]; !ok {
					shown := truncate(typ, 64)
					if r.source {
						if len(shown) < len(typ) {
							shown += "..."
						}
						return nil, invalid("type", "geometry type %s is not supported; use %s", strconv.Quote(shown), allowedTypes)
					}
					return nil, invalid("type", "type %s is not allowed; use %s", strconv.Quote(shown), allowedTypes)
				}
				if coordsAt >= 0 {
					save := s.I
					s.I = coordsAt
					if geom, err = r.coordinates(typ); err != nil {
						return nil, err
					}
					s.I = save
				}
			case "coordinates":
				if haveCoords && !r.source {
					return nil, invalid("coordinates", "duplicate member")
				}
				haveCoords = true
				if haveType {
					if geom, err = r.coordinates(typ); err != nil {
						return nil, err
					}
				} else {
					coordsAt = s.I
					if err := r.skipCoordinates(); err != nil {
						return nil, err
					}
				}
			case "bbox":
				if r.source {
					if err := s.Skip(0); err != nil {
						return nil, err
					}
					break
				}
				if haveBBox {
					return nil, invalid("bbox", "duplicate member")
				}
				haveBBox = true
				if err := r.bbox(); err != nil {
					return nil, err
				}
			default:
				if !r.source {
					return nil, invalid(truncate(string(key), 64), "unknown member; a geometry has only type, coordinates and bbox")
				}
				if err := s.Skip(0); err != nil {
					return nil, err
				}
			}
			if s.Consume(',') {
				continue
			}
			if s.Consume('}') {
				break
			}
			return nil, s.Syntax("',' or '}'")
		}
	}
	if !r.source && !s.AtEnd() {
		return nil, s.Syntax("the end of input after the geometry object")
	}
	switch {
	case !haveType:
		return nil, invalid("type", "member is missing")
	case !haveCoords:
		return nil, invalid("coordinates", "member is missing")
	}
	return geom, nil
}

// truncate cuts s to at most n bytes, for messages.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// skipCoordinates passes over coordinates met before the type: they are
// read once the type is known. A site geometry's arrays nest at most
// skipDepth deep and its positions are counted now, so that a huge input
// is refused without scanning it all.
func (r *reader) skipCoordinates() error {
	s := r.s
	if r.source {
		return s.Skip(0)
	}
	const skipDepth = 8
	depth := 0
	for {
		switch c := s.Peek(); {
		case c == '[':
			depth++
			if depth > skipDepth {
				return invalid("coordinates", "nested too deeply")
			}
			s.I++
			switch c := s.Peek(); {
			case c == ']':
				s.I++
			case isNumberStart(c):
				// An array of numbers: a position.
				r.count++
				if r.max > 0 && r.count > r.max {
					return r.tooManyPositions()
				}
				continue
			default:
				continue
			}
		case c == '"':
			if _, err := s.Str(); err != nil {
				return err
			}
		case isNumberStart(c):
			if _, err := r.number(); err != nil {
				return err
			}
		case c == 't' || c == 'f' || c == 'n' || c == '{':
			// Not valid anywhere in coordinates.
			return invalid("coordinates", "must be an array of numbers")
		default:
			return s.Syntax("a value")
		}
		// After a complete value: close arrays or continue with ','.
		for {
			if depth == 0 {
				return nil
			}
			if s.Consume(',') {
				break
			}
			if s.Consume(']') {
				depth--
				continue
			}
			return s.Syntax("',' or ']'")
		}
	}
}

// bbox checks a site geometry's bbox: 4 or 6 finite numbers.
func (r *reader) bbox() error {
	s := r.s
	if !s.Consume('[') {
		return invalid("bbox", "must be an array of 4 or 6 numbers")
	}
	n := 0
	if !s.Consume(']') {
		for {
			if !isNumberStart(s.Peek()) {
				return invalid("bbox", "must be an array of 4 or 6 numbers")
			}
			if _, err := r.number(); err != nil {
				return invalid("bbox", "%s", siteError(err).Reason)
			}
			n++
			if s.Consume(',') {
				continue
			}
			if s.Consume(']') {
				break
			}
			return s.Syntax("',' or ']'")
		}
	}
	if n != 4 && n != 6 {
		return invalid("bbox", "must be an array of 4 or 6 numbers")
	}
	return nil
}

// number parses a JSON number; in a site geometry one that overflows
// float64 is refused, in a source geometry it is ±Inf (see position).
func (r *reader) number() (float64, error) {
	raw, err := r.s.NumberBytes()
	if err != nil {
		return 0, err
	}
	v := jsonscan.ParseNumber(raw)
	if !r.source && math.IsInf(v, 0) {
		return 0, invalid("", "number %s is out of range", truncate(string(raw), 32))
	}
	return v, nil
}

// coordinates parses the coordinates member for a geometry of type typ.
func (r *reader) coordinates(typ string) (orb.Geometry, error) {
	r.path = r.path[:0]
	r.count = 0 // counted again, exactly, if skipCoordinates counted before
	switch typ {
	case "Point":
		p, err := r.position()
		return p, err
	case "MultiPoint":
		ps, err := r.positions()
		return orb.MultiPoint(ps), err
	case "LineString":
		ps, err := r.positions()
		return orb.LineString(ps), err
	case "MultiLineString":
		var out orb.MultiLineString
		err := r.array("an array of LineString coordinates", func() error {
			ps, err := r.positions()
			out = append(out, orb.LineString(ps))
			return err
		})
		return out, err
	case "Polygon":
		p, err := r.polygon()
		return p, err
	case "MultiPolygon":
		var out orb.MultiPolygon
		err := r.array("an array of Polygon coordinates", func() error {
			p, err := r.polygon()
			out = append(out, p)
			return err
		})
		return out, err
	}
	return nil, invalid("type", "unknown type")
}

func (r *reader) here() string { return coordPath(r.path...) }

// array parses a JSON array whose elements are parsed by elem, keeping
// r.path up to date.
func (r *reader) array(what string, elem func() error) error {
	s := r.s
	if s.Peek() != '[' {
		return r.wrongValue(what)
	}
	s.I++
	if s.Consume(']') {
		return nil
	}
	r.path = append(r.path, 0)
	for {
		if err := elem(); err != nil {
			return err
		}
		if s.Consume(',') {
			r.path[len(r.path)-1]++
			continue
		}
		if s.Consume(']') {
			r.path = r.path[:len(r.path)-1]
			return nil
		}
		return s.Syntax("',' or ']'")
	}
}

// wrongValue reports a value of the wrong kind at the current path.
func (r *reader) wrongValue(what string) error {
	switch c := r.s.Peek(); {
	case c == 0:
		return r.s.Syntax(what)
	case c == '[' || isNumberStart(c):
		return invalid(r.here(), "expected %s (wrong nesting)", what)
	case r.source || c == '"' || c == 't' || c == 'f' || c == 'n' || c == '{':
		return invalid(r.here(), "expected %s", what)
	}
	return r.s.Syntax(what)
}

func (r *reader) polygon() (orb.Polygon, error) {
	var out orb.Polygon
	err := r.array("an array of rings", func() error {
		ps, err := r.positions()
		out = append(out, orb.Ring(ps))
		return err
	})
	return out, err
}

func (r *reader) positions() ([]orb.Point, error) {
	var out []orb.Point
	err := r.array("an array of positions", func() error {
		p, err := r.position()
		out = append(out, p)
		return err
	})
	return out, err
}

// position parses [lon, lat] or [lon, lat, alt] (a source position: [x,
// y, ...]) and counts it.
func (r *reader) position() (orb.Point, error) {
	var p orb.Point
	s := r.s
	if s.Peek() != '[' {
		if r.source {
			return p, r.wrongValue("a position [x, y]")
		}
		return p, r.wrongValue("a position [longitude, latitude]")
	}
	r.count++
	if r.max > 0 && r.count > r.max {
		return p, r.tooManyPositions()
	}
	s.I++
	n := 0
	if !s.Consume(']') {
		for {
			c := s.Peek()
			if !isNumberStart(c) {
				switch {
				case c == '[':
					return p, invalid(r.here(), "expected a number (wrong nesting)")
				case c == 0 || (!r.source && (c == ',' || c == ']')):
					return p, s.Syntax("a number")
				case r.source && (c == 'N' || c == 'I'):
					return p, invalid(r.here(), "NaN and Infinity are not valid JSON numbers")
				}
				return p, invalid(r.here(), "expected a number")
			}
			v, err := r.number()
			switch {
			case err != nil && r.source:
				return p, err
			case err != nil:
				ve := siteError(err)
				if ve.Path == "" {
					ve.Path = r.here()
				}
				return p, ve
			case math.IsInf(v, 0): // a source position
				return p, invalid(r.here(), "number is out of range")
			}
			if n < 2 {
				p[n] = v
			}
			n++
			if n > 3 && !r.source {
				return p, invalid(r.here(), "a position has at most 3 numbers (longitude, latitude, altitude)")
			}
			if s.Consume(',') {
				continue
			}
			if s.Consume(']') {
				break
			}
			return p, s.Syntax("',' or ']'")
		}
	}
	if n < 2 {
		if r.source {
			return p, invalid(r.here(), "a position needs two coordinates")
		}
		return p, invalid(r.here(), "a position needs longitude and latitude")
	}
	return p, nil
}

func (r *reader) tooManyPositions() *ValidationError {
	e := invalid("coordinates", "geometry has more than %d positions", r.max)
	if r.source {
		e.Reason += " (the vertex cap)"
	}
	e.tooMany = true
	return e
}
