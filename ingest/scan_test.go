package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"siteenv/tiles"
)

type scanned struct {
	Row      int64
	Offset   int64
	Raw      string
	Overflow bool
	TooBig   bool
	Err      string
}

func scanAll(r io.Reader, seq, lines bool, maxPos, maxBytes int) ([]scanned, error) {
	s := newJSONScanner(r, maxPos, nil)
	s.buf = make([]byte, 16) // exercise refills
	if maxBytes > 0 {
		s.maxBytes = maxBytes
	}
	s.lineMode = lines
	var out []scanned
	fn := func(f scannedFeature) error {
		sc := scanned{Row: f.Row, Offset: f.Offset, Raw: string(f.Raw), Overflow: f.Overflow, TooBig: f.TooBig}
		if f.Err != nil {
			sc.Err = f.Err.Error()
		}
		out = append(out, sc)
		return nil
	}
	var err error
	if seq {
		err = s.sequence(fn)
	} else {
		err = s.featureCollection(fn, func([]byte, bool) error { return nil })
	}
	return out, err
}

func TestScannerRefills(t *testing.T) {
	f1 := `{"type":"Feature","geometry":{"type":"Point","coordinates":[1.5e2,-33.25]},"properties":{"s":"a \"q\" \u00e9 \\ /","n":null,"t":true,"f":false,"x":[{"y":[]}]}}`
	f2 := `{ "properties" : { } , "geo\u006detry" : { "bbox" : [ 1 , 2 , 3 , 4 ] , "coordinates" : [ [ 1 , 2 ] , [ 3 , 4 ] ] , "type" : "LineString" } , "type" : "Feature" }`
	fc := " {\"features\" : [\n" + f1 + " ,\n " + f2 + "\n ], \"type\":\"FeatureCollection\", \"extra\": {\"a\": [1, \"]\"]}}\n"
	want := []scanned{{Row: 1, Offset: int64(strings.Index(fc, f1)), Raw: f1}, {Row: 2, Offset: int64(strings.Index(fc, f2)), Raw: f2}}
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(fc) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(fc)) },
		"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(fc)) },
	} {
		got, err := scanAll(r(), false, false, 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
	// Positions are counted in the geometry only (not in its bbox or in
	// properties), even under an escaped member name.
	got, _ := scanAll(iotest.OneByteReader(strings.NewReader(fc)), false, false, 1, 0)
	if got[0].Overflow || !got[1].Overflow || got[1].Raw != "" {
		t.Errorf("vertex cap: %+v", got)
	}
	// A feature too large to hold is skipped whole.
	got, err := scanAll(strings.NewReader(fc), false, false, 0, 64)
	if err != nil || len(got) != 2 || !got[0].TooBig || got[0].Raw != "" {
		t.Errorf("size cap: %+v, %v", got, err)
	}
}

func TestScannerSequence(t *testing.T) {
	ok := `{"type":"Feature","geometry":null,"properties":{}}`
	in := "\n" + ok + "\r\n\n" + `{"type":"Feature","geometry":{"coordinates":[NaN,1]}}` + "\n" + ok + " x\n" + `{"a":` + "\n" + ok
	got, err := scanAll(iotest.OneByteReader(strings.NewReader(in)), true, true, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, g := range got {
		if g.Err != "" {
			rows = append(rows, "err: "+g.Err)
		} else {
			rows = append(rows, g.Raw)
		}
	}
	nanAt, xAt, eolAt := strings.Index(in, "NaN"), strings.Index(in, " x\n")+1, strings.Index(in, `{"a":`)+5
	want := []string{ok, fmt.Sprintf("err: invalid JSON at byte %d: NaN and Infinity are not valid JSON numbers", nanAt),
		fmt.Sprintf("err: invalid JSON at byte %d: unexpected 'x' after the feature (one feature per line)", xAt),
		fmt.Sprintf("err: invalid JSON at byte %d: expected a value, found the end of the line", eolAt), ok}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("got\n%q\nwant\n%q", rows, want)
	}
	// Text sequences may span lines; a bad record resyncs at the next RS.
	seq := "\x1e{\"type\":\n \"Feature\"}\n\x1e{\"bad\" 1,\n\"x\":2}\n\x1e" + ok + "\n"
	got, err = scanAll(strings.NewReader(seq), true, false, 0, 0)
	if err != nil || len(got) != 3 || got[0].Raw != "{\"type\":\n \"Feature\"}" || got[1].Err == "" || got[2].Raw != ok {
		t.Errorf("sequence: %+v, %v", got, err)
	}
	// Truncated last record: a reject, not a file error.
	got, err = scanAll(strings.NewReader(ok+"\n"+`{"type":"Fea`), true, true, 0, 0)
	if err != nil || len(got) != 2 || !strings.Contains(got[1].Err, "truncated") {
		t.Errorf("truncated: %+v, %v", got, err)
	}
	if _, err := scanAll(strings.NewReader(" \n\x1e\n"), true, true, 0, 0); !errors.Is(err, errEmptyFile) {
		t.Errorf("empty: %v", err)
	}
}

// TestScannerAgreesWithEncodingJSON: whatever the scanner accepts as a
// FeatureCollection is valid JSON, and it refuses what encoding/json
// refuses.
func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	docs := []string{
		`{"type":"FeatureCollection","features":[]}`,
		`{"type":"FeatureCollection","features":[{}]}`,
		`{"type":"FeatureCollection","features":[1,]}`,
		`{"type":"FeatureCollection","features":[01]}`,
		`{"type":"FeatureCollection","features":[1.]}`,
		`{"type":"FeatureCollection","features":[-]}`,
		`{"type":"FeatureCollection","features":[1e]}`,
		`{"type":"FeatureCollection","features":["\x"]}`,
		`{"type":"FeatureCollection","features":["\u12"]}`,
		"{\"type\":\"FeatureCollection\",\"features\":[\"a\tb\"]}",
		`{"type":"FeatureCollection","features":[tru]}`,
		`{"type":"FeatureCollection","features":[{"a" 1}]}`,
		`{"type":"FeatureCollection","features":[{"a":1,}]}`,
		`{"type":"FeatureCollection","features":[[1 2]]}`,
		`{"type":"FeatureCollection","features":[-0.5e-3, 0, 1E+2, "\ud83d\ude00"]}`,
		`{"type":"FeatureCollection","features":[]`,
		`{"type":"FeatureCollection",}`,
	}
	for _, d := range docs {
		_, err := scanAll(strings.NewReader(d), false, false, 0, 0)
		valid := json.Valid([]byte(d))
		if (err == nil) != valid {
			t.Errorf("%s: scanner err %v, json.Valid %v", d, err, valid)
		}
	}
}

