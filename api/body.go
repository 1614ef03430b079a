package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"siteenv/internal/jsonscan"
)

// decodeBody reads the JSON request body into dst (a pointer to a struct with
// json tags). Non-JSON media types give unsupported_media_type; malformed
// JSON, invalid UTF-8 and duplicate object keys invalid_json; NUL in a string
// and unknown or mistyped fields invalid_request naming them. The body size
// is already bounded by the server (MaxRequestBody).
func decodeBody(contentType string, body []byte, dst any) error {
	if contentType == "" {
		return newProblem(CodeUnsupportedMediaType, "Send the body as application/json (Content-Type header missing).")
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return newProblem(CodeUnsupportedMediaType, "Send the body as application/json.")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return newProblem(CodeUnsupportedMediaType, "The JSON body must be UTF-8.")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return newProblem(CodeInvalidJSON, "The request body is empty; send a JSON object.")
	}
	top, spans, err := scanJSON(body)
	if err != nil {
		return err
	}
	if top == nil {
		return invalid("The body must be a JSON object.", FieldError{Field: "body", Message: "must be a JSON object"})
	}
	var fe []FieldError
	known := jsonFields(dst)
	for _, k := range top {
		if !known[k] {
			fe = append(fe, FieldError{Field: k, Message: "unknown field"})
		}
	}
	if len(fe) > 0 {
		return invalid("The body has fields this operation does not accept.", fe...)
	}
	dec := json.NewDecoder(bytes.NewReader(rawFields(dst, body, top, spans)))
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "body"
			}
			return invalid("A field has the wrong type.", FieldError{Field: field, Message: fmt.Sprintf("must be %s", jsonKind(te.Type))})
		}
		return invalid("The body could not be read: " + err.Error())
	}
	return nil
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// rawFields sets the json.RawMessage fields of dst (a struct pointer) that
// body's top-level members name to a copy of their values' bytes, as
// encoding/json does, and returns body without those members for
// encoding/json to decode the rest: decoding them too checked and copied a
// 10,000-position site's 240 KB again (2.3 ms). body itself when none is
// set. top and spans are scanJSON's: the body is checked, its keys are
// unique and each is a field's exact name.
func rawFields(dst any, body []byte, top []string, spans [][3]int) []byte {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return body
	}
	v = v.Elem()
	raw := map[string]int{} // json name -> field index
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Type != rawMessageType || !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		raw[name] = i
	}
	set := false
	for j, k := range top {
		if i, ok := raw[k]; ok {
			v.Field(i).SetBytes(bytes.Clone(body[spans[j][1]:spans[j][2]]))
			set = true
		}
	}
	if !set {
		return body
	}
	rest := []byte{'{'}
	for j, k := range top {
		if _, ok := raw[k]; ok {
			continue
		}
		if len(rest) > 1 {
			rest = append(rest, ',')
		}
		rest = append(rest, body[spans[j][0]:spans[j][2]]...)
	}
	return append(rest, '}')
}

// jsonFields lists the top-level json names of a struct pointer.
func jsonFields(dst any) map[string]bool {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = true
	}
	return out
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a valid value"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// maxJSONDepth bounds nesting as encoding/json does when decoding.
const maxJSONDepth = 10000

// jsonFrame is one open object or array of scanJSON.
type jsonFrame struct {
	object  bool
	keys    map[string]string // case-folded key -> key as written
	key     string            // object: the latest key read
	haveKey bool              // object: key's value comes next
	index   int               // array: index of the next element
	first   bool              // no member read yet
}

// next marks the value f points at as read.
func (f *jsonFrame) next() {
	if f.object {
		f.haveKey = false
	} else {
		f.index++
	}
}

