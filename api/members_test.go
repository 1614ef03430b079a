package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzMembers: on valid JSON (decodeBody checks the body before
// decodeSelector splits its selector), members is encoding/json's
// Unmarshal into a map of raw values: the same keys, the same value
// bytes, and an object exactly when Unmarshal takes it as one.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"kind":"point","longitude":151.2,"latitude":-33.8}`,
		` { "kind" : "geometry" , "geometry" : {"type":"Polygon","coordinates":[[[1,2],[3,4]]]} } `,
		`{"k\u0069nd":"x","a":[1,{"b":null}],"c":true,"d":"\"}"}`,
		`{}`, `[]`, `"x"`, `null`, `{"a":1,"a":2}`, `{"a":1}{`, `{"a" 1}`, `{"a":1,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := members(b)
		if !json.Valid(b) || !utf8.Valid(b) {
			return // decodeBody refuses it first; members must only not panic
		}
		var want map[string]json.RawMessage
		err := json.Unmarshal(b, &want)
		isObject := err == nil && want != nil
		if ok != isObject {
			t.Fatalf("%q: object %v, encoding/json %v (%v)", b, ok, isObject, err)
		}
		if !ok {
			return
		}
		if len(m) != len(want) {
			t.Fatalf("%q: %d members, encoding/json %d", b, len(m), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(m[k], v) {
				t.Fatalf("%q: member %q is %q, encoding/json %q", b, k, m[k], v)
			}
		}
	})
}

// FuzzDecodeBodyAsEncodingJSON: decodeBody, which sets json.RawMessage
// fields from the checked body's spans itself (rawFields), decodes what
// encoding/json decodes from a body it accepts, and refuses a mistyped
// field naming the field encoding/json names.
func FuzzDecodeBodyAsEncodingJSON(f *testing.F) {
	type ref struct {
		Namespace string `json:"namespace"`
	}
	type dst struct {
		Name   string          `json:"name"`
		Site   json.RawMessage `json:"site"`
		Ref    *ref            `json:"external_reference"`
		Keys   []string        `json:"section_keys"`
		Radius *float64        `json:"radius_m"`
		Extra  json.RawMessage `json:"extra,omitempty"`
	}
	for _, s := range []string{
		`{"name":"a","site":{"kind":"point","longitude":151.2,"latitude":-33.8},"radius_m":100}`,
		` {"site" : [1, {"a":"\u00e9"}] , "name":"x", "extra": null , "section_keys":["a","b"]} `,
		`{"site":"s","extra":{"k":[true,false,null]},"external_reference":{"namespace":"n"}}`,
		`{"site":1,"name":2}`, `{"radius_m":"far","site":{}}`, `{"section_keys":[1],"extra":[]}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want dst
		err := decodeBody("application/json", b, &got)
		if err != nil {
			var p *Problem
			if errors.As(err, &p) && p.Detail == "A field has the wrong type." {
				var te *json.UnmarshalTypeError
				if werr := json.Unmarshal(b, &want); !errors.As(werr, &te) || (te.Field != p.FieldErrors[0].Field && !(te.Field == "" && p.FieldErrors[0].Field == "body")) {
					t.Fatalf("%q: refused naming %v; encoding/json: %v", b, p.FieldErrors, werr)
				}
			}
			return
		}
		if werr := json.Unmarshal(b, &want); werr != nil {
			t.Fatalf("%q: accepted; encoding/json: %v", b, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded %+v; encoding/json %+v", b, got, want)
		}
	})
}
