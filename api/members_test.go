package api

import (
	"bytes"
	"encoding/json"
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
