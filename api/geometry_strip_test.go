package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestWithoutGeometry proves the cut and the full decode agree: for each
// record, the result decodes to the record with geometry null, whether the
// geometry is the last member (the cut) or not, and whether the properties
// hold a "geometry" key or the text ,"geometry": in a string.
func TestWithoutGeometry(t *testing.T) {
	recs := []string{
		`{"layer_id":"a","feature_id":"1","distance_m":0,"properties":{"x":1},"geometry":{"type":"Point","coordinates":[151.2,-33.8]}}`,
		`{"layer_id":"a","feature_id":"2","distance_m":1.5,"properties":{"geometry":{"type":"Point"},"s":"a,\"geometry\":1}"},"geometry":null}`,
		`{"layer_id":"a","feature_id":"3","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"geometry":7}}`,
		`{"geometry":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]},"layer_id":"b"}`,
		`{"layer_id":"c","properties":{"note":"x},\"geometry\":{}"},"geometry":{"type":"LineString","coordinates":[[1,2],[3,4]]}}`,
	}
	for _, rec := range recs {
		got, err := withoutGeometry([]byte(rec))
		if err != nil {
			t.Fatalf("%s: %v", rec, err)
		}
		var want, have map[string]any
		if err := json.Unmarshal([]byte(rec), &want); err != nil {
			t.Fatal(err)
		}
		want["geometry"] = nil
		if err := json.Unmarshal(got, &have); err != nil {
			t.Fatalf("%s -> %s: %v", rec, got, err)
		}
		if !reflect.DeepEqual(want, have) {
			t.Errorf("%s ->\n%s", rec, got)
		}
	}
	if _, err := withoutGeometry([]byte(`{"geometry":`)); err == nil {
		t.Error("a truncated record was accepted")
	}
}

func BenchmarkWithoutGeometry(b *testing.B) {
	rec := []byte(`{"layer_id":"nsw-epa-contaminated-land","feature_id":"NSWEPA-000123","distance_m":152.25,"properties":{"site_name":"Former service station","status":"Regulated","notified":"2019-04-02"},"geometry":{"type":"Polygon","coordinates":[[[151.2,-33.8],[151.21,-33.8],[151.21,-33.81],[151.2,-33.8]]]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := withoutGeometry(rec); err != nil {
			b.Fatal(err)
		}
	}
}
