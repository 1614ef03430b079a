package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/ledger"
)

// sibling creates a key of the integration of k, restricted to datasets.
func (h *harness) sibling(account uuid.UUID, k ledger.NewKey, datasets []string, scopes ...string) ledger.NewKey {
	h.t.Helper()
	s, err := h.led.CreateKey(h.ctx, ledger.KeyParams{Account: account, Integration: &k.IntegrationID, Scopes: scopes, Datasets: datasets})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// sameAsFresh asserts that replay, a request sending another key's used
// Idempotency-Key, got what fresh, the same request with a key of its own,
// got: the same status and body but for the request id, and no replay.
func sameAsFresh(t *testing.T, replay, fresh response) {
	t.Helper()
	if replay.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("replayed to a key the first request's checks refuse: %d %s", replay.status, replay.body)
	}
	if replay.status != fresh.status {
		t.Fatalf("replay %d %s, fresh request %d %s", replay.status, replay.body, fresh.status, fresh.body)
	}
	ma, mb := replay.json(t), fresh.json(t)
	delete(ma, "request_id")
	delete(mb, "request_id")
	ja, _ := json.Marshal(ma)
	jb, _ := json.Marshal(mb)
	if string(ja) != string(jb) {
		t.Fatalf("replay differs from a fresh request:\n%s\n%s", ja, jb)
	}
}

// replayed asserts a stored response replayed byte for byte.
func replayed(t *testing.T, got, first response) {
	t.Helper()
	if got.header.Get("Idempotent-Replayed") != "true" || got.status != first.status || string(got.body) != string(first.body) {
		t.Fatalf("want the stored %d replayed, got %d %s", first.status, got.status, got.body)
	}
}

// TestQueryReplayRechecksTheCaller: a key of the integration restricted to
// one layer, sending another key's Idempotency-Key with its request about
// two layers, gets the not_found a fresh request of its own gets, never
// the stored features of the layer it may not see; a sibling that may see
// both gets the stored answer.
func TestQueryReplayRechecksTheCaller(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, true)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b1": east(50)})
	qh.points("nsw.hydro-lines", "water", 0, 5000, nil, map[string]orb.Point{"h1": east(60), "h2": east(70)})
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]},
		"layer_ids": []string{"nsw.bores", "nsw.hydro-lines"}, "radius_m": 500}
	first := qh.do("POST", "/queries", k.Secret, body, "Idempotency-Key", "q-shared", "Prefer", "wait=3")
	if first.status != 200 || len(featureIDs(first.json(t))) != 3 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	narrow := qh.sibling(acct, k, []string{"nsw.bores"}, "queries:run", "sites:read", "sites:write")
	replay := qh.do("POST", "/queries", narrow.Secret, body, "Idempotency-Key", "q-shared", "Prefer", "wait=3")
	fresh := qh.do("POST", "/queries", narrow.Secret, body, "Idempotency-Key", uuid.NewString(), "Prefer", "wait=3")
	fresh.problem(t, "not_found", 404)
	sameAsFresh(t, replay, fresh)

	wide := qh.sibling(acct, k, nil, "queries:run", "sites:read")
	replayed(t, qh.do("POST", "/queries", wide.Secret, body, "Idempotency-Key", "q-shared", "Prefer", "wait=3"), first)
}

// TestSiteReplayRechecksTheCaller: a site reveals no dataset, so a
// restricted sibling gets the stored site (what a fresh request gets: the
// same site, found); a sibling without the operation's scopes gets
// scope_insufficient, not the stored site.
func TestSiteReplayRechecksTheCaller(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k := h.key(acct, nil, "sites:read", "sites:write")
	body := map[string]any{"site": geometrySelector(squareHa(1, 151.0, -33.81))}
	first := h.do("POST", "/sites", k.Secret, body, "Idempotency-Key", "s-shared")
	if first.status != 200 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	narrow := h.sibling(acct, k, []string{"nsw.bores"}, "sites:read")
	replayed(t, h.do("POST", "/sites", narrow.Secret, body, "Idempotency-Key", "s-shared"), first)
	fresh := h.do("POST", "/sites", narrow.Secret, body, "Idempotency-Key", uuid.NewString())
	if fresh.status != 200 || fresh.json(t)["site"].(map[string]any)["site_id"] != first.json(t)["site"].(map[string]any)["site_id"] {
		t.Fatalf("fresh request of the sibling: %d %s", fresh.status, fresh.body)
	}
	unscoped := h.sibling(acct, k, nil, "queries:run")
	replay := h.do("POST", "/sites", unscoped.Secret, body, "Idempotency-Key", "s-shared")
	sameAsFresh(t, replay, h.do("POST", "/sites", unscoped.Secret, body, "Idempotency-Key", uuid.NewString()))
	replay.problem(t, "scope_insufficient", 403)
}

