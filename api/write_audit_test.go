package api_test

import (
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestWriteAuditCommitsWithStoredResponse proves a write's audit record,
// now committed in the statement that stores its idempotent response, is
// still written exactly once per request with its outcome, status and
// resource: a created site (200), a refused body stored for replay (400),
// each replay of them (a record of its own, as before), and a write
// refused before any claim (no Idempotency-Key).
func TestWriteAuditCommitsWithStoredResponse(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "sites:read", "sites:write")
	body := map[string]any{"site": geometrySelector(squareHa(2, 151.0, -33.81)), "name": "Audited"}
	recordOf := func(r response) ledger.Activity {
		t.Helper()
		rid, err := uuid.Parse(r.header.Get("X-Request-Id"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := h.led.ListActivity(h.ctx, k.IntegrationID, ledger.ActivityFilter{RequestID: &rid, Limit: 10})
		if err != nil || len(rows) != 1 {
			t.Fatalf("request %s: %d records, %v; want exactly 1", rid, len(rows), err)
		}
		return rows[0]
	}

	key := nextIdem()
	created := h.do("POST", "/sites", k.Secret, body, "Idempotency-Key", key)
	if created.status != 200 {
		t.Fatalf("%d %s", created.status, created.body)
	}
	siteID := created.json(t)["site"].(map[string]any)["site_id"].(string)
	if a := recordOf(created); a.Operation != "create_site" || a.Outcome != "completed" || a.HTTPStatus != 200 ||
		a.ResourceType == nil || *a.ResourceType != "site" || *a.ResourceID != siteID || a.ErrorCode != nil {
		t.Fatalf("created: %+v", a)
	}
	replay := h.do("POST", "/sites", k.Secret, body, "Idempotency-Key", key)
	if replay.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("not replayed: %d %s", replay.status, replay.body)
	}
	if a := recordOf(replay); a.Operation != "create_site" || a.Outcome != "completed" || a.HTTPStatus != 200 {
		t.Fatalf("replay: %+v", a)
	}

	bad := nextIdem()
	refused := h.do("POST", "/sites", k.Secret, `{"name": 5}`, "Idempotency-Key", bad)
	refused.problem(t, "invalid_request", 400)
	if a := recordOf(refused); a.Outcome != "failed" || a.HTTPStatus != 400 || a.ErrorCode == nil || *a.ErrorCode != "invalid_request" {
		t.Fatalf("refused: %+v", a)
	}
	noKey := h.do("POST", "/sites", k.Secret, body)
	noKey.problem(t, "invalid_request", 400)
	if a := recordOf(noKey); a.Outcome != "failed" || a.HTTPStatus != 400 {
		t.Fatalf("without a key: %+v", a)
	}
	all, err := h.led.ListActivity(h.ctx, k.IntegrationID, ledger.ActivityFilter{Limit: 100})
	if err != nil || len(all) != 4 {
		t.Fatalf("%d records, %v; want 4 (one per request)", len(all), err)
	}
}
