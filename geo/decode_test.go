package geo

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
)

func TestDecodeGeometry(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want orb.Geometry
	}{
		{"point", `{"type":"Point","coordinates":[151.2,-33.8]}`, orb.Point{151.2, -33.8}},
		{"point with altitude", `{"type":"Point","coordinates":[151.2,-33.8,12.5]}`, orb.Point{151.2, -33.8}},
		{"coordinates first", `{"coordinates":[1,2],"type":"Point"}`, orb.Point{1, 2}},
		{"white space and exponent", " {\n\t\"type\" : \"Point\" ,\r\n \"coordinates\" : [ 1.5e1 , -2E-1 ] } \n", orb.Point{15, -0.2}},
		{"escaped type", `{"type":"Poin\u0074","coordinates":[0,0]}`, orb.Point{0, 0}},
		{"bbox", `{"type":"Point","bbox":[1,2,1,2],"coordinates":[1,2]}`, orb.Point{1, 2}},
		{"multipoint", `{"type":"MultiPoint","coordinates":[[1,2],[3,4]]}`, orb.MultiPoint{{1, 2}, {3, 4}}},
		{"linestring", `{"type":"LineString","coordinates":[[1,2],[3,4]]}`, orb.LineString{{1, 2}, {3, 4}}},
		{"multilinestring", `{"type":"MultiLineString","coordinates":[[[1,2],[3,4]],[[5,6],[7,8]]]}`, orb.MultiLineString{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}},
		{"polygon", `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`, orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}},
		{"polygon, coordinates first", `{"coordinates":[[[0,0],[1,0],[1,1],[0,0]]],"type":"Polygon"}`, orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}},
		{"multipolygon", `{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]]]]}`,
			orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}, {{{5, 5}, {6, 5}, {6, 6}, {5, 5}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := DecodeGeometry([]byte(tt.in), 10000)
			if err != nil {
				t.Fatal(err)
			}
			if !orb.Equal(g, tt.want) {
				t.Errorf("DecodeGeometry = %#v, want %#v", g, tt.want)
			}
		})
	}
}

