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

// TestCatalogueCacheBounded: answers are kept per catalogue version only
// (a newer version drops the older's, an older request's answer is not
// kept), and within the entry and byte budgets.
func TestCatalogueCacheBounded(t *testing.T) {
	var c catalogueCache
	c.put(3, "a", 1, 10)
	if v, ok := c.get(3, "a"); !ok || v != 1 {
		t.Fatalf("get = %v %v", v, ok)
	}
	if _, ok := c.get(4, "a"); ok {
		t.Fatal("an answer of version 3 served for version 4")
	}
	c.put(2, "b", 2, 10) // a request that began before version 3
	if _, ok := c.get(2, "b"); ok {
		t.Fatal("an older version's answer was kept")
	}
	c.put(4, "c", 3, 10)
	if _, ok := c.get(3, "a"); ok {
		t.Fatal("version 3's answers survived version 4")
	}
	if _, ok := c.get(0, "c"); ok {
		t.Fatal("version 0 (unknown) served from the cache")
	}
	c.put(4, "big", 4, maxCatalogueBytes/8+1)
	if _, ok := c.get(4, "big"); ok {
		t.Fatal("an outsized answer was kept")
	}
	for i := range 20 {
		c.put(4, string(rune('A'+i)), i, maxCatalogueBytes/16)
		if c.bytes > maxCatalogueBytes {
			t.Fatalf("cache holds %d bytes", c.bytes)
		}
	}
	for i := range 2 * maxCatalogueEntries {
		c.put(4, "k"+string(rune(i)), i, 1)
		if len(c.m) > maxCatalogueEntries {
			t.Fatalf("cache holds %d entries", len(c.m))
		}
	}
}