// jsonPath names the position the innermost frame points at, e.g.
// site.geometry.coordinates[0]; "body" for the root. Built only when a
// problem is reported, so scanning stays linear in the body's size.
func jsonPath(stack []jsonFrame) string {
	var b strings.Builder
	for i, f := range stack {
		switch {
		case f.object && i > 0:
			b.WriteByte('.')
			fallthrough
		case f.object:
			b.WriteString(printableKey(f.key))
		default:
			if i == 0 {
				b.WriteString("body")
			}
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
		}
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// printableKey keeps a key readable and valid text inside a field error.
func printableKey(k string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(k, "\uFFFD"), "\x00", `\u0000`)
}

// scanJSON reads body once (linear time) with the service's tokenizer
// (jsonscan), and refuses what encoding/json would silently accept:
// invalid UTF-8 inside a string (it becomes U+FFFD) and a repeated key in
// an object (the last one wins), both invalid_json; and NUL in a key or
// string value (valid JSON, but PostgreSQL text cannot hold it),
// invalid_request. Field errors name each place by its JSON path
// (site.geometry.coordinates[0]). It returns the top-level keys in order
// of appearance with their members' spans in body (where the key starts,
// where its value starts and ends), or nil when the body is not an
// object.
func scanJSON(body []byte) ([]string, [][3]int, error) {
	var (
		stack    []jsonFrame // values, not pointers: one allocation per level reached, not per array
		top      []string
		spans    [][3]int
		badJSON  []FieldError
		badInput []FieldError
	)
	s := &jsonscan.Scanner{B: body}
	note := func(list *[]FieldError, msg string) {
		if len(*list) < maxFieldErrors {
			*list = append(*list, FieldError{Field: jsonPath(stack), Message: msg})
		}
	}
	// text reads the string (a key or a value) at the next byte: its text
	// (escapes decoded) and whether its bytes are valid UTF-8.
	text := func() (string, bool, error) {
		start := s.I
		raw, escaped, err := s.RawString()
		if err != nil {
			return "", false, err
		}
		t := string(raw)
		if escaped {
			if err := json.Unmarshal(body[start:s.I], &t); err != nil {
				s.I = start
				return "", false, s.Fail("a valid string", "invalid string escape")
			}
		}
		return t, utf8.Valid(raw), nil
	}
	// value reads one value; an object or array opens a frame, whose
	// members the loop below reads.
	value := func() error {
		switch c := s.Peek(); c {
		case '{', '[':
			if len(stack) == maxJSONDepth {
				return newProblem(CodeInvalidJSON, "The body nests deeper than %d levels.", maxJSONDepth)
			}
			s.I++
			stack = append(stack, jsonFrame{object: c == '{', first: true})
			return nil
		case '"':
			t, valid, err := text()
			if err != nil {
				return err
			}
			if !valid {
				note(&badJSON, "must be valid UTF-8")
			}
			if strings.IndexByte(t, 0) >= 0 {
				note(&badInput, "must not contain NUL characters")
			}
			return nil
		case 't':
			return s.Literal("true")
		case 'f':
			return s.Literal("false")
		case 'n':
			return s.Literal("null")
		default:
			_, err := s.NumberBytes()
			return err
		}
	}
	rootObj := s.Peek() == '{'
	err := value()
	for err == nil && len(stack) > 0 {
		f := &stack[len(stack)-1] // valid until the stack grows (value below)
		closer := byte(']')
		if f.object {
			closer = '}'
		}
		// The closer (also of an empty one), else ',' before every member
		// but the first.
		if s.Consume(closer) {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].next()
				if len(stack) == 1 && stack[0].object {
					spans[len(spans)-1][2] = s.I
				}
			}
			continue
		}
		if !f.first && !s.Consume(',') {
			err = s.Syntax("',' or '" + string(closer) + "'")
			break
		}
		f.first = false
		if f.object {
			f.haveKey = false
			if s.Peek() != '"' {
				err = s.Syntax("a member name")
				break
			}
			keyStart := s.I
			k, valid, kerr := text()
			if err = kerr; err != nil {
				break
			}
			if !s.Consume(':') {
				err = s.Syntax("':'")
				break
			}
			f.key, f.haveKey = k, true
			if !valid {
				note(&badJSON, "key is not valid UTF-8")
			}
			if strings.IndexByte(k, 0) >= 0 {
				note(&badInput, "key must not contain NUL characters")
			}
			// encoding/json matches struct fields case-insensitively, so
			// keys equal but for case are duplicates too.
			if f.keys == nil {
				f.keys = map[string]string{}
			}
			folded := foldKey(k)
			if prev, dup := f.keys[folded]; dup {
				msg := "duplicate key"
				if prev != k {
					msg = "duplicate key (differs only in letter case from " + strconv.Quote(printableKey(prev)) + ")"
				}
				note(&badJSON, msg)
			} else {
				f.keys[folded] = k
			}
			if len(stack) == 1 {
				top = append(top, k)
				s.WS()
				spans = append(spans, [3]int{keyStart, s.I, -1}) // its end when stack[0].next
			}
		}
		n := len(stack)
		if err = value(); err == nil && len(stack) == n {
			f.next()
			if n == 1 && f.object {
				spans[len(spans)-1][2] = s.I
			}
		}
	}
	if err == nil && !s.AtEnd() {
		// One value only: a second one, or anything else after it, is
		// malformed.
		return nil, nil, newProblem(CodeInvalidJSON, "The body has data after its JSON value (at byte %d).", s.I+1)
	}
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		at := stack
		if n := len(stack); n > 0 && stack[n-1].object && !stack[n-1].haveKey {
			at = stack[:n-1] // between members: name the object
		}
		if se.Found < 0 {
			return nil, nil, &Problem{Code: CodeInvalidJSON, Detail: "The body is not valid JSON (it ends early).",
				FieldErrors: []FieldError{{Field: jsonPath(at), Message: "incomplete"}}}
		}
		return nil, nil, &Problem{Code: CodeInvalidJSON, Detail: fmt.Sprintf("The body is not valid JSON (at byte %d: %s).", se.Offset+1, se.Detail()),
			FieldErrors: []FieldError{{Field: jsonPath(at), Message: "not valid JSON here"}}}
	}
	switch {
	case err != nil:
		return nil, nil, err
	case len(badJSON) > 0:
		return nil, nil, &Problem{Code: CodeInvalidJSON, Detail: "The body has invalid UTF-8 or repeated keys.", FieldErrors: badJSON}
	case len(badInput) > 0:
		return nil, nil, invalid("Text in the body must not contain NUL characters.", badInput...)
	}
	if !rootObj {
		return nil, nil, nil
	}
	if top == nil {
		top = []string{}
	}
	return top, spans, nil
}

// foldKey maps a key to a representative of its case-folding class, so that
// foldKey(a) == foldKey(b) exactly when strings.EqualFold(a, b). ASCII
// letters fold to lower case, so the usual keys are their own
// representative and cost no allocation.
func foldKey(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] < utf8.RuneSelf && (s[i] < 'A' || s[i] > 'Z')
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRune picks one rune of r's case-folding orbit: its ASCII lower-case
// letter when it has one (K, k and the Kelvin sign all give k), else the
// smallest.
func foldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	if m < utf8.RuneSelf {
		return unicode.ToLower(m)
	}
	return m
}
