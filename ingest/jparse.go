package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unsafe"
)

// jparser parses one JSON value held in memory (a feature captured by the
// stream scanner, or a line of newline-delimited GeoJSON). It checks the
// syntax it walks and never panics on malformed input.
type jparser struct {
	b      []byte
	i      int
	intern map[string]string // optional: property names seen before
}

// maxNesting bounds recursion in skip.
const maxNesting = 128

type jsonSyntaxError struct {
	Offset int // within the value
	Msg    string
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d of the feature: %s", e.Offset, e.Msg)
}

func (p *jparser) syntax(what string) error {
	if p.i >= len(p.b) {
		return &jsonSyntaxError{p.i, "unexpected end of input, expected " + what}
	}
	return &jsonSyntaxError{p.i, "expected " + what + ", found " + quoteByte(p.b[p.i])}
}

func quoteByte(c byte) string {
	if c == '\n' {
		return "the end of the line"
	}
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *jparser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte, 0 at the end.
func (p *jparser) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

func (p *jparser) consume(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *jparser) literal(lit string) error {
	p.ws()
	if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return nil
	}
	return p.syntax(strconv.Quote(lit))
}

// rawString scans the string at p.i (which must be '"') and returns its
// contents without the quotes, and whether it holds escapes.
func (p *jparser) rawString() ([]byte, bool, error) {
	if p.peek() != '"' {
		return nil, false, p.syntax("a string")
	}
	start := p.i
	p.i++
	escaped := false
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start+1 : p.i-1], escaped, nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return nil, false, &jsonSyntaxError{p.i, "control character in a string"}
		default:
			p.i++
		}
	}
	p.i = len(p.b)
	return nil, false, p.syntax("'\"'")
}

// str parses a JSON string.
func (p *jparser) str() (string, error) {
	start := p.i
	raw, escaped, err := p.rawString()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw), nil
	}
	var s string
	if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
		return "", &jsonSyntaxError{start, "invalid string escape"}
	}
	return s, nil
}

// key parses a member name and the ':' after it.
func (p *jparser) key() (string, error) {
	k, err := p.keyRaw()
	return string(k), err
}

// keyRaw parses a member name and the ':' after it, and returns the name:
// a view into the input unless it holds escapes.
func (p *jparser) keyRaw() ([]byte, error) {
	if p.peek() != '"' {
		return nil, p.syntax("a member name")
	}
	start := p.i
	k, escaped, err := p.rawString()
	if err != nil {
		return nil, err
	}
	if escaped {
		var s string
		if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
			return nil, &jsonSyntaxError{start, "invalid string escape"}
		}
		k = []byte(s)
	}
	if !p.consume(':') {
		return nil, p.syntax("':'")
	}
	return k, nil
}

// internString returns b as a string, shared with earlier equal strings
// (property names repeat in every feature).
func (p *jparser) internString(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if p.intern != nil && len(p.intern) < maxInterned {
		p.intern[s] = s
	}
	return s
}

const maxInterned = 4096

// numberBytes scans a JSON number (RFC 8259 grammar) and returns its text.
func (p *jparser) numberBytes() ([]byte, error) {
	p.ws()
	start := p.i
	b := p.b
	i := p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		digits()
	case i < len(b) && (b[i] == 'I' || b[i] == 'N'):
		p.i = i
		return nil, &jsonSyntaxError{i, "NaN and Infinity are not valid JSON numbers"}
	default:
		p.i = i
		return nil, p.syntax("a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			p.i = i
			return nil, p.syntax("a digit after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.i = i
			return nil, p.syntax("a digit in the exponent")
		}
	}
	p.i = i
	return b[start:i], nil
}

// number parses a JSON number; a number too large for float64 gives ±Inf.
func (p *jparser) number() (float64, error) {
	raw, err := p.numberBytes()
	if err != nil {
		return 0, err
	}
	// The text is only read during the call.
	v, _ := strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64)
	return v, nil
}

// skip passes over one value, checking its syntax.
func (p *jparser) skip(depth int) error {
	if depth > maxNesting {
		return &jsonSyntaxError{p.i, "nested too deeply"}
	}
	switch c := p.peek(); {
	case c == '{':
		p.i++
		if p.consume('}') {
			return nil
		}
		for {
			if _, err := p.key(); err != nil {
				return err
			}
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			if p.consume(',') {
				continue
			}
			if p.consume('}') {
				return nil
			}
			return p.syntax("',' or '}'")
		}
	case c == '[':
		p.i++
		if p.consume(']') {
			return nil
		}
		for {
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			if p.consume(',') {
				continue
			}
			if p.consume(']') {
				return nil
			}
			return p.syntax("',' or ']'")
		}
	case c == '"':
		_, _, err := p.rawString()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	default:
		_, err := p.numberBytes()
		return err
	}
}

// scalar parses any value into a Go value for FieldSchema.Normalize:
// strings, int64 or float64 (see numberValue), bools and nil; objects and arrays are decoded with
// encoding/json (the schema then refuses them).
func (p *jparser) scalar() (any, error) {
	switch c := p.peek(); {
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '{' || c == '[':
		start := p.i
		if err := p.skip(0); err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(p.b[start:p.i]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, &jsonSyntaxError{start, err.Error()}
		}
		return v, nil
	default:
		raw, err := p.numberBytes()
		if err != nil {
			return nil, err
		}
		return numberValue(raw), nil
	}
}

// numberValue converts a JSON number: an integer literal that fits int64
// stays exact; anything else is a float64 (±Inf when out of range, which
// the schema refuses).
func numberValue(raw []byte) any {
	s := unsafe.String(unsafe.SliceData(raw), len(raw)) // only read during the calls
	if !bytes.ContainsAny(raw, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// properties parses a properties object (or null) into a map.
func (p *jparser) properties() (map[string]any, error) {
	if p.peek() == 'n' {
		return nil, p.literal("null")
	}
	if p.peek() != '{' {
		return nil, &fieldError{"properties", "must be a JSON object or null"}
	}
	p.i++
	props := make(map[string]any, 8)
	if p.consume('}') {
		return props, nil
	}
	for {
		k, err := p.keyRaw()
		if err != nil {
			return nil, err
		}
		name := p.internString(k)
		v, err := p.scalar()
		if err != nil {
			return nil, err
		}
		props[name] = v
		if p.consume(',') {
			continue
		}
		if p.consume('}') {
			return props, nil
		}
		return nil, p.syntax("',' or '}'")
	}
}

// fieldError is a per-row problem with a feature member.
type fieldError struct {
	Member string
	Reason string
}

func (e *fieldError) Error() string { return e.Member + " " + e.Reason }
