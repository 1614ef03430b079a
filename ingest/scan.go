package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"siteenv/internal/jsonscan"
)

// jsonScanner walks a stream of JSON text in bounded memory: a GeoJSON
// FeatureCollection (streaming its features array) or a sequence of
// features (newline-delimited GeoJSON, RFC 8142 text sequences). It checks
// the syntax of everything it passes and hands each feature over as the
// bytes of its value. Only the feature being read is held in memory, and
// not even that once its geometry passes the vertex cap or it grows past
// maxFeatureBytes: the rest of it is checked and skipped.
type jsonScanner struct {
	r    io.Reader
	buf  []byte
	pos  int
	end  int
	base int64 // stream offset of buf[0]
	eof  bool
	rerr error
	read *atomic.Int64 // bytes read so far (progress), may be nil

	mark     int // start of the captured value in buf; -1 when not capturing
	maxBytes int

	// feature state
	feature   bool
	inGeom    bool
	countPos  bool // counting positions (inside geometry, not in its bbox)
	positions int
	maxPos    int
	overflow  bool // more than maxPos positions: capture abandoned
	tooBig    bool // more than maxBytes: capture abandoned

	key []byte // the member name just read, when collected

	// lineMode: a line break ends a record, so it is not white space inside
	// a value (newline-delimited GeoJSON).
	lineMode bool
}

// maxFeatureBytes bounds the JSON text of one feature.
const maxFeatureBytes = 256 << 20

func newJSONScanner(r io.Reader, maxPositions int, read *atomic.Int64) *jsonScanner {
	return &jsonScanner{r: r, buf: make([]byte, 1<<20), mark: -1, maxBytes: maxFeatureBytes, maxPos: maxPositions, read: read}
}

// scanError is a syntax error in the stream; Offset is a byte offset in
// the file.
type scanError struct {
	Offset int64
	Msg    string
	EOF    bool // the input ended early
}

