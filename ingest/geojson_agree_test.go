package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/engine/geo"
)

// The service has two strict GeoJSON geometry decoders: geo.DecodeGeometry
// for client sites and decodeGeoJSONGeometry for source rows (which reads
// in place inside a feature, skips foreign members such as a legacy crs,
// ignores bbox, drops ordinates past the second, and leaves topology and
// the coordinate range to later stages because positions may be MGA
// metres). FuzzGeoJSONDecodersAgree holds them equal where they overlap.

// ingestDecode reads raw as a feature's geometry member is read, then
// requires the whole input consumed and a geometry (not null).
func ingestDecode(raw []byte, maxVertices int) (orb.Geometry, error) {
	p := &jparser{b: raw}
	g, err := decodeGeoJSONGeometry(p, maxVertices)
	if err != nil {
		return nil, err
	}
	if p.peek() != 0 {
		return nil, p.syntax("the end of input")
	}
	if g == nil {
		return nil, errors.New("null geometry")
	}
	return g, nil
}

// usesIngestLeniency reports whether raw is a JSON object that only
// ingest's decoder may accept: a member other than type and coordinates
// (bbox included, which ingest does not check), a duplicate member, or a
// position of more than 3 numbers. It is false for anything that is not
// valid JSON.
func usesIngestLeniency(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	lenient := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := tok.(string)
		if seen[key] || (key != "type" && key != "coordinates") {
			lenient = true
		}
		seen[key] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if key == "coordinates" && longPosition(v) {
			lenient = true
		}
	}
	if _, err := dec.Token(); err != nil {
		return false
	}
	return lenient
}

// longPosition reports whether v holds an array of more than 3 numbers.
func longPosition(v any) bool {
	a, ok := v.([]any)
	if !ok {
		return false
	}
	numbers := len(a) > 0
	for _, e := range a {
		if _, ok := e.(json.Number); !ok {
			numbers = false
		}
		if longPosition(e) {
			return true
		}
	}
	return numbers && len(a) > 3
}

func FuzzGeoJSONDecodersAgree(f *testing.F) {
	for _, s := range []string{
		`{"type":"Point","coordinates":[151.2,-33.8]}`,
		`{"type":"Point","coordinates":[151.2,-33.8,12]}`,
		`{"coordinates":[151.2,-33.8],"type":"Point"}`,
		`{"type":"MultiPoint","coordinates":[[151,-33],[151.1,-33.1]]}`,
		`{"type":"LineString","coordinates":[[151,-33],[151.1,-33.1]]}`,
		`{"type":"MultiLineString","coordinates":[[[151,-33],[151.1,-33.1]],[[150,-32],[150.5,-32.5]]]}`,
		`{"type":"Polygon","coordinates":[[[151,-33],[151.01,-33],[151.01,-33.01],[151,-33],[151,-33]]]}`,
		`{"type":"Polygon","coordinates":[[[151,-33],[151.01,-33],[151.01,-33.01],[151,-33.01],[151,-33]]]}`,
		`{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}`,
		`{"type":"MultiPolygon","coordinates":[[[[151,-33],[151.01,-33],[151.01,-33.01],[151,-33]]]]}`,
		`{"type":"Point","coordinates":[151.2,-33.8],"bbox":[151.2,-33.8,151.2,-33.8]}`,
		`{"type":"Point","coordinates":[151.2,-33.8],"crs":{"type":"name"}}`,
		`{"type":"Point","coordinates":[151.2,-33.8,1,2]}`,
		`{"type":"Point","type":"Point","coordinates":[1,2]}`,
		`{"type":"Point","coordinates":[500000,6250000]}`,
		`{"type":"Point","coordinates":["1",2]}`,
		`{"type":"Point","coordinates":[1e400,2]}`,
		`{"type":"Point","coordinates":[-0,2.5e-3]}`,
		`{"type":"point","coordinates":[1,2]}`,
		`{"type":"GeometryCollection","geometries":[]}`,
		`{"type":"LineString","coordinates":[[1,2],[1,2]]}`,
		`{"type":"Point","coordinates":[1,2]} x`,
		`{"type":"Point"}`,
		`{"coordinates":[[1,2]]}`,
		`null`,
		`{"type":"Poly\u0067on","coordinates":[]}`,
		`[1,2]`,
	} {
		f.Add([]byte(s))
	}
	const maxVertices = 64
	f.Fuzz(func(t *testing.T, raw []byte) {
		gg, gerr := geo.DecodeGeometry(raw, maxVertices)
		ig, ierr := ingestDecode(raw, maxVertices)
		if gerr == nil {
			// What the strict decoder accepts, ingest reads identically
			// and its structural checks pass.
			if ierr != nil {
				t.Fatalf("%q: geo accepts, ingest refuses: %v", raw, ierr)
			}
			if !orb.Equal(gg, ig) {
				t.Fatalf("%q: geo decodes %v, ingest %v", raw, gg, ig)
			}
			all := map[string]bool{}
			for _, ty := range GeometryTypes {
				all[ty] = true
			}
			if err := checkStructure(ig, all); err != nil {
				t.Fatalf("%q: geo accepts, ingest's structure check refuses: %v", raw, err)
			}
			if err := checkRange(ig); err != nil {
				t.Fatalf("%q: geo accepts, ingest's range check refuses: %v", raw, err)
			}
			return
		}
		if ierr != nil || usesIngestLeniency(raw) {
			return // both refuse, or ingest accepts by design
		}
		// Ingest accepts what geo refuses: only for geo.Validate's rules
		// (topology, range), which ingest applies later or not at all;
		// never for the syntax they share.
		if err := geo.Validate(ig, maxVertices); err == nil {
			t.Fatalf("%q: geo refuses (%v) what ingest decodes as %v, a valid geometry", raw, gerr, ig)
		}
	})
}