func FuzzSequence(f *testing.F) {
	f.Add([]byte(feat("a", goodPoint, goodProps) + "\n" + `{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[1,2],[3,4],[5,6],[1,2]]]},"properties":null}`))
	f.Add([]byte("\x1e{\"type\":\"Feature\",\"id\":1,\"geometry\":{\"coordinates\":[[1,2]],\"type\":\"MultiPoint\"},\"properties\":{\"count\":1e400}}\n"))
	f.Add([]byte(`{"type":"Feature","geometry":{"type":"Point","coordinates":[NaN,1]}}`))
	f.Add([]byte(`{"type":"Feature","geometry":{"type":"MultiPolygon","coordinates":[[[[1,2],[1,3],[2,2],[1,2]]],[]]},"properties":{"name":"\u00e9","x":{"y":[1]}}}`))
	schema := mustSchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lines := range []bool{true, false} {
			s := newJSONScanner(bytes.NewReader(data), 50, nil)
			s.buf = make([]byte, 7)
			s.lineMode = lines
			_ = s.sequence(func(sf scannedFeature) error {
				if sf.Raw != nil {
					if !json.Valid(sf.Raw) {
						t.Fatalf("scanner passed invalid JSON %q", sf.Raw)
					}
					fuzzFeature(t, sf.Raw, schema)
				}
				return nil
			})
		}
		fuzzFeature(t, data, schema)
	})
}

