package geo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/internal/jsonscan"
)

// ReadGeometry is the service's one GeoJSON geometry reader: site
// geometry (the API, DecodeGeometry) and source rows (ingest, Source mode)
// differ only in its options. FuzzReadGeometry holds both modes to
// encoding/json: what each accepts, and the geometry it builds, is what a
// reading of the same bytes with encoding/json says it should be.

// addCorpus adds testdata/geojson_corpus.txt (shared with ingest's
// FuzzSourceChecks) to f.
func addCorpus(f *testing.F, path string) {
	file, err := os.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			f.Add([]byte(line))
		}
	}
	if err := sc.Err(); err != nil {
		f.Fatal(err)
	}
}

// refMember is a member of a JSON object as encoding/json reads it.
type refMember struct {
	key string
	val any // json.Number for numbers
}

// refObject reads raw as one JSON object with encoding/json, keeping its
// members in order (duplicates included). ok is false when raw is not one
// JSON object; isNull when it is null.
func refObject(raw []byte) (members []refMember, isNull, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, false, false
	}
	if tok == nil {
		_, err := dec.Token()
		return nil, true, err != nil && errors.Is(err, io.EOF)
	}
	if tok != json.Delim('{') {
		return nil, false, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, false
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, false, false
		}
		members = append(members, refMember{tok.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false, false
	}
	return members, false, true
}

// refRules are what the two modes require of a geometry.
type refRules struct {
	source      bool
	maxVertices int
}

// refGeometry builds the geometry that members describe under the rules,
// or ok false where the reader must refuse it.
func refGeometry(members []refMember, rules refRules) (orb.Geometry, bool) {
	var typ, coords any
	seen := map[string]bool{}
	for _, m := range members {
		switch m.key {
		case "type":
			typ = m.val
		case "coordinates":
			coords = m.val
		case "bbox":
			if !rules.source && !refBBox(m.val) {
				return nil, false
			}
		default:
			if !rules.source {
				return nil, false
			}
		}
		if seen[m.key] && !rules.source {
			return nil, false
		}
		seen[m.key] = true
	}
	name, _ := typ.(string)
	depth, known := geometryDepth[name]
	if !known || coords == nil {
		return nil, false
	}
	count := 0
	var pos func(v any) (orb.Point, bool)
	pos = func(v any) (orb.Point, bool) {
		a, ok := v.([]any)
		if !ok || len(a) < 2 || (!rules.source && len(a) > 3) {
			return orb.Point{}, false
		}
		count++
		var p orb.Point
		for i, e := range a {
			n, ok := e.(json.Number)
			if !ok {
				return p, false
			}
			f, _ := strconv.ParseFloat(string(n), 64)
			if math.IsInf(f, 0) {
				return p, false
			}
			if i < 2 {
				p[i] = f
			}
		}
		return p, true
	}
	list := func(v any, elem func(any) bool) bool {
		a, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range a {
			if !elem(e) {
				return false
			}
		}
		return true
	}
	points := func(v any) ([]orb.Point, bool) {
		var out []orb.Point
		ok := list(v, func(e any) bool {
			p, ok := pos(e)
			out = append(out, p)
			return ok
		})
		return out, ok
	}
	polygon := func(v any) (orb.Polygon, bool) {
		var out orb.Polygon
		ok := list(v, func(e any) bool {
			ps, ok := points(e)
			out = append(out, ps)
			return ok
		})
		return out, ok
	}
	var g orb.Geometry
	ok := false
	switch depth {
	case 0:
		g, ok = pos(coords)
	case 1:
		var ps []orb.Point
		ps, ok = points(coords)
		if name == "MultiPoint" {
			g = orb.MultiPoint(ps)
		} else {
			g = orb.LineString(ps)
		}
	case 2:
		if name == "Polygon" {
			g, ok = polygon(coords)
			break
		}
		var mls orb.MultiLineString
		ok = list(coords, func(e any) bool {
			ps, ok := points(e)
			mls = append(mls, ps)
			return ok
		})
		g = mls
	case 3:
		var mp orb.MultiPolygon
		ok = list(coords, func(e any) bool {
			pg, ok := polygon(e)
			mp = append(mp, pg)
			return ok
		})
		g = mp
	}
	if !ok || (rules.maxVertices > 0 && count > rules.maxVertices) {
		return nil, false
	}
	return g, true
}

