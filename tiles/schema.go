package tiles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// FieldType is the JSON type of a layer field.
type FieldType string

// Field types allowed by the field schema convention.
const (
	TypeString  FieldType = "string"
	TypeInteger FieldType = "integer"
	TypeNumber  FieldType = "number"
	TypeBoolean FieldType = "boolean"
)

// String formats understood by the codec.
const (
	FormatDate     = "date"      // "2006-01-02", stored as Parquet DATE
	FormatDateTime = "date-time" // RFC 3339, stored as TIMESTAMP(MICROS, UTC)
)

// Field is one property of a layer's features, parsed from a JSON Schema
// fragment of the form {"type": T} or {"type": [T, "null"]} where T is
// "string", "integer", "number" or "boolean". Strings may carry
// "format": "date" or "date-time". "title", "description", "enum",
// "minimum" and "maximum" are kept for the published JSON Schema; the codec
// ignores them and Check enforces enum, minimum and maximum.
type Field struct {
	Name     string
	Type     FieldType
	Nullable bool
	Format   string // "", FormatDate or FormatDateTime; strings only

	Title       string
	Description string
	Enum        []any    // canonical values (see FieldSchema.Normalize); nil means any
	Minimum     *float64 // integers and numbers only
	Maximum     *float64
}

// FieldSchema is a layer's field schema: its fields sorted by name. The zero
// value is an empty schema (geometry only). A FieldSchema is immutable once
// parsed and safe for concurrent use.
//
// Canonical property values (what Normalize returns and Tile.Properties
// yields): string -> string, integer -> int64, number -> float64,
// boolean -> bool, date -> "YYYY-MM-DD", date-time -> RFC 3339 in UTC with
// at most microsecond precision, null -> nil.
type FieldSchema []Field

// reservedColumns are the tile columns a field may not shadow.
var reservedColumns = map[string]bool{"feature_id": true, "geometry": true, "bbox": true}

var fieldNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// ParseFieldSchema parses a layer's field_schema: a map of field name to JSON
// Schema fragment, given as map[string]json.RawMessage or map[string]any (any
// value type that marshals to the fragment's JSON). Unknown keywords, unknown
// types and formats, and invalid names are rejected with ErrInvalidSchema.
func ParseFieldSchema[V any](raw map[string]V) (FieldSchema, error) {
	fs := make(FieldSchema, 0, len(raw))
	for name, v := range raw {
		var data []byte
		switch x := any(v).(type) {
		case json.RawMessage:
			data = x
		case []byte:
			data = x
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("%w: field %q: %v", ErrInvalidSchema, name, err)
			}
			data = b
		}
		f, err := parseField(name, data)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
	return fs, nil
}

func parseField(name string, data []byte) (Field, error) {
	f := Field{Name: name}
	bad := func(format string, args ...any) (Field, error) {
		return Field{}, fmt.Errorf("%w: field %q: %s", ErrInvalidSchema, name, fmt.Sprintf(format, args...))
	}
	if !fieldNameRE.MatchString(name) {
		return bad("name must match %s", fieldNameRE)
	}
	if reservedColumns[name] {
		return bad("name is reserved for a tile column")
	}
	var kw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&kw); err != nil || kw == nil {
		return bad("must be a JSON object")
	}
	if dec.More() {
		return bad("trailing data after the fragment")
	}
	typ, ok := kw["type"]
	if !ok {
		return bad(`missing "type"`)
	}
	var one string
	var two []string
	switch {
	case json.Unmarshal(typ, &one) == nil:
		f.Type = FieldType(one)
	case json.Unmarshal(typ, &two) == nil && len(two) == 2 && (two[0] == "null") != (two[1] == "null"):
		f.Nullable = true
		f.Type = FieldType(two[0])
		if two[0] == "null" {
			f.Type = FieldType(two[1])
		}
	default:
		return bad(`"type" must be a type name or [type, "null"]`)
	}
	switch f.Type {
	case TypeString, TypeInteger, TypeNumber, TypeBoolean:
	default:
		return bad(`"type" %q is not string, integer, number or boolean`, f.Type)
	}
	keys := make([]string, 0, len(kw))
	for k := range kw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := kw[k]
		switch k {
		case "type":
		case "format":
			if f.Type != TypeString {
				return bad(`"format" is only allowed on strings`)
			}
			if json.Unmarshal(v, &f.Format) != nil || (f.Format != FormatDate && f.Format != FormatDateTime) {
				return bad(`"format" must be "date" or "date-time"`)
			}
		case "title":
			if json.Unmarshal(v, &f.Title) != nil {
				return bad(`"title" must be a string`)
			}
		case "description":
			if json.Unmarshal(v, &f.Description) != nil {
				return bad(`"description" must be a string`)
			}
		case "minimum", "maximum":
			if f.Type != TypeInteger && f.Type != TypeNumber {
				return bad("%q is only allowed on integers and numbers", k)
			}
			var x float64
			if json.Unmarshal(v, &x) != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return bad("%q must be a number", k)
			}
			if k == "minimum" {
				f.Minimum = &x
			} else {
				f.Maximum = &x
			}
		case "enum":
		default:
			return bad("keyword %q is not allowed (use type, format, title, description, enum, minimum, maximum)", k)
		}
	}
	if f.Minimum != nil && f.Maximum != nil && *f.Minimum > *f.Maximum {
		return bad(`"minimum" is greater than "maximum"`)
	}
	// enum last: its values are checked against the finished field.
	if v, ok := kw["enum"]; ok {
		var vals []any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if d.Decode(&vals) != nil || len(vals) == 0 {
			return bad(`"enum" must be a non-empty array`)
		}
		plain := f
		plain.Enum, plain.Minimum, plain.Maximum = nil, nil, nil
		for _, e := range vals {
			c, err := plain.normalize(e)
			if err != nil {
				return bad(`"enum" value %v: %v`, e, err.(*PropertyError).Reason)
			}
			f.Enum = append(f.Enum, c)
		}
	}
	return f, nil
}

