package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestDecodeBodyStrictness: what encoding/json would silently accept is
// refused with the right code, naming the place by its JSON path.
func TestDecodeBodyStrictness(t *testing.T) {
	type ref struct {
		Namespace string `json:"namespace"`
		Reference string `json:"reference"`
	}
	type dst struct {
		Name   string          `json:"name"`
		SiteID string          `json:"site_id"`
		Ref    *ref            `json:"external_reference"`
		Site   json.RawMessage `json:"site"`
		Keys   []string        `json:"section_keys"`
	}
	cases := []struct {
		name, body, code string
		fields           []string
	}{
		{"valid", `{"name":"a","site":{"geometry":{"type":"Point","coordinates":[1,2]}},"section_keys":["x"]}`, "", nil},
		{"escaped U+FFFD is fine", `{"name":"\ufffd"}`, "", nil},
		{"invalid UTF-8 in a value", "{\"name\":\"a\xffb\"}", "invalid_json", []string{"name"}},
		{"invalid UTF-8 deep", "{\"site\":{\"geometry\":{\"type\":\"Po\xc3\x28int\"}}}", "invalid_json", []string{"site.geometry.type"}},
		{"invalid UTF-8 in an array", "{\"section_keys\":[\"ok\",\"\xed\xa0\x80\"]}", "invalid_json", []string{"section_keys[1]"}},
		{"invalid UTF-8 in a key", "{\"site\":{\"ge\xffo\":1}}", "invalid_json", []string{"site.ge\ufffdo"}},
		{"duplicate key", `{"site_id":"a","site_id":"b"}`, "invalid_json", []string{"site_id"}},
		{"duplicate key deep", `{"site":{"geometry":{"type":"Point","coordinates":[1,2],"type":"Polygon"}}}`, "invalid_json", []string{"site.geometry.type"}},
		{"duplicate key in an array element", `{"site":{"a":[{"k":1},{"k":1,"k":2}]}}`, "invalid_json", []string{"site.a[1].k"}},
		{"duplicate key by case", `{"external_reference":{"namespace":"a","Namespace":"b","reference":"r"}}`, "invalid_json", []string{"external_reference.Namespace"}},
		{"same key in sibling objects is fine", `{"site":{"a":{"k":1},"b":{"k":1}}}`, "", nil},
		{"escaped NUL in a value", `{"name":"a\u0000b"}`, "invalid_request", []string{"name"}},
		{"escaped NUL deep", `{"external_reference":{"namespace":"crm","reference":"\u0000"}}`, "invalid_request", []string{"external_reference.reference"}},
		{"escaped NUL in a key", `{"site":{"k\u0000":1}}`, "invalid_request", []string{`site.k\u0000`}},
		{"raw NUL is not JSON", "{\"name\":\"a\x00\"}", "invalid_json", []string{"name"}},
		{"second value", `{"name":"a"} {"name":"b"}`, "invalid_json", nil},
		{"trailing garbage", `{"name":"a"} x`, "invalid_json", nil},
		{"truncated", `{"name":"a",`, "invalid_json", []string{"body"}},
		{"truncated value", `{"site":{"geometry":`, "invalid_json", []string{"site.geometry"}},
		{"not an object", `["a","a"]`, "invalid_request", []string{"body"}},
		{"unknown field", `{"name":"a","colour":1}`, "invalid_request", []string{"colour"}},
		{"unknown field by case", `{"Name":"a"}`, "invalid_request", []string{"Name"}},
		{"huge number is not a syntax error", `{"site":{"n":1e400}}`, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d dst
			err := decodeBody("application/json", []byte(c.body), &d)
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var p *Problem
			if !errors.As(err, &p) {
				t.Fatalf("error %v, want a Problem %s", err, c.code)
			}
			if string(p.Code) != c.code {
				t.Fatalf("code %s, want %s: %s %+v", p.Code, c.code, p.Detail, p.FieldErrors)
			}
			var got []string
			for _, fe := range p.FieldErrors {
				got = append(got, fe.Field)
			}
			for _, f := range c.fields {
				if !slices.Contains(got, f) {
					t.Fatalf("field_errors %+v do not name %q", p.FieldErrors, f)
				}
			}
		})
	}
}

// TestScanJSONDepth: nesting is bounded before the decoder sees it.
func TestScanJSONDepth(t *testing.T) {
	body := `{"site":` + strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1) + `}`
	var d struct {
		Site any `json:"site"`
	}
	err := decodeBody("application/json", []byte(body), &d)
	var p *Problem
	if !errors.As(err, &p) || p.Code != "invalid_json" {
		t.Fatalf("deep nesting: %v", err)
	}
}

// BenchmarkDecodeBody: a 10,000-vertex site and a maximally nested body,
// both near the 1 MiB limit; scanning stays linear.
func BenchmarkDecodeBody(b *testing.B) {
	var coords strings.Builder
	for i := range 10000 {
		if i > 0 {
			coords.WriteByte(',')
		}
		fmt.Fprintf(&coords, "[151.%06d,-33.%06d]", i, i)
	}
	bodies := map[string][]byte{
		"vertices": []byte(`{"site":{"kind":"geometry","geometry":{"type":"Polygon","coordinates":[[` + coords.String() + `]]}}}`),
		"nested":   []byte(`{"site":` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`),
		"keys":     []byte(`{"site":{` + strings.Repeat(`"k":1,`, 100000) + `"k":1}}`),
	}
	for name, body := range bodies {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var d struct {
					Site json.RawMessage `json:"site"`
				}
				_ = decodeBody("application/json", body, &d)
			}
		})
	}
}

// TestFoldKey: keys fold together exactly when strings.EqualFold says so.
func TestFoldKey(t *testing.T) {
	keys := []string{"name", "Name", "NAME", "kelvin", "\u212Aelvin", "Kelvin", "ſite", "site", "SITE", "straße", "STRASSE", "Σίσυφος", "σίσυφος", "ς", "σ", "Σ", "", "a\x00", "A\x00", "\uFFFD"}
	for _, a := range keys {
		for _, b := range keys {
			if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
				t.Errorf("%q %q: folded equal %v, EqualFold %v", a, b, got, want)
			}
		}
	}
	if k := "site_id"; foldKey(k) != k {
		t.Errorf("foldKey(%q) = %q", k, foldKey(k))
	}
}
