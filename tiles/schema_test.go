package tiles

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

func TestParseFieldSchema(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    FieldSchema
		wantErr bool
	}{
		{"empty", `{}`, FieldSchema{}, false},
		{"every type, sorted by name", `{
			"z": {"type": "string"},
			"a": {"type": ["integer", "null"], "minimum": 0, "maximum": 10, "description": "count"},
			"m": {"type": "number", "title": "M"},
			"b": {"type": ["null", "boolean"]},
			"d": {"type": "string", "format": "date"},
			"t": {"type": ["string", "null"], "format": "date-time"},
			"e": {"type": "string", "enum": ["x", "y"]}
		}`, FieldSchema{
			{Name: "a", Type: TypeInteger, Nullable: true, Description: "count", Minimum: ptr(0.0), Maximum: ptr(10.0)},
			{Name: "b", Type: TypeBoolean, Nullable: true},
			{Name: "d", Type: TypeString, Format: FormatDate},
			{Name: "e", Type: TypeString, Enum: []any{"x", "y"}},
			{Name: "m", Type: TypeNumber, Title: "M"},
			{Name: "t", Type: TypeString, Nullable: true, Format: FormatDateTime},
			{Name: "z", Type: TypeString},
		}, false},
		{"integer enum canonicalised", `{"n": {"type": "integer", "enum": [1, 2.0]}}`,
			FieldSchema{{Name: "n", Type: TypeInteger, Enum: []any{int64(1), int64(2)}}}, false},
		{"missing type", `{"a": {"description": "x"}}`, nil, true},
		{"unknown type", `{"a": {"type": "object"}}`, nil, true},
		{"array type", `{"a": {"type": "array"}}`, nil, true},
		{"two non-null types", `{"a": {"type": ["string", "integer"]}}`, nil, true},
		{"null only", `{"a": {"type": "null"}}`, nil, true},
		{"three types", `{"a": {"type": ["string", "null", "integer"]}}`, nil, true},
		{"format on integer", `{"a": {"type": "integer", "format": "date"}}`, nil, true},
		{"unknown format", `{"a": {"type": "string", "format": "email"}}`, nil, true},
		{"unknown keyword", `{"a": {"type": "string", "maxLength": 3}}`, nil, true},
		{"minimum on string", `{"a": {"type": "string", "minimum": 1}}`, nil, true},
		{"minimum above maximum", `{"a": {"type": "number", "minimum": 2, "maximum": 1}}`, nil, true},
		{"enum of wrong type", `{"a": {"type": "integer", "enum": ["x"]}}`, nil, true},
		{"empty enum", `{"a": {"type": "string", "enum": []}}`, nil, true},
		{"fragment not an object", `{"a": "string"}`, nil, true},
		{"reserved name", `{"geometry": {"type": "string"}}`, nil, true},
		{"reserved id", `{"feature_id": {"type": "string"}}`, nil, true},
		{"bad name", `{"has space": {"type": "string"}}`, nil, true},
		{"empty name", `{"": {"type": "string"}}`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.raw), &raw); err != nil {
				t.Fatal(err)
			}
			got, err := ParseFieldSchema(raw)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidSchema) {
					t.Fatalf("err = %v, want ErrInvalidSchema", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			// The map[string]any form parses the same.
			var anyRaw map[string]any
			json.Unmarshal([]byte(tc.raw), &anyRaw)
			got2, err := ParseFieldSchema(anyRaw)
			if err != nil || !reflect.DeepEqual(got2, tc.want) {
				t.Fatalf("map[string]any form: %+v, %v", got2, err)
			}
			// And survives a JSON round trip.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back FieldSchema
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, got) {
				t.Fatalf("round trip: %+v\nwant %+v", back, got)
			}
		})
	}
}

func TestFieldSchemaCheck(t *testing.T) {
	fs := testSchema(t)
	base := func() map[string]any { return map[string]any{"name": "x", "area_m2": 1.0} }
	with := func(k string, v any) map[string]any {
		m := base()
		m[k] = v
		return m
	}
	without := func(k string) map[string]any {
		m := base()
		delete(m, k)
		return m
	}
	tests := []struct {
		name      string
		props     map[string]any
		wantField string // "" means valid
	}{
		{"minimal", base(), ""},
		{"all null", map[string]any{"name": "x", "area_m2": 1.0, "code": nil, "count": nil, "active": nil, "listed": nil, "updated": nil}, ""},
		{"integer from float", with("count", 3.0), ""},
		{"integer from json.Number", with("count", json.Number("9007199254740993")), ""},
		{"integer from exponent", with("count", json.Number("1e3")), ""},
		{"integer from int", with("count", 7), ""},
		{"integer from uint64", with("count", uint64(7)), ""},
		{"number from int", with("area_m2", 2), ""},
		{"number from json.Number", with("area_m2", json.Number("2.5")), ""},
		{"date", with("listed", "2024-02-29"), ""},
		{"date from time", with("listed", time.Date(2024, 2, 29, 13, 0, 0, 0, time.UTC)), ""},
		{"date-time with offset", with("updated", "2024-01-02T03:04:05+10:00"), ""},
		{"date-time from time", with("updated", time.Now()), ""},
		{"missing required", without("name"), "name"},
		{"null required", with("name", nil), "name"},
		{"unknown property", with("colour", "red"), "colour"},
		{"string as number", with("name", 5), "name"},
		{"fractional integer", with("count", 1.5), "count"},
		{"integer too large", with("count", 9.3e18), "count"},
		{"integer json too large", with("count", json.Number("9223372036854775808")), "count"},
		{"uint64 too large", with("count", uint64(math.MaxUint64)), "count"},
		{"integer from string", with("count", "3"), "count"},
		{"NaN number", with("area_m2", math.NaN()), "area_m2"},
		{"infinite number", with("area_m2", math.Inf(1)), "area_m2"},
		{"below minimum", with("area_m2", -0.5), "area_m2"},
		{"boolean from string", with("active", "true"), "active"},
		{"bad date", with("listed", "2023-02-29"), "listed"},
		{"date-time as date", with("updated", "2024-01-02"), "updated"},
		{"date as number", with("listed", 20240101), "listed"},
		{"invalid UTF-8", with("name", "\xff"), "name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := fs.Check(tc.props)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var pe *PropertyError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidProperties) {
				t.Fatalf("err = %v, want a PropertyError", err)
			}
			if pe.Field != tc.wantField {
				t.Fatalf("error names %q, want %q (%v)", pe.Field, tc.wantField, err)
			}
		})
	}
}