// Lookup returns the field called name.
func (s FieldSchema) Lookup(name string) (Field, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].Name >= name })
	if i < len(s) && s[i].Name == name {
		return s[i], true
	}
	return Field{}, false
}

// Check validates a feature's properties: every property must be a field of
// the schema, every non-nullable field must be present and non-null, and each
// value must fit its field (integers whole and within int64, dates
// parseable, enum and bounds respected). The error is a *PropertyError naming
// the first offending field (fields in name order, then unknown properties).
func (s FieldSchema) Check(props map[string]any) error {
	_, err := s.coerceAll(props)
	return err
}

// Normalize validates props like Check and returns them in canonical form
// (see FieldSchema), with every field present (missing nullable fields as
// nil).
func (s FieldSchema) Normalize(props map[string]any) (map[string]any, error) {
	native, err := s.coerceAll(props)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(s))
	for i, f := range s {
		out[f.Name] = f.present(native[i])
	}
	return out, nil
}

// coerceAll returns the codec-native value of each field, in schema order.
func (s FieldSchema) coerceAll(props map[string]any) ([]any, error) {
	out := make([]any, len(s))
	for i, f := range s {
		v, ok := props[f.Name]
		if !ok || v == nil {
			if !f.Nullable {
				if ok {
					return nil, &PropertyError{Field: f.Name, Reason: "must not be null"}
				}
				return nil, &PropertyError{Field: f.Name, Reason: "is required"}
			}
			continue
		}
		c, err := f.coerce(v)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	if len(props) > len(s) || !allKnown(s, props) {
		var unknown []string
		for k := range props {
			if _, ok := s.Lookup(k); !ok {
				unknown = append(unknown, k)
			}
		}
		sort.Strings(unknown)
		return nil, &PropertyError{Field: unknown[0], Reason: "is not a field of the layer's schema"}
	}
	return out, nil
}

func allKnown(s FieldSchema, props map[string]any) bool {
	for k := range props {
		if _, ok := s.Lookup(k); !ok {
			return false
		}
	}
	return true
}

// normalize returns v in canonical form.
func (f Field) normalize(v any) (any, error) {
	if v == nil {
		if !f.Nullable {
			return nil, &PropertyError{Field: f.Name, Reason: "must not be null"}
		}
		return nil, nil
	}
	c, err := f.coerce(v)
	if err != nil {
		return nil, err
	}
	return f.present(c), nil
}

// coerce converts a non-nil value to the codec-native type of f: string,
// int64, float64, bool, int32 days since 1970-01-01 (date) or int64
// microseconds since the Unix epoch (date-time).
func (f Field) coerce(v any) (any, error) {
	bad := func(reason string) (any, error) {
		return nil, &PropertyError{Field: f.Name, Reason: reason}
	}
	var out any
	switch f.Type {
	case TypeString:
		switch f.Format {
		case FormatDate:
			var t time.Time
			switch x := v.(type) {
			case string:
				var err error
				if t, err = time.Parse(time.DateOnly, x); err != nil {
					return bad("must be a date (YYYY-MM-DD)")
				}
			case time.Time:
				t = time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC)
			default:
				return bad("must be a date string (YYYY-MM-DD)")
			}
			out = int32(t.Unix() / 86400)
		case FormatDateTime:
			var t time.Time
			switch x := v.(type) {
			case string:
				var err error
				if t, err = time.Parse(time.RFC3339Nano, x); err != nil {
					return bad("must be an RFC 3339 date-time")
				}
			case time.Time:
				t = x
			default:
				return bad("must be an RFC 3339 date-time string")
			}
			if t.Year() < 1 || t.Year() > 9999 {
				return bad("date-time is out of range")
			}
			out = t.UnixMicro()
		default:
			s, ok := v.(string)
			if !ok {
				return bad("must be a string")
			}
			if !utf8.ValidString(s) {
				return bad("must be valid UTF-8")
			}
			out = s
		}
	case TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return bad("must be a boolean")
		}
		out = b
	case TypeInteger:
		i, ok := toInt64(v)
		if !ok {
			return bad("must be a whole number within the 64-bit integer range")
		}
		if (f.Minimum != nil && float64(i) < *f.Minimum) || (f.Maximum != nil && float64(i) > *f.Maximum) {
			return bad("is outside the allowed range")
		}
		out = i
	case TypeNumber:
		x, ok := toFloat64(v)
		if !ok {
			return bad("must be a finite number")
		}
		if (f.Minimum != nil && x < *f.Minimum) || (f.Maximum != nil && x > *f.Maximum) {
			return bad("is outside the allowed range")
		}
		out = x
	default:
		return bad(fmt.Sprintf("has unsupported type %q", f.Type))
	}
	if f.Enum != nil {
		p := f.present(out)
		found := false
		for _, e := range f.Enum {
			if e == p {
				found = true
				break
			}
		}
		if !found {
			return bad("is not one of the allowed values")
		}
	}
	return out, nil
}

