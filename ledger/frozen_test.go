package ledger_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestFrozenLayersStoredOnce: a query's frozen layers are stored once per
// entry and named by digest in the query row; every admission path
// (CreateQuery, Admit without and with a key) and a second process with
// nothing cached read them back exactly, in the query's layer order; a
// row admitted before migration 0019 (its frozen JSON in the row) still
// reads back; and the row cannot hold both forms or neither.
func TestFrozenLayersStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	dsn := ledgertest.DSN(t)
	led, other, conn := onDSN(t, dsn, clk), onDSN(t, dsn, clk), rawConn(t, dsn)
	a, err := led.CreateAccount(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := led.CreateKey(ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{"queries:run", "sites:write"}})
	if err != nil {
		t.Fatal(err)
	}
	geom := json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`)
	site, err := led.CreateSite(ctx, ledger.Site{AccountID: a.ID, Geometry: geom, Fingerprint: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rel := "rel-1"
	flood := ledger.FrozenLayer{LayerID: "flood", SectionKey: "hazards", SchemaVersion: "2",
		FieldSchema: json.RawMessage(`{"fields":[{"name":"depth_m","type":"number"}]}`),
		Sources:     json.RawMessage(`[{"publisher":"NSW","licence":"CC-BY-4.0"}]`),
		Coverage:    json.RawMessage(`{"type":"Polygon","coordinates":[[[150,-34],[152,-34],[152,-33],[150,-33],[150,-34]]]}`),
		ReleaseID:   &rel}
	fire := ledger.FrozenLayer{LayerID: "fire", SectionKey: "hazards", SchemaVersion: "1",
		FieldSchema: json.RawMessage(`{"fields":[]}`), Sources: json.RawMessage(`[]`)}
	lim := ledger.QueryLimits{MaxQueued: 100, MaxRetainedBytes: 1 << 30}
	q := func(layers ...ledger.FrozenLayer) ledger.Query {
		ids := make([]string, len(layers))
		for i, l := range layers {
			ids[i] = l.LayerID
		}
		return ledger.Query{AccountID: a.ID, IntegrationID: k.IntegrationID, SiteID: site.ID, SiteGeometry: geom,
			RadiusM: 100, LayerIDs: ids, Frozen: layers}
	}
	check := func(step string, id ledger.Query, want ...ledger.FrozenLayer) {
		t.Helper()
		for _, l := range []*ledger.Ledger{led, other} {
			got, err := l.Query(ctx, a.ID, id.ID)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if !sameFrozen(t, got.Frozen, want) {
				t.Fatalf("%s: frozen read back %+v, want %+v", step, got.Frozen, want)
			}
		}
	}
	entries := func() (n int) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM frozen_layers`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	q1, err := led.CreateQuery(ctx, q(flood, fire), lim)
	if err != nil {
		t.Fatal(err)
	}
	check("CreateQuery", q1, flood, fire)
	res, err := led.Admit(ctx, ledger.AdmitRequest{Claimed: true, Query: q(fire, flood), Limits: ledger.AdmitLimits{QueryLimits: lim, PerMinute: 100}})
	if err != nil {
		t.Fatal(err)
	}
	check("Admit, layers in another order", res.Query, fire, flood)
	br, err := other.Admit(ctx, ledger.AdmitRequest{Integration: k.IntegrationID, IdemKey: "k1", Operation: "create_query",
		Fingerprint: []byte("f"), Site: site, Sections: []string{}, Query: q(flood), Limits: ledger.AdmitLimits{QueryLimits: lim, PerMinute: 100}})
	if err != nil {
		t.Fatal(err)
	}
	check("Admit with a key from a process that stored nothing", br.Query, flood)
	if n := entries(); n != 2 {
		t.Fatalf("%d frozen entries stored for two distinct layers, want 2", n)
	}
	var nullFrozen bool
	var refs int
	if err := conn.QueryRow(ctx, `SELECT frozen IS NULL, cardinality(frozen_refs) FROM queries WHERE query_id = $1`, q1.ID).Scan(&nullFrozen, &refs); err != nil {
		t.Fatal(err)
	}
	if !nullFrozen || refs != 2 {
		t.Fatalf("query row: frozen null %v, %d refs; want the digests only", nullFrozen, refs)
	}

	// The stored values' compression: TestLargeValuesCompressWithLZ4.

	// A row admitted before 0019 keeps its frozen JSON and reads as before.
	old := q1
	old.ID = uuid.Must(uuid.NewV7())
	legacy, _ := json.Marshal([]ledger.FrozenLayer{fire})
	if _, err := conn.Exec(ctx, `INSERT INTO queries (query_id, account_id, integration_id, site_id, site_geometry, radius_m, layer_ids,
		include_geometry, frozen, status, created_at) SELECT $1, account_id, integration_id, site_id, site_geometry, radius_m, '{fire}',
		include_geometry, $2::jsonb, 'queued', created_at FROM queries WHERE query_id = $3`, old.ID, legacy, q1.ID); err != nil {
		t.Fatal(err)
	}
	check("a row with its own frozen JSON", old, fire)
	if _, err := conn.Exec(ctx, `UPDATE queries SET frozen_refs = (SELECT frozen_refs FROM queries WHERE query_id = $2) WHERE query_id = $1`,
		old.ID, q1.ID); err == nil {
		t.Fatal("a row holding both its frozen JSON and digests was accepted")
	}
}

// sameFrozen compares frozen layers as stored JSON compares (jsonb
// normalises spacing and key order).
func sameFrozen(t *testing.T, got, want []ledger.FrozenLayer) bool {
	t.Helper()
	norm := func(v []ledger.FrozenLayer) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return reflect.DeepEqual(norm(got), norm(want))
}
