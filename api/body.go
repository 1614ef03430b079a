package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"reflect"
	"sort"
	"strings"
)

// decodeBody reads the JSON request body into dst (a pointer to a struct with
// json tags). Non-JSON media types give unsupported_media_type, malformed JSON
// invalid_json, and unknown or mistyped fields invalid_request naming them.
// The body size is already bounded by the server (MaxRequestBody).
func decodeBody(contentType string, body []byte, dst any) error {
	if contentType == "" {
		return newProblem("unsupported_media_type", "Send the body as application/json (Content-Type header missing).")
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return newProblem("unsupported_media_type", "Send the body as application/json.")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return newProblem("unsupported_media_type", "The JSON body must be UTF-8.")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return newProblem("invalid_json", "The request body is empty; send a JSON object.")
	}
	var raw any
	if err := json.Unmarshal(body, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return newProblem("invalid_json", "The body is not valid JSON (at byte %d).", se.Offset)
		}
		return newProblem("invalid_json", "The body is not valid JSON.")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return invalid("The body must be a JSON object.", FieldError{Field: "body", Message: "must be a JSON object"})
	}
	var fe []FieldError
	known := jsonFields(dst)
	for _, k := range sortedKeys(obj) {
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