func FuzzFeatureCollection(f *testing.F) {
	f.Add([]byte(`{"type":"FeatureCollection","features":[` + feat("a", goodPoint, goodProps) + `]}`))
	f.Add([]byte(`{"features":[{"geometry":{"coordinates":[[1,2],[3,4]],"bbox":[1,2,3,4],"type":"LineString"}}],"crs":null,"type":"FeatureCollection"}`))
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"a":"\u00`))
	schema := mustSchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newJSONScanner(bytes.NewReader(data), 50, nil)
		s.buf = make([]byte, 5)
		err := s.featureCollection(func(sf scannedFeature) error {
			if sf.Raw != nil {
				fuzzFeature(t, sf.Raw, schema)
			}
			return nil
		}, func(raw []byte, _ bool) error { _, err := legacyCRS(raw); return err })
		if err == nil && !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
	})
}

// fuzzFeature runs a row through the whole per-row path.
func fuzzFeature(t *testing.T, raw []byte, schema tiles.FieldSchema) {
	cfg := &config{schema: schema, allowed: map[string]bool{}, Options: Options{MaxVertices: 50}}
	for _, g := range GeometryTypes {
		cfg.allowed[g] = true
	}
	w := newWorker(cfg)
	src := &source{name: "fuzz", base: "fuzz", crs: 1}
	id, out, reason := w.process(&item{src: src, row: 1, kind: kindJSON, raw: raw}, nil)
	if reason == "" {
		f, err := decodeRecord(out, schema)
		if err != nil || f.ID != id {
			t.Fatalf("record of %q does not decode: %v", raw, err)
		}
	}
}

func FuzzCSVRow(f *testing.F) {
	f.Add("POINT(151 -33)", "x", "12", "1.5", "true", "2024-01-01", "2024-01-01T00:00:00Z")
	f.Add("POLYGON((1 2,3 4,5 6,1 2))", "", "", "", "", "", "")
	f.Add("MULTIPOLYGON(((1 2,3 4,5 6,1 2)),((7 8,9 10,11 12,7 8)))", "a,b", "-0", "NaN", "T", "1999-02-30", "x")
	f.Add("GEOMETRYCOLLECTION(POINT(1 2))", "a", "1e3", "Inf", "0", "", "")
	schema := mustSchema(f)
	cfg := &config{schema: schema, allowed: map[string]bool{}, Options: Options{MaxVertices: 50, IDProperty: "fid"}}
	for _, g := range GeometryTypes {
		cfg.allowed[g] = true
	}
	layout, err := parseCSVHeader([]string{"fid", "wkt", "name", "count", "area", "active", "opened", "updated"}, schema, "fid", nil)
	if err != nil {
		f.Fatal(err)
	}
	xy, err := parseCSVHeader([]string{"x", "y", "name"}, schema, "", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, geom, name, count, area, active, opened, updated string) {
		w := newWorker(cfg)
		src := &source{name: "f.csv", base: "f.csv", crs: 1, csv: layout}
		fields := []string{"id1", geom, name, count, area, active, opened, updated}
		id, out, reason := w.process(&item{src: src, row: 1, kind: kindCSV, fields: fields}, nil)
		if reason == "" {
			if _, err := decodeRecord(out, schema); err != nil || id != "id1" {
				t.Fatalf("record does not decode: %v", err)
			}
		}
		src2 := &source{name: "f.csv", base: "f.csv", crs: 7856, csv: xy}
		w.process(&item{src: src2, row: 1, kind: kindCSV, fields: []string{count, area, name}}, nil)
		_ = countWKTPositions(geom)
	})
}

func mustSchema(tb testing.TB) tiles.FieldSchema {
	def, err := ParseLayerDef([]byte(testLayerJSON))
	if err != nil {
		tb.Fatal(err)
	}
	return def.Schema
}

func TestScannerBOM(t *testing.T) {
	ok := `{"type":"Feature","geometry":null,"properties":{}}`
	got, err := scanAll(iotest.OneByteReader(strings.NewReader("\ufeff"+`{"type":"FeatureCollection","features":[`+ok+`]}`)), false, false, 0, 0)
	if err != nil || len(got) != 1 || got[0].Raw != ok {
		t.Errorf("FeatureCollection with a BOM: %+v, %v", got, err)
	}
	got, err = scanAll(strings.NewReader("\ufeff"+ok+"\n"), true, true, 0, 0)
	if err != nil || len(got) != 1 || got[0].Raw != ok {
		t.Errorf("NDJSON with a BOM: %+v, %v", got, err)
	}
}