func (e *scanError) Error() string {
	if e.EOF {
		return fmt.Sprintf("unexpected end of file at byte %d (truncated?): %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

var errEmptyFile = errors.New("file is empty")

// skipBOM skips a UTF-8 byte order mark at the start of the input.
func (s *jsonScanner) skipBOM() {
	for s.end-s.pos < 3 && s.fill() {
	}
	if s.end-s.pos >= 3 && string(s.buf[s.pos:s.pos+3]) == "\ufeff" {
		s.pos += 3
	}
}

func (s *jsonScanner) offset() int64 { return s.base + int64(s.pos) }

func (s *jsonScanner) errAt(format string, args ...any) error {
	return &scanError{Offset: s.offset(), Msg: fmt.Sprintf(format, args...)}
}

// eofErr reports the end of input (or a read error) where more was needed.
func (s *jsonScanner) eofErr(what string) error {
	if s.rerr != nil {
		return s.rerr
	}
	return &scanError{Offset: s.offset(), Msg: "expected " + what, EOF: true}
}

// fill reads more input. It keeps the captured value, and drops everything
// else already consumed. It returns false at the end of input.
func (s *jsonScanner) fill() bool {
	for {
		if s.eof {
			return false
		}
		if s.mark >= 0 && s.end-s.mark > s.maxBytes {
			s.mark = -1
			s.tooBig = true
		}
		keep := s.pos
		if s.mark >= 0 {
			keep = s.mark
		}
		if keep > 0 {
			n := copy(s.buf, s.buf[keep:s.end])
			s.base += int64(keep)
			s.pos -= keep
			if s.mark >= 0 {
				s.mark -= keep
			}
			s.end = n
		}
		if s.end == len(s.buf) {
			nb := make([]byte, 2*len(s.buf))
			copy(nb, s.buf[:s.end])
			s.buf = nb
		}
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if s.read != nil && n > 0 {
			s.read.Add(int64(n))
		}
		if err != nil {
			s.eof = true
			if !errors.Is(err, io.EOF) {
				s.rerr = err
			}
		}
		if n > 0 {
			return true
		}
	}
}

func (s *jsonScanner) peek() (byte, bool) {
	if s.pos >= s.end && !s.fill() {
		return 0, false
	}
	return s.buf[s.pos], true
}

// skipWS skips white space (and record separators when rs) and returns the
// next byte without consuming it.
func (s *jsonScanner) skipWS() (byte, bool) {
	for {
		for s.pos < s.end {
			switch c := s.buf[s.pos]; c {
			case ' ', '\r', '\t':
				s.pos++
			case '\n':
				if s.lineMode {
					return c, true
				}
				s.pos++
			default:
				return c, true
			}
		}
		if !s.fill() {
			return 0, false
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// value scans one JSON value.
func (s *jsonScanner) value(depth int) error {
	c, ok := s.skipWS()
	if !ok {
		return s.eofErr("a value")
	}
	switch {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		s.pos++
		return s.str(false)
	case c == '-' || isDigit(c):
		return s.number()
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == 'N' || c == 'I':
		return s.errAt("NaN and Infinity are not valid JSON numbers")
	}
	return s.errAt("expected a value, found %s", jsonscan.QuoteByte(c))
}

func (s *jsonScanner) object(depth int) error {
	if depth > jsonscan.MaxNesting {
		return s.errAt("nested too deeply")
	}
	s.pos++ // '{'
	c, ok := s.skipWS()
	if !ok {
		return s.eofErr("a member name or '}'")
	}
	if c == '}' {
		s.pos++
		return nil
	}
	for {
		if c != '"' {
			return s.errAt("expected a member name, found %s", jsonscan.QuoteByte(c))
		}
		s.pos++
		collect := s.feature && (depth == 1 || (depth == 2 && s.inGeom))
		if err := s.str(collect); err != nil {
			return err
		}
		if c, ok = s.skipWS(); !ok {
			return s.eofErr("':'")
		}
		if c != ':' {
			return s.errAt("expected ':', found %s", jsonscan.QuoteByte(c))
		}
		s.pos++
		geom := false
		if collect {
			if depth == 1 {
				geom = string(s.key) == "geometry"
				s.inGeom = geom
				s.countPos = geom
			} else {
				s.countPos = string(s.key) != "bbox"
			}
		}
		if err := s.value(depth); err != nil {
			return err
		}
		if geom {
			s.inGeom, s.countPos = false, false
		}
		if c, ok = s.skipWS(); !ok {
			return s.eofErr("',' or '}'")
		}
		switch c {
		case ',':
			s.pos++
			if c, ok = s.skipWS(); !ok {
				return s.eofErr("a member name")
			}
		case '}':
			s.pos++
			return nil
		default:
			return s.errAt("expected ',' or '}', found %s", jsonscan.QuoteByte(c))
		}
	}
}

func (s *jsonScanner) array(depth int) error {
	if depth > jsonscan.MaxNesting {
		return s.errAt("nested too deeply")
	}
	s.pos++ // '['
	c, ok := s.skipWS()
	if !ok {
		return s.eofErr("a value or ']'")
	}
	if c == ']' {
		s.pos++
		return nil
	}
	if s.countPos && (c == '-' || isDigit(c)) {
		s.positions++
		if s.maxPos > 0 && s.positions > s.maxPos && !s.overflow {
			s.overflow = true
			s.mark = -1 // stop capturing: the feature is rejected anyway
		}
	}
	for {
		if err := s.value(depth); err != nil {
			return err
		}
		if c, ok = s.skipWS(); !ok {
			return s.eofErr("',' or ']'")
		}
		switch c {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.errAt("expected ',' or ']', found %s", jsonscan.QuoteByte(c))
		}
	}
}

// str scans a string after its opening quote; collect keeps its raw
// contents (up to 256 bytes) in s.key.
func (s *jsonScanner) str(collect bool) error {
	if collect {
		s.key = s.key[:0]
	}
	for {
		start := s.pos
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			s.pos++
		}
		if collect && len(s.key) < 256 {
			s.key = append(s.key, s.buf[start:s.pos]...)
		}
		if s.pos == s.end {
			if !s.fill() {
				return s.eofErr("the end of a string")
			}
			continue
		}
		switch c := s.buf[s.pos]; {
		case c == '"':
			s.pos++
			if collect && bytesHasBackslash(s.key) {
				var k string
				if json.Unmarshal(append(append([]byte{'"'}, s.key...), '"'), &k) == nil {
					s.key = append(s.key[:0], k...)
				}
			}
			return nil
		case c < 0x20:
			return s.errAt("control character in a string")
		}
		// backslash
		s.pos++
		c, ok := s.peek()
		if !ok {
			return s.eofErr("an escape sequence")
		}
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.pos++
			if collect {
				s.key = append(s.key, '\\', c)
			}
		case 'u':
			s.pos++
			if collect {
				s.key = append(s.key, '\\', 'u')
			}
			for i := 0; i < 4; i++ {
				h, ok := s.peek()
				if !ok {
					return s.eofErr("a hex digit")
				}
				if !(isDigit(h) || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')) {
					return s.errAt("invalid \\u escape")
				}
				s.pos++
				if collect {
					s.key = append(s.key, h)
				}
			}
		default:
			return s.errAt("invalid escape sequence")
		}
	}
}

func bytesHasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// digits scans decimal digits and returns how many.
func (s *jsonScanner) digits() int {
	n := 0
	for {
		for s.pos < s.end && isDigit(s.buf[s.pos]) {
			s.pos++
			n++
		}
		if s.pos < s.end || !s.fill() {
			return n
		}
	}
}

func (s *jsonScanner) number() error {
	c, _ := s.peek()
	if c == '-' {
		s.pos++
		var ok bool
		if c, ok = s.peek(); !ok {
			return s.eofErr("a digit")
		}
		if c == 'I' || c == 'N' {
			return s.errAt("NaN and Infinity are not valid JSON numbers")
		}
	}
	switch {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.errAt("expected a digit, found %s", jsonscan.QuoteByte(c))
	}
	if c, ok := s.peek(); ok && c == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.errAt("expected a digit after '.'")
		}
	}
	if c, ok := s.peek(); ok && (c == 'e' || c == 'E') {
		s.pos++
		if c, ok := s.peek(); ok && (c == '+' || c == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.errAt("expected a digit in the exponent")
		}
	}
	if s.rerr != nil {
		return s.rerr
	}
	return nil
}

func (s *jsonScanner) lit(word string) error {
	for i := 0; i < len(word); i++ {
		c, ok := s.peek()
		if !ok {
			return s.eofErr(fmt.Sprintf("%q", word))
		}
		if c != word[i] {
			return s.errAt("invalid literal, expected %q", word)
		}
		s.pos++
	}
	return nil
}

// scannedFeature is one feature as found in the stream.
type scannedFeature struct {
	Row      int64
	Offset   int64
	Raw      []byte // the feature's JSON; valid until the next feature; nil when skipped
	Overflow bool   // the geometry has more than the vertex cap
	TooBig   bool   // the feature's text is larger than maxFeatureBytes
	Err      error  // a syntax error in this feature (sequences only)
}

// feature1 scans the value at the current position as a feature. On
// success the value stays captured (s.mark is its start) so that reading
// on does not move it; the caller calls s.release when done with f.Raw.
func (s *jsonScanner) feature1(depth int) (scannedFeature, error) {
	s.feature, s.inGeom, s.countPos = true, false, false
	s.positions, s.overflow, s.tooBig = 0, false, false
	if _, ok := s.skipWS(); !ok {
		return scannedFeature{}, s.eofErr("a feature")
	}
	s.mark = s.pos
	f := scannedFeature{Offset: s.offset()}
	err := s.value(depth)
	s.feature = false
	if err != nil {
		s.mark = -1
		return f, err
	}
	if s.mark >= 0 {
		f.Raw = s.buf[s.mark:s.pos]
	}
	f.Overflow, f.TooBig = s.overflow, s.tooBig
	return f, nil
}

// raw returns the captured value of n bytes (after more reading).
func (s *jsonScanner) raw(n int) []byte {
	if s.mark < 0 {
		return nil
	}
	return s.buf[s.mark : s.mark+n]
}

func (s *jsonScanner) release() { s.mark = -1 }

// captureValue scans a value and returns a copy of its bytes.
func (s *jsonScanner) captureValue(depth int) ([]byte, error) {
	if _, ok := s.skipWS(); !ok {
		return nil, s.eofErr("a value")
	}
	s.mark = s.pos
	err := s.value(depth)
	var out []byte
	if err == nil && s.mark >= 0 {
		out = append(out, s.buf[s.mark:s.pos]...)
	} else if err == nil {
		err = s.errAt("value too large")
	}
	s.mark = -1
	return out, err
}

// featureCollection streams the features of a FeatureCollection to fn.
// crs is called with the raw value of a legacy top-level "crs" member;
// its second argument tells whether features were already read.
func (s *jsonScanner) featureCollection(fn func(scannedFeature) error, crs func(raw []byte, afterFeatures bool) error) error {
	s.skipBOM()
	c, ok := s.skipWS()
	if !ok {
		if s.rerr != nil {
			return s.rerr
		}
		return errEmptyFile
	}
	if c != '{' {
		return s.errAt("not a GeoJSON FeatureCollection: expected '{', found %s", jsonscan.QuoteByte(c))
	}
	s.pos++
	var (
		typ      string
		haveType bool
		features bool
		rows     int64
	)
	c, ok = s.skipWS()
	if !ok {
		return s.eofErr("a member name or '}'")
	}
	if c == '}' {
		s.pos++
	} else {
		for {
			if c != '"' {
				return s.errAt("expected a member name, found %s", jsonscan.QuoteByte(c))
			}
			s.pos++
			if err := s.str(true); err != nil {
				return err
			}
			key := string(s.key)
			if c, ok = s.skipWS(); !ok {
				return s.eofErr("':'")
			}
			if c != ':' {
				return s.errAt("expected ':', found %s", jsonscan.QuoteByte(c))
			}
			s.pos++
			switch key {
			case "type":
				at := s.offset()
				raw, err := s.captureValue(1)
				if err != nil {
					return err
				}
				if json.Unmarshal(raw, &typ) != nil {
					return &scanError{Offset: at, Msg: "the FeatureCollection's type must be a string"}
				}
				haveType = true
				if typ != "FeatureCollection" {
					return &scanError{Offset: at, Msg: fmt.Sprintf("not a FeatureCollection: type is %q", truncate(typ, 64))}
				}
			case "features":
				features = true
				if c, ok = s.skipWS(); !ok {
					return s.eofErr("the features array")
				}
				if c != '[' {
					return s.errAt("features must be an array, found %s", jsonscan.QuoteByte(c))
				}
				s.pos++
				if c, ok = s.skipWS(); !ok {
					return s.eofErr("a feature or ']'")
				}
				if c == ']' {
					s.pos++
					break
				}
				for {
					rows++
					f, err := s.feature1(0)
					if err != nil {
						return err
					}
					f.Row = rows
					err = fn(f)
					s.release()
					if err != nil {
						return err
					}
					if c, ok = s.skipWS(); !ok {
						return s.eofErr("',' or ']'")
					}
					if c == ',' {
						s.pos++
						continue
					}
					if c == ']' {
						s.pos++
						break
					}
					return s.errAt("expected ',' or ']' after a feature, found %s", jsonscan.QuoteByte(c))
				}
			case "crs":
				raw, err := s.captureValue(1)
				if err != nil {
					return err
				}
				if err := crs(raw, features); err != nil {
					return err
				}
			default:
				if err := s.value(1); err != nil {
					return err
				}
			}
			if c, ok = s.skipWS(); !ok {
				return s.eofErr("',' or '}'")
			}
			if c == ',' {
				s.pos++
				if c, ok = s.skipWS(); !ok {
					return s.eofErr("a member name")
				}
				continue
			}
			if c == '}' {
				s.pos++
				break
			}
			return s.errAt("expected ',' or '}', found %s", jsonscan.QuoteByte(c))
		}
	}
	if c, ok := s.skipWS(); ok {
		return s.errAt("unexpected %s after the end of the FeatureCollection", jsonscan.QuoteByte(c))
	}
	if s.rerr != nil {
		return s.rerr
	}
	switch {
	case !haveType:
		return &scanError{Offset: s.offset(), Msg: "not a FeatureCollection: the top-level object has no type member"}
	case !features:
		return &scanError{Offset: s.offset(), Msg: "the FeatureCollection has no features member"}
	}
	return nil
}

// sequence streams newline-delimited features or an RFC 8142 text sequence
// (records prefixed by the record separator 0x1E) to fn. A feature that is
// not valid JSON is passed on with Err set (a rejected row), and reading
// resumes at the next line or record separator.
func (s *jsonScanner) sequence(fn func(scannedFeature) error) error {
	var rows int64
	sawRS := false
	s.skipBOM()
	for {
		if _, ok := s.skipWSRS(&sawRS); !ok {
			break
		}
		rows++
		f, err := s.feature1(0)
		f.Row = rows
		if err != nil {
			var se *scanError
			if !errors.As(err, &se) {
				return err
			}
			f.Raw, f.Err = nil, se
			if err := fn(f); err != nil {
				return err
			}
			if se.EOF {
				break
			}
			s.resync(sawRS)
			continue
		}
		// The rest of the line must be blank.
		n := len(f.Raw)
		if c, ok := s.skipBlank(); ok && c != '\n' && c != 0x1e {
			s.release()
			f.Raw, f.Err = nil, s.errAt("unexpected %s after the feature (one feature per line)", jsonscan.QuoteByte(c))
			if err := fn(f); err != nil {
				return err
			}
			s.resync(sawRS)
			continue
		}
		f.Raw, f.TooBig = s.raw(n), f.TooBig || s.tooBig
		err = fn(f)
		s.release()
		if err != nil {
			return err
		}
	}
	if s.rerr != nil {
		return s.rerr
	}
	if rows == 0 {
		return errEmptyFile
	}
	return nil
}

// skipWSRS skips white space, line breaks and record separators between
// records.
func (s *jsonScanner) skipWSRS(sawRS *bool) (byte, bool) {
	for {
		c, ok := s.skipWS()
		switch {
		case !ok:
			return c, ok
		case c == 0x1e:
			*sawRS = true
		case c != '\n':
			return c, ok
		}
		s.pos++
	}
}

// skipBlank skips spaces, tabs and carriage returns.
func (s *jsonScanner) skipBlank() (byte, bool) {
	for {
		c, ok := s.peek()
		if !ok || (c != ' ' && c != '\t' && c != '\r') {
			return c, ok
		}
		s.pos++
	}
}

// resync skips to the next record: the next record separator in a text
// sequence that uses them, else the next line.
func (s *jsonScanner) resync(rs bool) {
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c == 0x1e {
				return
			}
			s.pos++
			if c == '\n' && !rs {
				return
			}
		}
		if !s.fill() {
			return
		}
	}
}