// present converts a codec-native value to its canonical form.
func (f Field) present(v any) any {
	switch x := v.(type) {
	case int32: // date
		return string(appendDate(nil, x))
	case int64:
		if f.Format == FormatDateTime {
			return formatDateTime(x)
		}
		return x
	}
	return v
}

func formatDateTime(micros int64) string { return string(appendDateTime(nil, micros)) }

// appendDate appends the date days after 1970-01-01, as YYYY-MM-DD.
func appendDate(b []byte, days int32) []byte {
	return time.Unix(int64(days)*86400, 0).UTC().AppendFormat(b, time.DateOnly)
}

// appendDateTime appends the UTC time micros after the epoch, RFC 3339
// with as many fractional digits as it needs.
func appendDateTime(b []byte, micros int64) []byte {
	return time.UnixMicro(micros).UTC().AppendFormat(b, "2006-01-02T15:04:05.999999Z07:00")
}

const (
	minInt64Float = -9223372036854775808.0 // -2^63, exact
	maxInt64Float = 9223372036854775808.0  // 2^63, exact; not representable
)

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return int64(x), uint64(x) <= math.MaxInt64
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case float32:
		return floatToInt64(float64(x))
	case float64:
		return floatToInt64(x)
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, true
		}
		if strings.ContainsAny(string(x), ".eE") {
			if f, err := strconv.ParseFloat(string(x), 64); err == nil {
				return floatToInt64(f)
			}
		}
	}
	return 0, false
}

func floatToInt64(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < minInt64Float || f >= maxInt64Float {
		return 0, false // also rejects NaN and ±Inf
	}
	return int64(f), true
}

func toFloat64(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return 0, false
		}
	default:
		i, ok := toInt64(v)
		if !ok {
			return 0, false
		}
		f = float64(i)
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// fragment is the canonical JSON Schema fragment of f.
func (f Field) fragment() map[string]any {
	m := map[string]any{"type": string(f.Type)}
	if f.Nullable {
		m["type"] = []string{string(f.Type), "null"}
	}
	if f.Format != "" {
		m["format"] = f.Format
	}
	if f.Title != "" {
		m["title"] = f.Title
	}
	if f.Description != "" {
		m["description"] = f.Description
	}
	if f.Enum != nil {
		m["enum"] = f.Enum
	}
	if f.Minimum != nil {
		m["minimum"] = *f.Minimum
	}
	if f.Maximum != nil {
		m["maximum"] = *f.Maximum
	}
	return m
}

// MarshalJSON writes the field_schema form: an object of name -> fragment,
// keys sorted, so equal schemas marshal to equal bytes.
func (s FieldSchema) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(s))
	for _, f := range s {
		m[f.Name] = f.fragment()
	}
	return json.Marshal(m)
}

// UnmarshalJSON parses the field_schema form strictly (see ParseFieldSchema).
func (s *FieldSchema) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	if raw == nil {
		return fmt.Errorf("%w: field_schema must be an object", ErrInvalidSchema)
	}
	fs, err := ParseFieldSchema(raw)
	if err != nil {
		return err
	}
	*s = fs
	return nil
}

// JSONSchema is the JSON Schema (2020-12) of a feature's properties object,
// as served by GET /layers/{id}/schema.
func (s FieldSchema) JSONSchema() map[string]any {
	props := make(map[string]any, len(s))
	required := []string{}
	for _, f := range s {
		props[f.Name] = f.fragment()
		if !f.Nullable {
			required = append(required, f.Name)
		}
	}
	return map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}
