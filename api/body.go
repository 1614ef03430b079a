package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
	top, err := scanJSON(body)
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
	dec := json.NewDecoder(bytes.NewReader(body))
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
}

// jsonPath names the position the innermost frame points at, e.g.
// site.geometry.coordinates[0]; "body" for the root. Built only when a
// problem is reported, so scanning stays linear in the body's size.
func jsonPath(stack []*jsonFrame) string {
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

// scanJSON reads body token by token, once (linear time), and refuses what
// encoding/json would silently accept: invalid UTF-8 inside a string (it
// becomes U+FFFD) and a repeated key in an object (the last one wins), both
// invalid_json; and NUL in a key or string value (valid JSON, but PostgreSQL
// text cannot hold it), invalid_request. Field errors name each place by its
// JSON path (site.geometry.coordinates[0]). It returns the top-level keys in
// order of appearance, or nil when the body is not an object.
func scanJSON(body []byte) ([]string, error) {
	var (
		stack    []*jsonFrame
		top      []string
		rootObj  bool
		badJSON  []FieldError
		badInput []FieldError
	)
	note := func(list *[]FieldError, msg string) {
		if len(*list) < maxFieldErrors {
			*list = append(*list, FieldError{Field: jsonPath(stack), Message: msg})
		}
	}
	// consumed marks the value at the innermost frame as read.
	consumed := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.object {
			f.haveKey = false
		} else {
			f.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for started := false; ; started = true {
		if started && len(stack) == 0 {
			// One value only: a second one (the decoder reads streams) or
			// anything else after it is malformed.
			if _, err := dec.Token(); err != io.EOF {
				return nil, newProblem(CodeInvalidJSON, "The body has data after its JSON value (at byte %d).", dec.InputOffset())
			}
			break
		}
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			at := stack
			if n := len(stack); n > 0 && stack[n-1].object && !stack[n-1].haveKey {
				at = stack[:n-1] // between members: name the object
			}
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, &Problem{Code: CodeInvalidJSON, Detail: fmt.Sprintf("The body is not valid JSON (at byte %d).", se.Offset),
					FieldErrors: []FieldError{{Field: jsonPath(at), Message: "not valid JSON here"}}}
			}
			// io.EOF or io.ErrUnexpectedEOF: the body ends inside a value.
			return nil, &Problem{Code: CodeInvalidJSON, Detail: "The body is not valid JSON (it ends early).",
				FieldErrors: []FieldError{{Field: jsonPath(at), Message: "incomplete"}}}
		}
		raw := body[start:dec.InputOffset()]
		var f *jsonFrame
		if len(stack) > 0 {
			f = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) == maxJSONDepth {
					return nil, newProblem(CodeInvalidJSON, "The body nests deeper than %d levels.", maxJSONDepth)
				}
				rootObj = rootObj || len(stack) == 0 && t == '{'
				stack = append(stack, &jsonFrame{object: t == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				consumed()
			}
			continue
		case string:
			if f != nil && f.object && !f.haveKey {
				// An object key; raw holds it (and ASCII separators).
				f.key, f.haveKey = t, true
				if !utf8.Valid(raw) {
					note(&badJSON, "key is not valid UTF-8")
				}
				if strings.IndexByte(t, 0) >= 0 {
					note(&badInput, "key must not contain NUL characters")
				}
				// encoding/json matches struct fields case-insensitively, so
				// keys equal but for case are duplicates too.
				if f.keys == nil {
					f.keys = map[string]string{}
				}
				folded := foldKey(t)
				if prev, dup := f.keys[folded]; dup {
					msg := "duplicate key"
					if prev != t {
						msg = "duplicate key (differs only in letter case from " + strconv.Quote(printableKey(prev)) + ")"
					}
					note(&badJSON, msg)
				} else {
					f.keys[folded] = t
				}
				if len(stack) == 1 {
					top = append(top, t)
				}
				continue
			}
			if !utf8.Valid(raw) {
				note(&badJSON, "must be valid UTF-8")
			}
			if strings.IndexByte(t, 0) >= 0 {
				note(&badInput, "must not contain NUL characters")
			}
		}
		consumed()
	}
	switch {
	case len(badJSON) > 0:
		return nil, &Problem{Code: CodeInvalidJSON, Detail: "The body has invalid UTF-8 or repeated keys.", FieldErrors: badJSON}
	case len(badInput) > 0:
		return nil, invalid("Text in the body must not contain NUL characters.", badInput...)
	}
	if !rootObj {
		return nil, nil
	}
	if top == nil {
		top = []string{}
	}
	return top, nil
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
