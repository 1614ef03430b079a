package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/internal/jsonscan"
)

// The service has one GeoJSON geometry reader, geo.ReadGeometry: site
// geometry for the API and, in Source mode, source rows, which it reads in
// place inside a feature (skipping foreign members such as a legacy crs,
// ignoring bbox, dropping ordinates past the second) and leaves topology
// and the coordinate range to later stages, because positions may be MGA
// metres. geo's FuzzReadGeometry holds both modes to encoding/json.
// FuzzSourceChecks holds ingest's structural and range checks (checkStructure,
// checkRange) to geo.Validate's on the same corpus: what a site may be, a
// source row may be; what ingest accepts and geo refuses is refused only
// for geo.Validate's topology and range rules.

// ingestDecode reads raw as a feature's geometry member is read, then
// requires the whole input consumed and a geometry (not null).
func ingestDecode(raw []byte, maxVertices int) (orb.Geometry, error) {
	p := &jparser{Scanner: jsonscan.Scanner{B: raw}}
	g, err := geo.ReadGeometry(&p.Scanner, geo.ReadOptions{MaxVertices: maxVertices, Source: true})
	if err != nil {
		return nil, err
	}
	if p.Peek() != 0 {
		return nil, p.Syntax("the end of input")
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

func FuzzSourceChecks(f *testing.F) {
	corpus, err := os.ReadFile("../geo/testdata/geojson_corpus.txt")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(corpus), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			f.Add([]byte(line))
		}
	}
	const maxVertices = 64
	f.Fuzz(func(t *testing.T, raw []byte) {
		gg, gerr := geo.DecodeGeometry(raw, maxVertices)
		ig, ierr := ingestDecode(raw, maxVertices)
		if gerr == nil {
			// What a site may be, a source row read in Source mode
			// is too: the same geometry, and ingest's checks pass.
			if ierr != nil {
				t.Fatalf("%q: geo accepts a site, the source read refuses: %v", raw, ierr)
			}
			if !orb.Equal(gg, ig) {
				t.Fatalf("%q: site %v, source %v", raw, gg, ig)
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

// A source row's ring and a site's ring are refused by one rule
// (geo.CheckRing) with the same path and words, whatever the ring's fault.
func TestSourceAndSiteRingsShareOneRule(t *testing.T) {
	sq := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}
	for _, c := range []struct {
		name string
		pg   orb.Polygon
	}{
		{"three positions", orb.Polygon{{{0, 0}, {1, 0}, {0, 0}}}},
		{"open", orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}}},
		{"repeats only", orb.Polygon{{{0, 0}, {1, 0}, {1, 0}, {0, 0}}}},
		{"two distinct positions", orb.Polygon{{{0, 0}, {1, 0}, {0, 0}, {1, 0}, {0, 0}}}},
		{"collinear", orb.Polygon{{{0, 0}, {1, 1}, {2, 2}, {0, 0}}}},
		{"collinear hole", orb.Polygon{sq, {{0.1, 0.1}, {0.2, 0.2}, {0.3, 0.3}, {0.1, 0.1}}}},
		{"collinear in a multipolygon", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var g orb.Geometry = c.pg
			if c.pg == nil {
				g = orb.MultiPolygon{{sq}, {{{0, 0}, {1, 1}, {2, 2}, {0, 0}}}}
			}
			all := map[string]bool{}
			for _, ty := range GeometryTypes {
				all[ty] = true
			}
			src := checkStructure(g, all)
			var site *geo.ValidationError
			if !errors.As(geo.Validate(g, 1000), &site) || src == nil {
				t.Fatalf("source %v, site %v: both must refuse", src, site)
			}
			if src.Path != site.Path || src.Reason != site.Reason {
				t.Fatalf("source %q %q, site %q %q", src.Path, src.Reason, site.Path, site.Reason)
			}
		})
	}
}
