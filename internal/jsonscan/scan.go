// Package jsonscan is the service's one byte-level JSON tokenizer: a
// cursor over one JSON value held in memory that checks the RFC 8259
// grammar as it walks and never panics on malformed input. The GeoJSON
// geometry reader (geo) and ingest's feature reader are written
// over it; it builds no values of its own beyond strings and numbers.
package jsonscan

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Scanner walks B from offset I. The zero value with B set is ready.
type Scanner struct {
	B []byte
	I int
}

// MaxNesting bounds the recursion of Skip.
const MaxNesting = 128

// SyntaxError is a place where the input breaks the JSON grammar.
type SyntaxError struct {
	Offset   int    // byte offset in Scanner.B
	Expected string // what the grammar expects there: "a number", "',' or ']'"
	Found    int    // the byte at Offset, or -1 at the end of input
	Msg      string // a more specific description, when there is one
}

// Detail describes the error without its offset: Msg when set, else what
// was expected and what was found.
func (e *SyntaxError) Detail() string {
	switch {
	case e.Msg != "":
		return e.Msg
	case e.Found < 0:
		return "unexpected end of input, expected " + e.Expected
	}
	return "expected " + e.Expected + ", found " + QuoteByte(byte(e.Found))
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Detail())
}

// QuoteByte shows c in a message: quoted when printable.
func QuoteByte(c byte) string {
	if c == '\n' {
		return "the end of the line"
	}
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// errAt is a SyntaxError at offset i expecting what, with msg.
func (s *Scanner) errAt(i int, expected, msg string) *SyntaxError {
	found := -1
	if i < len(s.B) {
		found = int(s.B[i])
	}
	return &SyntaxError{Offset: i, Expected: expected, Found: found, Msg: msg}
}

// Syntax reports that what was expected at the current offset.
func (s *Scanner) Syntax(what string) *SyntaxError { return s.errAt(s.I, what, "") }

// Fail reports a specific problem msg at the current offset, where what
// was expected.
func (s *Scanner) Fail(what, msg string) *SyntaxError { return s.errAt(s.I, what, msg) }

// WS skips white space.
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Peek skips white space and returns the next byte, 0 at the end.
func (s *Scanner) Peek() byte {
	s.WS()
	if s.I >= len(s.B) {
		return 0
	}
	return s.B[s.I]
}

// AtEnd skips white space and reports whether the input is all read.
func (s *Scanner) AtEnd() bool {
	s.WS()
	return s.I >= len(s.B)
}

// Consume skips white space and, if the next byte is c, passes it.
func (s *Scanner) Consume(c byte) bool {
	if s.Peek() == c {
		s.I++
		return true
	}
	return false
}

// Literal passes lit (true, false or null) or reports it missing.
func (s *Scanner) Literal(lit string) error {
	s.WS()
	if len(s.B)-s.I >= len(lit) && string(s.B[s.I:s.I+len(lit)]) == lit {
		s.I += len(lit)
		return nil
	}
	return s.Syntax(strconv.Quote(lit))
}

// RawString scans the string at the next byte (which must be '"') and
// returns its contents without the quotes, a view into B, and whether it
// holds escapes (then not yet checked: see Str).
func (s *Scanner) RawString() ([]byte, bool, error) {
	if s.Peek() != '"' {
		return nil, false, s.Syntax("a string")
	}
	start := s.I
	s.I++
	escaped := false
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			s.I++
			return s.B[start+1 : s.I-1], escaped, nil
		case c == '\\':
			escaped = true
			s.I += 2
		case c < 0x20:
			return nil, false, s.Fail("no control characters in a string", "control character in a string")
		default:
			s.I++
		}
	}
	s.I = len(s.B)
	return nil, false, s.Syntax("'\"'")
}

// unescape decodes the string from start (its opening quote) to s.I.
func (s *Scanner) unescape(start int) ([]byte, error) {
	var v string
	if err := json.Unmarshal(s.B[start:s.I], &v); err != nil {
		return nil, s.errAt(start, "a valid string", "invalid string escape")
	}
	return []byte(v), nil
}

// Str parses a JSON string.
func (s *Scanner) Str() (string, error) {
	s.WS()
	start := s.I
	raw, escaped, err := s.RawString()
	if err != nil {
		return "", err
	}
	if escaped {
		if raw, err = s.unescape(start); err != nil {
			return "", err
		}
	}
	return string(raw), nil
}

// KeyRaw parses a member name and the ':' after it, and returns the name:
// a view into B unless it holds escapes.
func (s *Scanner) KeyRaw() ([]byte, error) {
	if s.Peek() != '"' {
		return nil, s.Syntax("a member name")
	}
	start := s.I
	k, escaped, err := s.RawString()
	if err != nil {
		return nil, err
	}
	if escaped {
		if k, err = s.unescape(start); err != nil {
			return nil, err
		}
	}
	if !s.Consume(':') {
		return nil, s.Syntax("':'")
	}
	return k, nil
}

// NumberBytes scans a JSON number (RFC 8259 grammar) and returns its text,
// a view into B.
func (s *Scanner) NumberBytes() ([]byte, error) {
	s.WS()
	start := s.I
	b := s.B
	i := s.I
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
		s.I = i
		return nil, s.Fail("a number", "NaN and Infinity are not valid JSON numbers")
	default:
		s.I = i
		return nil, s.Syntax("a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			s.I = i
			return nil, s.Syntax("a digit after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.I = i
			return nil, s.Syntax("a digit in the exponent")
		}
	}
	s.I = i
	return b[start:i], nil
}

// Number parses a JSON number; one too large for float64 gives ±Inf.
func (s *Scanner) Number() (float64, error) {
	raw, err := s.NumberBytes()
	if err != nil {
		return 0, err
	}
	return ParseNumber(raw), nil
}

// Skip passes over one value at nesting depth depth, checking its syntax.
func (s *Scanner) Skip(depth int) error {
	if depth > MaxNesting {
		return s.Fail("a value", "nested too deeply")
	}
	switch c := s.Peek(); {
	case c == '{':
		s.I++
		if s.Consume('}') {
			return nil
		}
		for {
			if _, err := s.KeyRaw(); err != nil {
				return err
			}
			if err := s.Skip(depth + 1); err != nil {
				return err
			}
			if s.Consume(',') {
				continue
			}
			if s.Consume('}') {
				return nil
			}
			return s.Syntax("',' or '}'")
		}
	case c == '[':
		s.I++
		if s.Consume(']') {
			return nil
		}
		for {
			if err := s.Skip(depth + 1); err != nil {
				return err
			}
			if s.Consume(',') {
				continue
			}
			if s.Consume(']') {
				return nil
			}
			return s.Syntax("',' or ']'")
		}
	case c == '"':
		_, _, err := s.RawString()
		return err
	case c == 't':
		return s.Literal("true")
	case c == 'f':
		return s.Literal("false")
	case c == 'n':
		return s.Literal("null")
	default:
		_, err := s.NumberBytes()
		return err
	}
}
