package geo

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
)

// What the service stores is what orb's geojson writes (and PostgreSQL's
// jsonb gives back, spaced): DecodeStored reads every type of it back to
// the same geometry.
func TestDecodeStoredReadsWhatIsStored(t *testing.T) {
	t.Parallel()
	ring := orb.Ring{{151.2, -33.9}, {151.3, -33.9}, {151.3, -33.8}, {151.2, -33.9}}
	for _, g := range []orb.Geometry{
		orb.Point{151.20930, -33.86882},
		orb.MultiPoint{{1, 2}, {3, 4}},
		orb.LineString{{1, 2}, {3, 4}},
		orb.MultiLineString{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}},
		orb.Polygon{ring},
		orb.MultiPolygon{{ring}, {ring}},
	} {
		raw, err := json.Marshal(geojson.NewGeometry(g))
		if err != nil {
			t.Fatal(err)
		}
		spaced := []byte(` {"type": "` + g.GeoJSONType() + `", "coordinates": ` + string(raw[len(`{"type":"`+g.GeoJSONType()+`","coordinates":`):len(raw)-1]) + "} ")
		for _, b := range [][]byte{raw, spaced} {
			got, err := DecodeStored("site", b)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if !reflect.DeepEqual(got, g) {
				t.Errorf("%s: got %v, want %v", b, got, g)
			}
		}
	}
}

// A stored geometry that cannot be read is an error naming it, never an
// empty geometry, and never the client's invalid geometry.
func TestDecodeStoredRefusesDamage(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		``, `null`, `{"type":"Polygon"}`, `{"type":"Polygon","coordinates":"x"}`,
		`{"type":"GeometryCollection","geometries":[]}`, `{"type":"Point","coordinates":[1,2]} x`,
		`{"type":"Point","coordinates":[1,2]`, `[1,2]`,
	} {
		g, err := DecodeStored("site boundary", []byte(raw))
		var se *StoredError
		if !errors.As(err, &se) || se.What != "site boundary" || g != nil {
			t.Errorf("%q: got %v, %v; want a *StoredError for the site boundary", raw, g, err)
		}
		if errors.Is(err, ErrInvalidGeometry) {
			t.Errorf("%q: %v matches ErrInvalidGeometry (the client's error)", raw, err)
		}
	}
}

func TestDecodeCoverage(t *testing.T) {
	t.Parallel()
	k := CoverageKey{Layer: "test-decode-coverage", Release: "r1"}
	for _, raw := range []string{"", "null"} {
		if g, err := DecodeCoverage(k, []byte(raw)); g != nil || err != nil {
			t.Errorf("%q: got %v, %v; want no coverage and no error", raw, g, err)
		}
	}
	a := []byte(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`)
	g1, err := DecodeCoverage(k, a)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := DecodeCoverage(k, append([]byte(nil), a...))
	if err != nil {
		t.Fatal(err)
	}
	if &g1.(orb.Polygon)[0][0] != &g2.(orb.Polygon)[0][0] {
		t.Error("the same coverage was decoded twice: callers do not share it")
	}
	// The same key with other bytes (never, for an immutable release) is
	// decoded afresh, not served stale.
	b := []byte(`{"type":"Polygon","coordinates":[[[0,0],[2,0],[2,2],[0,0]]]}`)
	if g3, err := DecodeCoverage(k, b); err != nil || g3.(orb.Polygon)[0][1] != (orb.Point{2, 0}) {
		t.Errorf("other bytes under the same key: got %v, %v", g3, err)
	}
	_, err = DecodeCoverage(CoverageKey{"test-decode-coverage", "r2"}, []byte(`{"type":"Polygon","coordinates":[[[0,0]`))
	var se *StoredError
	if !errors.As(err, &se) || se.What != "coverage of layer test-decode-coverage release r2" {
		t.Errorf("damaged coverage: got %v, want a *StoredError naming the layer and release", err)
	}
}

func BenchmarkDecodeStored(b *testing.B) {
	ring := make(orb.Ring, 2000)
	for i := range ring {
		ring[i] = orb.Point{150 + float64(i)*1e-4, -33 - float64(i%7)*1e-4}
	}
	ring[len(ring)-1] = ring[0]
	raw, _ := json.Marshal(geojson.NewGeometry(orb.Polygon{ring}))
	b.Run("geo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeStored("site", raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("orb", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := geojson.UnmarshalGeometry(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