// refBBox: an array of 4 or 6 finite numbers.
func refBBox(v any) bool {
	a, ok := v.([]any)
	if !ok || (len(a) != 4 && len(a) != 6) {
		return false
	}
	for _, e := range a {
		n, ok := e.(json.Number)
		if !ok {
			return false
		}
		if f, _ := strconv.ParseFloat(string(n), 64); math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

// readSource reads raw as ingest reads a feature's geometry member, and
// requires the whole input read.
func readSource(raw []byte, maxVertices int) (orb.Geometry, error) {
	s := jsonscan.Scanner{B: raw}
	g, err := ReadGeometry(&s, ReadOptions{MaxVertices: maxVertices, Source: true})
	if err != nil {
		return nil, err
	}
	if !s.AtEnd() {
		return nil, s.Syntax("the end of input")
	}
	return g, nil
}

func hasDuplicateMember(members []refMember) bool {
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m.key] {
			return true
		}
		seen[m.key] = true
	}
	return false
}

func FuzzReadGeometry(f *testing.F) {
	addCorpus(f, "testdata/geojson_corpus.txt")
	const maxVertices = 64
	f.Fuzz(func(t *testing.T, raw []byte) {
		members, isNull, isObject := refObject(raw)

		// Site geometry: exactly what encoding/json and the rules say.
		s := jsonscan.Scanner{B: raw}
		sg, serr := ReadGeometry(&s, ReadOptions{MaxVertices: maxVertices})
		if serr != nil {
			var ve *ValidationError
			if !errors.As(serr, &ve) {
				t.Fatalf("%q: site error is not a *ValidationError: %v", raw, serr)
			}
		}
		want, ok := refGeometry(members, refRules{maxVertices: maxVertices})
		ok = ok && isObject
		switch {
		case ok && serr != nil:
			t.Fatalf("%q: encoding/json reads a site geometry, the reader refuses: %v", raw, serr)
		case !ok && serr == nil:
			t.Fatalf("%q: the reader accepts %v, not a site geometry by encoding/json", raw, sg)
		case ok && !orb.Equal(sg, want):
			t.Fatalf("%q: the reader reads %v, encoding/json %v", raw, sg, want)
		}
		if dg, err := DecodeGeometry(raw, maxVertices); err == nil && !orb.Equal(dg, sg) {
			t.Fatalf("%q: DecodeGeometry gives %v, ReadGeometry %v", raw, dg, sg)
		}

		// Source geometry: the same where the input is valid JSON (a
		// source skips the members it does not use without unescaping
		// their strings) and without duplicate members (the reader keeps
		// the coordinates read with the type seen then).
		ig, ierr := readSource(raw, maxVertices)
		if serr == nil && (ierr != nil || !orb.Equal(ig, sg)) {
			t.Fatalf("%q: a site geometry %v read as a source gives %v, %v", raw, sg, ig, ierr)
		}
		if !json.Valid(raw) {
			if ierr == nil && !bytes.Contains(raw, []byte(`\`)) {
				t.Fatalf("%q: invalid JSON read as a source geometry %v", raw, ig)
			}
			return
		}
		if hasDuplicateMember(members) {
			return
		}
		if isNull {
			if ierr != nil || ig != nil {
				t.Fatalf("%q: null read as a source geometry gives %v, %v", raw, ig, ierr)
			}
			return
		}
		want, ok = refGeometry(members, refRules{source: true, maxVertices: maxVertices})
		ok = ok && isObject
		switch {
		case ok && ierr != nil:
			t.Fatalf("%q: encoding/json reads a source geometry, the reader refuses: %v", raw, ierr)
		case !ok && ierr == nil:
			t.Fatalf("%q: the reader accepts %v, not a source geometry by encoding/json", raw, ig)
		case ok && !orb.Equal(ig, want):
			t.Fatalf("%q: the reader reads %v, encoding/json %v", raw, ig, want)
		}
	})
}