func TestFieldSchemaEnum(t *testing.T) {
	fs, err := ParseFieldSchema(map[string]any{
		"level": map[string]any{"type": []any{"string", "null"}, "enum": []any{"low", "high", nil}},
		"n":     map[string]any{"type": "integer", "enum": []any{1, 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []map[string]any{{"level": "low", "n": 1}, {"level": nil, "n": 2.0}, {"n": json.Number("2")}} {
		if err := fs.Check(ok); err != nil {
			t.Errorf("Check(%v): %v", ok, err)
		}
	}
	for _, bad := range []map[string]any{{"level": "mid", "n": 1}, {"n": 3}} {
		if err := fs.Check(bad); !errors.Is(err, ErrInvalidProperties) {
			t.Errorf("Check(%v) = %v, want ErrInvalidProperties", bad, err)
		}
	}
}

func TestFieldSchemaNormalize(t *testing.T) {
	fs := testSchema(t)
	got, err := fs.Normalize(map[string]any{
		"name": "x", "area_m2": 2, "count": json.Number("5"),
		"listed":  time.Date(2024, 3, 1, 23, 0, 0, 0, time.UTC),
		"updated": "2024-01-02T13:04:05.1234567+10:00",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "x", "area_m2": 2.0, "count": int64(5), "code": nil, "active": nil,
		"listed": "2024-03-01", "updated": "2024-01-02T03:04:05.123456Z",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestFieldSchemaJSONSchema(t *testing.T) {
	fs := testSchema(t)
	js := fs.JSONSchema()
	b, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,` +
		`"properties":{"active":{"type":["boolean","null"]},"area_m2":{"minimum":0,"type":"number"},` +
		`"code":{"type":["string","null"]},"count":{"type":["integer","null"]},` +
		`"listed":{"format":"date","type":["string","null"]},"name":{"description":"display name","type":"string"},` +
		`"updated":{"format":"date-time","type":["string","null"]}},"required":["area_m2","name"],"type":"object"}`
	if string(b) != want {
		t.Fatalf("JSONSchema =\n%s\nwant\n%s", b, want)
	}

	// The published schema and Check agree, judged by a real JSON Schema
	// 2020-12 validator.
	var s openapi3.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		doc   string
		valid bool
	}{
		{`{"name":"x","area_m2":1}`, true},
		{`{"name":"x","area_m2":1,"count":null,"listed":"2024-01-02","updated":"2024-01-02T03:04:05Z"}`, true},
		{`{"area_m2":1}`, false},
		{`{"name":"x","area_m2":-1}`, false},
		{`{"name":"x","area_m2":1,"extra":1}`, false},
		{`{"name":"x","area_m2":1,"count":1.5}`, false},
		{`{"name":"x","area_m2":1,"active":"yes"}`, false},
		{`{"name":null,"area_m2":1}`, false},
	}
	for _, c := range cases {
		var doc map[string]any
		dec := json.NewDecoder(stringsReader(c.doc))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		var plain any
		json.Unmarshal([]byte(c.doc), &plain)
		schemaErr := s.VisitJSON(plain, openapi3.EnableJSONSchema2020())
		checkErr := fs.Check(doc)
		if (schemaErr == nil) != c.valid || (checkErr == nil) != c.valid {
			t.Errorf("%s: JSON Schema says %v, Check says %v, want valid=%v", c.doc, schemaErr, checkErr, c.valid)
		}
	}
}

func BenchmarkFieldSchemaCheck(b *testing.B) {
	fs := testSchema(b)
	props := map[string]any{"name": "x", "area_m2": 1.0, "count": 3.0, "listed": "2024-01-02", "updated": "2024-01-02T03:04:05Z", "active": true, "code": "c"}
	b.ReportAllocs()
	for b.Loop() {
		if err := fs.Check(props); err != nil {
			b.Fatal(err)
		}
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// FuzzFieldSchemaJSON: field_schema comes from layer.json files; parsing
// never panics and accepted schemas round-trip through JSON.
func FuzzFieldSchemaJSON(f *testing.F) {
	f.Add([]byte(`{"a":{"type":["integer","null"],"minimum":0},"d":{"type":"string","format":"date","enum":["2024-01-01"]}}`))
	f.Add([]byte(`{"x":{"type":"number","maximum":1e308}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fs FieldSchema
		if err := json.Unmarshal(data, &fs); err != nil {
			return
		}
		b, err := json.Marshal(fs)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var back FieldSchema
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("re-parse %s: %v", b, err)
		}
		if !reflect.DeepEqual(fs, back) {
			t.Fatalf("round trip changed %s", b)
		}
		fs.JSONSchema()
	})
}