func TestDecodeGeometryRejects(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		path   string
		reason string // substring
	}{
		{"empty", ``, "", "missing"},
		{"null", `null`, "", "must be a JSON object"},
		{"array", `[1,2]`, "", "must be a JSON object"},
		{"not json", `{"type":"Point",}`, "", "invalid JSON"},
		{"truncated", `{"type":"Point","coordinates":[1,`, "", "unexpected end of input"},
		{"trailing garbage", `{"type":"Point","coordinates":[1,2]}x`, "", "end of input after the geometry"},
		{"two objects", `{"type":"Point","coordinates":[1,2]}{}`, "", "end of input after the geometry"},
		{"missing type", `{"coordinates":[1,2]}`, "type", "missing"},
		{"missing coordinates", `{"type":"Point"}`, "coordinates", "missing"},
		{"empty object", `{}`, "type", "missing"},
		{"unknown type", `{"type":"Circle","coordinates":[1,2]}`, "type", `"Circle" is not allowed`},
		{"lower-case type", `{"type":"point","coordinates":[1,2]}`, "type", "not allowed"},
		{"collection", `{"type":"GeometryCollection","geometries":[]}`, "type", "not allowed"},
		{"feature", `{"type":"Feature","geometry":null}`, "type", "not allowed"},
		{"type not a string", `{"type":7,"coordinates":[1,2]}`, "type", "must be a string"},
		{"unknown member", `{"type":"Point","coordinates":[1,2],"crs":{"type":"name"}}`, "crs", "unknown member"},
		{"duplicate type", `{"type":"Point","type":"Point","coordinates":[1,2]}`, "type", "duplicate"},
		{"duplicate coordinates", `{"type":"Point","coordinates":[1,2],"coordinates":[1,2]}`, "coordinates", "duplicate"},
		{"bad bbox", `{"type":"Point","bbox":[1,2,3],"coordinates":[1,2]}`, "bbox", "4 or 6"},
		{"NaN", `{"type":"Point","coordinates":[NaN,2]}`, "coordinates", "expected a number"},
		{"Infinity", `{"type":"Point","coordinates":[1,Infinity]}`, "coordinates", "expected a number"},
		{"-Infinity", `{"type":"Point","coordinates":[1,-Infinity]}`, "coordinates", "invalid JSON"},
		{"overflow", `{"type":"Point","coordinates":[1e999,2]}`, "coordinates", "out of range"},
		{"string number", `{"type":"Point","coordinates":["1",2]}`, "coordinates", "expected a number"},
		{"null number", `{"type":"Point","coordinates":[null,2]}`, "coordinates", "expected a number"},
		{"leading plus", `{"type":"Point","coordinates":[+1,2]}`, "coordinates", "expected a number"},
		{"leading zero", `{"type":"Point","coordinates":[01,2]}`, "", "invalid JSON"},
		{"hex", `{"type":"Point","coordinates":[0x1,2]}`, "", "invalid JSON"},
		{"bare dot", `{"type":"Point","coordinates":[1.,2]}`, "coordinates", "invalid JSON"},
		{"one number", `{"type":"Point","coordinates":[1]}`, "coordinates", "needs longitude and latitude"},
		{"four numbers", `{"type":"Point","coordinates":[1,2,3,4]}`, "coordinates", "at most 3"},
		{"point too deep", `{"type":"Point","coordinates":[[1,2]]}`, "coordinates", "wrong nesting"},
		{"polygon too shallow", `{"type":"Polygon","coordinates":[[0,0],[1,0],[1,1],[0,0]]}`, "coordinates[0][0]", "wrong nesting"},
		{"polygon too deep", `{"type":"Polygon","coordinates":[[[[0,0]]]]}`, "coordinates[0][0]", "wrong nesting"},
		{"multipolygon too shallow", `{"type":"MultiPolygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`, "coordinates[0][0][0]", "wrong nesting"},
		{"coordinates object", `{"type":"Point","coordinates":{}}`, "coordinates", "expected a position"},
		{"coordinates object, type after", `{"coordinates":{},"type":"Point"}`, "coordinates", "array of numbers"},
		{"wrong nesting, type after", `{"coordinates":[[1,2]],"type":"Point"}`, "coordinates", "wrong nesting"},
		{"latitude out of range", `{"type":"LineString","coordinates":[[1,2],[3,-95]]}`, "coordinates[1]", "latitude -95 out of range"},
		{"ring not closed", `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}`, "coordinates[0]", "not closed"},
		{"bow tie", `{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}`, "coordinates[0]", "self-intersects"},
		{"too many", `{"type":"MultiPoint","coordinates":[[1,2],[1,2],[1,2],[1,2]]}`, "coordinates", "more than 3 positions"},
		{"too many, type after", `{"coordinates":[[1,2],[1,2],[1,2],[1,2]],"type":"MultiPoint"}`, "coordinates", "more than 3 positions"},
		{"control character", "{\"type\":\"Po\x01int\",\"coordinates\":[1,2]}", "", "invalid JSON"},
		{"bad escape", `{"type":"Po\qint","coordinates":[1,2]}`, "", "invalid JSON"},
		{"deep nesting", `{"coordinates":[[[[[[[[[[1]]]]]]]]]],"type":"Point"}`, "coordinates", "nested too deeply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := DecodeGeometry([]byte(tt.in), 3+9997*boolInt(!strings.HasPrefix(tt.name, "too many")))
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidGeometry) {
				t.Fatalf("DecodeGeometry = %v, %v; want a ValidationError", g, err)
			}
			if ve.Path != tt.path || !strings.Contains(ve.Reason, tt.reason) {
				t.Errorf("got %q %q, want %q, reason containing %q", ve.Path, ve.Reason, tt.path, tt.reason)
			}
			if errors.Is(err, ErrTooManyVertices) != strings.HasPrefix(tt.name, "too many") {
				t.Errorf("ErrTooManyVertices match wrong: %v", err)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hugeMultiPoint returns a MultiPoint of n positions as GeoJSON, with the
// type member first or last.
func hugeMultiPoint(n int, typeFirst bool) []byte {
	var b bytes.Buffer
	if typeFirst {
		b.WriteString(`{"type":"MultiPoint",`)
	} else {
		b.WriteString(`{`)
	}
	b.WriteString(`"coordinates":[[151.2,-33.8]`)
	b.Write(bytes.Repeat([]byte(`,[151.2,-33.8]`), n-1))
	b.WriteString(`]`)
	if !typeFirst {
		b.WriteString(`,"type":"MultiPoint"`)
	}
	b.WriteString(`}`)
	return b.Bytes()
}

// TestDecodeGeometryRefusesEarly checks that a 10-million-vertex input is
// refused after reading about maxVertices positions, allocating little.
func TestDecodeGeometryRefusesEarly(t *testing.T) {
	for _, typeFirst := range []bool{true, false} {
		raw := hugeMultiPoint(10_000_000, typeFirst)
		var err error
		allocs := testing.AllocsPerRun(3, func() { _, err = DecodeGeometry(raw, 10000) })
		if !errors.Is(err, ErrTooManyVertices) {
			t.Fatalf("typeFirst %v: err = %v", typeFirst, err)
		}
		if allocs > 100 {
			t.Errorf("typeFirst %v: %v allocations", typeFirst, allocs)
		}
	}
}

// TestDecodeGeometryMatchesOrb checks DecodeGeometry against orb's own
// GeoJSON decoder on valid input.
func TestDecodeGeometryMatchesOrb(t *testing.T) {
	for _, g := range []orb.Geometry{
		orb.Point{151.2108, -33.8523},
		orb.MultiPoint{{1, 2}, {3, 4}},
		orb.LineString{{1, 2}, {3, 4}, {5, 7}},
		orb.MultiLineString{{{1, 2}, {3, 4}}},
		orb.Polygon{sqr(0, 0, 10), sqr(2, 2, 2)},
		orb.MultiPolygon{{sqr(0, 0, 1)}, {sqr(2, 2, 1)}},
		comb(100),
	} {
		raw, err := json.Marshal(geojson.NewGeometry(g))
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeGeometry(raw, 0)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		want, err := geojson.UnmarshalGeometry(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !orb.Equal(got, want.Coordinates) {
			t.Errorf("%s: got %v", raw, got)
		}
	}
}

func FuzzDecodeGeometry(f *testing.F) {
	for _, s := range []string{
		`{"type":"Point","coordinates":[151.2,-33.8]}`,
		`{"coordinates":[[1,2],[3,4]],"type":"LineString"}`,
		`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`,
		`{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,10],[0,0]],[[2,2],[3,2],[3,3],[2,2]]]}`,
		`{"type":"MultiPolygon","bbox":[0,0,1,1],"coordinates":[[[[0,0],[1,0],[1,1],[0,0]]]]}`,
		`{"type":"MultiLineString","coordinates":[[[1,2],[3,4]]]}`,
		`{"type":"MultiPoint","coordinates":[[1,2,3]]}`,
		`{"type":"Poin\u0074","coordinates":[1e5,-2E-3]}`,
		`{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}`,
		`[[[[`, `{"coordinates":[[[[[[`, `{"type":"Point","coordinates":[-0.0e+1,1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		g, err := DecodeGeometry(raw, 64)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidGeometry) {
				t.Fatalf("error is not a ValidationError: %v", err)
			}
			if errors.Is(err, ErrTooManyVertices) && !strings.Contains(ve.Reason, "64") {
				t.Fatalf("too many: %v", err)
			}
			return
		}
		// Whatever is accepted is valid, within the limit, and valid JSON.
		if err := Validate(g, 64); err != nil {
			t.Fatalf("accepted an invalid geometry: %v", err)
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
		_ = Fingerprint(g)
	})
}

func BenchmarkDecodeGeometry10k(b *testing.B) {
	raw, err := json.Marshal(geojson.NewGeometry(comb(2490)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeGeometry(raw, 10000); err != nil {
			b.Fatal(err)
		}
	}
}