// TestAcquisitionReplayRechecksTheCaller: a sibling key restricted to
// another section's layers, sending another key's Idempotency-Key with
// its acquisition, gets the not_found a fresh request of its own gets, not
// the stored receipt.
func TestAcquisitionReplayRechecksTheCaller(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, "")
	h.publish("aus.bores", "water", 0, []string{"AUS"}, "")
	acct := h.account(100)
	k := h.key(acct, nil, "access:acquire")
	site := h.site(acct)
	first := h.buy(k.Secret, "a-shared", site, "contamination")
	if first.status != 200 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	narrow := h.sibling(acct, k, []string{"aus.bores"}, "access:acquire")
	replay := h.buy(narrow.Secret, "a-shared", site, "contamination")
	fresh := h.buy(narrow.Secret, uuid.NewString(), site, "contamination")
	fresh.problem(t, "not_found", 404)
	sameAsFresh(t, replay, fresh)

	wide := h.sibling(acct, k, []string{"nsw.contaminated-sites"}, "access:acquire")
	replayed(t, h.buy(wide.Secret, "a-shared", site, "contamination"), first)
	h.checkLedger()
}

// TestReportReplayRechecksTheCaller: a sibling key that may not read the
// report another key ordered with an Idempotency-Key does not get its
// order replayed: it gets what its own order would get from the checks
// (report_unavailable when none of the scope is its), and otherwise
// idempotency_conflict, since its own order would be another report;
// nothing is charged either way. A sibling that may read it gets the
// stored order.
func TestReportReplayRechecksTheCaller(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(1000)
	k := h.key(acct, nil, "reports:create", "reports:read")
	site := h.site(acct)
	first := h.order(k.Secret, "r-shared", site, "")
	ordered(t, first)
	charged := h.purchaseCount(h.key(acct, nil, "usage:read").Secret)

	none := h.sibling(acct, k, []string{"qld.flood"}, "reports:create")
	replay := h.order(none.Secret, "r-shared", site, "")
	fresh := h.order(none.Secret, uuid.NewString(), site, "")
	fresh.problem(t, "report_unavailable", 409)
	sameAsFresh(t, replay, fresh)

	narrow := h.sibling(acct, k, []string{"aus.bores"}, "reports:create")
	h.order(narrow.Secret, "r-shared", site, "").problem(t, "idempotency_conflict", 409)
	if n := h.purchaseCount(h.key(acct, nil, "usage:read").Secret); n != charged {
		t.Fatalf("purchases %d after refused replays, want %d", n, charged)
	}

	wide := h.sibling(acct, k, []string{"aus.bores", "nsw.contaminated-sites"}, "reports:create")
	replayed(t, h.order(wide.Secret, "r-shared", site, ""), first)
}

// An order whose answer was lost (not stored for replay) is found again by
// its orderer's retry; a restricted sibling sending that Idempotency-Key
// is refused as a replay would be, and its refusal is not stored under the
// key: the orderer's retry still gets its order.
func TestLostReportOrderRechecksTheCaller(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(1000)
	k := h.key(acct, nil, "reports:create", "reports:read")
	site := h.site(acct)
	rep, _, err := h.led.OrderReport(h.ctx, ledger.OrderReportParams{Account: acct, Integration: k.IntegrationID, IdemKey: "lost",
		SiteID: site, Jurisdiction: "NSW", DatasetIDs: []string{"aus.bores", "nsw.contaminated-sites"}, Price: reportPrice, MaxSiteAreaM2: 400_000})
	if err != nil {
		t.Fatal(err)
	}
	narrow := h.sibling(acct, k, []string{"aus.bores"}, "reports:create")
	h.order(narrow.Secret, "lost", site, "").problem(t, "idempotency_conflict", 409)
	if got := ordered(t, h.order(k.Secret, "lost", site, "")); got != rep.ID {
		t.Fatalf("orderer's retry got report %s, want %s", got, rep.ID)
	}
}

// A purchase whose answer was lost is found again by its buyer's retry; a
// restricted sibling sending that Idempotency-Key gets the not_found of a
// section it may not see, not the receipt, and nothing is stored for it.
func TestLostAcquisitionRechecksTheCaller(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, "")
	h.publish("aus.bores", "water", 0, []string{"AUS"}, "")
	acct := h.account(100)
	k := h.key(acct, nil, "access:acquire")
	site := h.site(acct)
	p, err := h.led.Acquire(h.ctx, ledger.AcquireParams{Account: acct, Integration: k.IntegrationID, IdemKey: "lost",
		SiteID: site, Sections: []string{"contamination"}, MaxSiteAreaM2: 400_000})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	narrow := h.sibling(acct, k, []string{"aus.bores"}, "access:acquire")
	sameAsFresh(t, h.buy(narrow.Secret, "lost", site, "contamination"), h.buy(narrow.Secret, uuid.NewString(), site, "contamination"))
	r := h.buy(k.Secret, "lost", site, "contamination")
	if r.status != 200 || r.json(t)["purchase_id"] != p.ID.String() {
		t.Fatalf("buyer's retry: %d %s", r.status, r.body)
	}
	h.checkLedger()
}
