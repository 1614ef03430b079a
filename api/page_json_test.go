package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestWriteQuerySplicesRecords proves writeQuery's spliced body is byte for
// byte what encoding every record as a json.RawMessage gave, with a next
// cursor and without, and with provenance strings that hold the splice
// marker's text.
func TestWriteQuerySplicesRecords(t *testing.T) {
	recs := []string{
		`{"layer_id":"a","feature_id":"1","distance_m":0,"properties":{"x":1,"s":"],\"page\":"},"geometry":null}`,
		`{"layer_id":"a","feature_id":"2","distance_m":1.5,"properties":{},"geometry":{"type":"Point","coordinates":[151.2,-33.8]}}`,
	}
	cursor := "abc_-123"
	for _, next := range []*string{nil, &cursor} {
		body := queryBody{APIVersion: "1", QueryID: "q", Status: "succeeded", CreatedAt: time.Unix(0, 0).UTC(),
			Layers: []queryLayerBody{{LayerID: `,"features":[],"page":`, Provenance: []provenanceItem{}}}, Page: page{HasMore: next != nil, NextCursor: next}}
		want := body
		for i, rec := range recs {
			want.Features = append(want.Features, json.RawMessage(rec))
			if i > 0 {
				body.records.joined = append(body.records.joined, ',')
			}
			body.records.joined = append(body.records.joined, rec...)
			body.records.n++
		}
		a, b := &request{http: &fasthttp.RequestCtx{}}, &request{http: &fasthttp.RequestCtx{}}
		if err := a.writeJSON(200, want); err != nil {
			t.Fatal(err)
		}
		if err := b.writeQuery(200, &body); err != nil {
			t.Fatal(err)
		}
		if got, exp := b.http.Response.Body(), a.http.Response.Body(); !bytes.Equal(got, exp) {
			t.Fatalf("spliced\n%s\nwant\n%s", got, exp)
		}
		if !json.Valid(b.http.Response.Body()) || string(b.http.Response.Header.ContentType()) != "application/json" {
			t.Fatal("not a JSON body")
		}
	}
}

// TestReadLine proves lines longer than the reader's buffer come back whole.
func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 100)
	br := bufio.NewReaderSize(strings.NewReader(long+"\nab\nc"), 16)
	var buf []byte
	for _, want := range []string{long + "\n", "ab\n", "c"} {
		var err error
		buf, err = readLine(br, buf)
		if string(buf) != want || (err != nil && want != "c") {
			t.Fatalf("%q %v, want %q", buf, err, want)
		}
	}
}

// BenchmarkWriteQueryPage encodes a 500-record results page both ways:
// every record as a json.RawMessage (validated and copied by
// encoding/json, as before) and spliced as stored (writeQuery).
func BenchmarkWriteQueryPage(b *testing.B) {
	rec := []byte(`{"layer_id":"nsw-epa-contaminated-land","feature_id":"NSWEPA-000123","distance_m":152.25,"properties":{"site_name":"Former service station","status":"Regulated","notified":"2019-04-02"},"geometry":null}`)
	cursor := "c"
	base := queryBody{APIVersion: "1", QueryID: "q", Status: "succeeded", Layers: []queryLayerBody{}, Page: page{HasMore: true, NextCursor: &cursor}}
	b.Run("raw_messages", func(b *testing.B) {
		body := base
		for range 500 {
			body.Features = append(body.Features, json.RawMessage(rec))
		}
		r := &request{http: &fasthttp.RequestCtx{}}
		b.ReportAllocs()
		for b.Loop() {
			if err := r.writeJSON(200, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("spliced", func(b *testing.B) {
		r := &request{http: &fasthttp.RequestCtx{}}
		var joined []byte
		for i := range 500 {
			if i > 0 {
				joined = append(joined, ',')
			}
			joined = append(joined, rec...)
		}
		b.ReportAllocs()
		for b.Loop() {
			body := base
			body.records = pageRecords{joined: joined, n: 500}
			if err := r.writeQuery(200, &body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
