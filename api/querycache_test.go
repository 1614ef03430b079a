package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestFinishedQueriesBounded: the cache keeps what the API renders (not
// the site geometry nor coverage polygons, and never by changing the
// caller's row), stays within its byte budget by dropping the oldest rows
// first, and does not keep an outsized row.
func TestFinishedQueriesBounded(t *testing.T) {
	var c finishedQueries
	schema := json.RawMessage(`{"f":` + `"` + string(bytes.Repeat([]byte("x"), 64<<10)) + `"}`)
	row := func() ledger.Query {
		return ledger.Query{ID: uuid.New(), SiteGeometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`),
			Frozen: []ledger.FrozenLayer{{LayerID: "l", FieldSchema: schema, Coverage: json.RawMessage(`{"type":"Polygon"}`)}}}
	}
	first := row()
	c.put(first)
	if first.SiteGeometry == nil || first.Frozen[0].Coverage == nil {
		t.Fatal("put changed the caller's row")
	}
	got, ok := c.get(first.ID)
	if !ok || got.SiteGeometry != nil || got.Frozen[0].Coverage != nil || !bytes.Equal(got.Frozen[0].FieldSchema, schema) {
		t.Fatalf("cached row %+v %v", got, ok)
	}
	var last uuid.UUID
	for range 1000 { // about 64 MiB of schemas
		q := row()
		c.put(q)
		last = q.ID
	}
	if c.bytes > maxCachedQueryBytes || len(c.m) != len(c.order) {
		t.Fatalf("cache holds %d bytes in %d rows (%d in order)", c.bytes, len(c.m), len(c.order))
	}
	if _, ok := c.get(first.ID); ok {
		t.Fatal("the oldest row was not dropped")
	}
	if _, ok := c.get(last); !ok {
		t.Fatal("the newest row was dropped")
	}
	huge := row()
	huge.Frozen[0].FieldSchema = bytes.Repeat([]byte("x"), maxCachedQueryBytes/4)
	c.put(huge)
	if _, ok := c.get(huge.ID); ok {
		t.Fatal("an outsized row was cached")
	}
}
