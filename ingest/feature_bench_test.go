package ingest

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseFeature measures reading one source feature (the JSON
// tokenizer, the geometry reader and the properties) without the rest of
// the pipeline: a point with properties, and a 1,000-position polygon.
func BenchmarkParseFeature(b *testing.B) {
	var ring strings.Builder
	for i := range 999 {
		fmt.Fprintf(&ring, "[151.%06d,-33.%06d],", i*997%1000000, i*991%1000000)
	}
	ring.WriteString("[151.000000,-33.000000]")
	features := map[string][]byte{
		"point": []byte(`{"type":"Feature","id":"f1","geometry":{"type":"Point","coordinates":[151.2093,-33.8688]},` +
			`"properties":{"name":"Site 1","count":12,"area":1234.5,"flag":true,"note":null}}`),
		"polygon1k": []byte(`{"type":"Feature","id":7,"geometry":{"type":"Polygon","coordinates":[[` + ring.String() + `]]},` +
			`"properties":{"name":"Lot 7"}}`),
	}
	for _, name := range []string{"point", "polygon1k"} {
		raw := features[name]
		b.Run(name, func(b *testing.B) {
			intern := map[string]string{}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseFeature(raw, 100000, intern); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
