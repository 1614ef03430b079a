package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"siteenv/internal/jsonscan"
)

// jparser reads one JSON value held in memory (a feature captured by the
// stream scanner, or a line of newline-delimited GeoJSON) over the
// service's one tokenizer, jsonscan.Scanner, adding what a feature's
// properties need. It never panics on malformed input.
type jparser struct {
	jsonscan.Scanner
	intern map[string]string // optional: property names seen before
}

// jsonSyntaxError is broken JSON in a feature, as a reject report says it.
type jsonSyntaxError struct {
	Offset int // within the value
	Msg    string
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d of the feature: %s", e.Offset, e.Msg)
}

// featureError words the tokenizer's syntax errors as a feature's; other
// errors pass unchanged.
func featureError(err error) error {
	if err == nil {
		return nil // before errors.As, whose target escapes: no allocation per feature
	}
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		return &jsonSyntaxError{se.Offset, se.Detail()}
	}
	return err
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

// scalar parses any value into a Go value for FieldSchema.Normalize:
// strings, int64 or float64 (see numberValue), bools and nil; objects and arrays are decoded with
// encoding/json (the schema then refuses them).
func (p *jparser) scalar() (any, error) {
	switch c := p.Peek(); {
	case c == '"':
		return p.Str()
	case c == 't':
		return true, p.Literal("true")
	case c == 'f':
		return false, p.Literal("false")
	case c == 'n':
		return nil, p.Literal("null")
	case c == '{' || c == '[':
		start := p.I
		if err := p.Skip(0); err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(p.B[start:p.I]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, &jsonSyntaxError{start, err.Error()}
		}
		return v, nil
	default:
		raw, err := p.NumberBytes()
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
	if p.Peek() == 'n' {
		return nil, p.Literal("null")
	}
	if p.Peek() != '{' {
		return nil, &fieldError{"properties", "must be a JSON object or null"}
	}
	p.I++
	props := make(map[string]any, 8)
	if p.Consume('}') {
		return props, nil
	}
	for {
		k, err := p.KeyRaw()
		if err != nil {
			return nil, err
		}
		name := p.internString(k)
		v, err := p.scalar()
		if err != nil {
			return nil, err
		}
		props[name] = v
		if p.Consume(',') {
			continue
		}
		if p.Consume('}') {
			return props, nil
		}
		return nil, p.Syntax("',' or '}'")
	}
}

// fieldError is a per-row problem with a feature member.
type fieldError struct {
	Member string
	Reason string
}

func (e *fieldError) Error() string { return e.Member + " " + e.Reason }
