package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// checkLedger fails the test when any ledger invariant is broken.
func (h *harness) checkLedger() {
	h.t.Helper()
	v, err := h.led.Check(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(v) > 0 {
		h.t.Fatalf("ledger invariants broken: %+v", v)
	}
}

func (h *harness) buy(key string, idemKey string, site uuid.UUID, sections ...string) response {
	h.t.Helper()
	return h.do("POST", "/access/acquisitions", key, map[string]any{"site_id": site, "section_keys": sections}, "Idempotency-Key", idemKey)
}

func TestAcquireSections(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, "")
	h.publish("aus.bores", "water", 0, []string{"AUS"}, "")
	acct := h.account(100)
	k := h.key(acct, nil, "access:acquire", "usage:read", "layers:read")
	site := h.site(acct)

	r := h.buy(k.Secret, "buy-1", site, "contamination", "water")
	m := r.json(t)
	if r.status != 200 || m["credits_charged"] != float64(30) || m["credit_balance"] != float64(70) || m["acquisition_id"] != m["purchase_id"] {
		t.Fatalf("acquisition %s", r.body)
	}
	if lines := m["receipt"].(map[string]any)["lines"].([]any); len(lines) != 2 {
		t.Fatalf("receipt lines %v", lines)
	}
	// Already acquired: nothing charged, nothing granted twice.
	m = h.buy(k.Secret, "buy-2", site, "water", "contamination").json(t)
	if m["credits_charged"] != float64(0) || len(m["already_acquired_section_keys"].([]any)) != 2 {
		t.Fatalf("second purchase %v", m)
	}
	u := h.do("GET", "/usage", k.Secret, nil).json(t)["credits"].(map[string]any)
	if u["account_balance"] != float64(70) || u["integration_used"] != float64(30) {
		t.Fatalf("usage %v", u)
	}
	l := h.do("GET", "/layers/nsw.contaminated-sites?site_id="+site.String(), k.Secret, nil).json(t)["layer"].(map[string]any)
	if l["access"] != "already_available" {
		t.Fatalf("layer access after purchase: %v", l["access"])
	}
	// The purchase and its receipt read back; another account cannot see it.
	pid := m["purchase_id"].(string)
	p := h.do("GET", "/purchases/"+pid, k.Secret, nil).json(t)["purchase"].(map[string]any)
	if p["kind"] != "site_access" || p["refund_status"] != "none" || p["receipt"] == nil {
		t.Fatalf("purchase %v", p)
	}
	other := h.key(h.account(0), nil, "usage:read")
	sameApartFromRequestID(t, h.do("GET", "/purchases/"+pid, other.Secret, nil), h.do("GET", "/purchases/"+uuid.NewString(), other.Secret, nil))

	// Receipts stay readable after the site is archived and spending scopes are gone.
	if err := h.led.ArchiveSite(h.ctx, acct, site); err != nil {
		t.Fatal(err)
	}
	reader := h.key(acct, nil, "usage:read")
	if r := h.do("GET", "/purchases/"+pid, reader.Secret, nil); r.status != 200 {
		t.Fatalf("receipt after archive: %d", r.status)
	}
	h.buy(k.Secret, "buy-3", site, "water").problem(t, "not_found", 404)
	h.checkLedger()
}

func TestAcquireRefusalsLeaveNothing(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, "")
	h.publish("nsw.flood", "flood", 50, []string{"NSW"}, "")
	acct := h.account(60)
	limit := int64(40)
	k, err := h.led.CreateKey(h.ctx, ledger.KeyParams{Account: acct, Scopes: []string{"access:acquire", "usage:read"}, SpendLimit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	site := h.site(acct)
	h.buy(k.Secret, "r1", site, "contamination", "flood").problem(t, "insufficient_credits", 402)
	h.buy(k.Secret, "r2", site, "flood").problem(t, "credit_ceiling_exceeded", 409)
	m := h.buy(k.Secret, "r3", site, "contamination", "nope").problem(t, "not_found", 404)
	if fe := m["field_errors"].([]any); len(fe) != 1 || fe[0].(map[string]any)["field"] != "section_keys[1]" {
		t.Fatalf("unknown section not named: %v", fe)
	}
	h.buy(k.Secret, "r4", uuid.New(), "flood").problem(t, "not_found", 404)
	h.buy(k.Secret, "r5", site).problem(t, "invalid_request", 400)
	h.buy(k.Secret, "r6", site, "flood", "flood").problem(t, "invalid_request", 400)
	big, err := h.led.CreateSite(h.ctx, ledger.Site{AccountID: acct, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "ff", AreaM2: 400_001})
	if err != nil {
		t.Fatal(err)
	}
	h.buy(k.Secret, "r7", big.ID, "contamination").problem(t, "site_ineligible", 422)
	// A dataset-restricted key cannot buy a section none of whose layers it may use.
	narrow := h.key(acct, []string{"nsw.flood"}, "access:acquire")
	h.buy(narrow.Secret, "r8", site, "contamination").problem(t, "not_found", 404)
	// Nothing was charged, written or granted.
	u := h.do("GET", "/usage", k.Secret, nil).json(t)["credits"].(map[string]any)
	if u["account_balance"] != float64(60) || u["integration_used"] != float64(0) {
		t.Fatalf("refusals charged: %v", u)
	}
	if n := len(h.do("GET", "/purchases", k.Secret, nil).json(t)["purchases"].([]any)); n != 0 {
		t.Fatalf("%d purchases after refusals", n)
	}
	h.checkLedger()
}

func TestAcquireConcurrentRetriesChargeOnce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.flood", "flood", 25, []string{"NSW"}, "")
	acct := h.account(1000)
	k := h.key(acct, nil, "access:acquire", "usage:read")
	site := h.site(acct)
	const n = 200
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			bodies[i] = h.buy(k.Secret, "same-key", site, "flood").body
		}(i)
	}
	wg.Wait()
	for i := range bodies {
		if !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("response %d differs:\n%s\n%s", i, bodies[i], bodies[0])
		}
	}
	ps := h.do("GET", "/purchases", k.Secret, nil).json(t)["purchases"].([]any)
	if len(ps) != 1 || ps[0].(map[string]any)["credits_charged"] != float64(25) {
		t.Fatalf("purchases %v", ps)
	}
	h.checkLedger()
}

func TestAcquireConcurrentDistinctPurchasesNeverOverspend(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		credits int64
		cap     int64
		code    string
		status  int
	}{
		{"balance", 5 * 20, 100_000, "insufficient_credits", 402},
		{"integration cap", 100_000, 5 * 20, "credit_ceiling_exceeded", 409},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			h.publish("nsw.flood", "flood", 20, []string{"NSW"}, "")
			acct := h.account(c.credits)
			k, err := h.led.CreateKey(h.ctx, ledger.KeyParams{Account: acct, Scopes: []string{"access:acquire", "usage:read"}, SpendLimit: &c.cap})
			if err != nil {
				t.Fatal(err)
			}
			const n = 5
			sites := make([]uuid.UUID, 10*n)
			for i := range sites {
				sites[i] = h.site(acct)
			}
			statuses := make([]int, len(sites))
			codes := make([]string, len(sites))
			var wg sync.WaitGroup
			for i := range sites {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					r := h.buy(k.Secret, fmt.Sprintf("d-%d", i), sites[i], "flood")
					statuses[i] = r.status
					if r.status != 200 {
						codes[i], _ = r.json(t)["code"].(string)
					}
				}(i)
			}
			wg.Wait()
			ok := 0
			for i, s := range statuses {
				switch {
				case s == 200:
					ok++
				case s != c.status || codes[i] != c.code:
					t.Fatalf("purchase %d: %d %s", i, s, codes[i])
				}
			}
			if ok != n {
				t.Fatalf("%d purchases succeeded, want %d", ok, n)
			}
			u := h.do("GET", "/usage", k.Secret, nil).json(t)["credits"].(map[string]any)
			if u["integration_used"] != float64(100) {
				t.Fatalf("usage %v", u)
			}
			h.checkLedger()
		})
	}
}

func TestPurchaseHistory(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.flood", "flood", 10, []string{"NSW"}, "")
	acct := h.account(100)
	k := h.key(acct, nil, "access:acquire", "usage:read")
	s1, s2 := h.site(acct), h.site(acct)
	h.buy(k.Secret, "h1", s1, "flood")
	h.clock.Advance(time.Hour)
	h.buy(k.Secret, "h2", s2, "flood")
	dated := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	if _, err := h.led.ImportLegacy(h.ctx, []ledger.LegacyUsage{
		{LegacyID: "T-1", AccountID: acct, Credits: 7, CreatedAt: &dated, SiteID: &s1},
		{LegacyID: "T-2", AccountID: acct, Credits: 3},
		{LegacyID: "T-3", AccountID: acct, Credits: 4},
	}); err != nil {
		t.Fatal(err)
	}
	// Newest first, dated legacy in place, undated legacy last; pages of 2.
	var kinds []string
	path := "/purchases?limit=2"
	for {
		m := h.do("GET", path, k.Secret, nil).json(t)
		for _, p := range m["purchases"].([]any) {
			p := p.(map[string]any)
			kinds = append(kinds, fmt.Sprintf("%s:%v", p["kind"], p["created_at"] != nil))
			if p["kind"] == "legacy_usage" && (p["refund_status"] != nil || p["balance_after"] != nil || len(p["limitations"].([]any)) == 0) {
				t.Fatalf("legacy entry %v", p)
			}
		}
		pg := m["page"].(map[string]any)
		if pg["has_more"] != true {
			break
		}
		path = "/purchases?limit=2&cursor=" + url.QueryEscape(pg["next_cursor"].(string))
	}
	want := "[site_access:true site_access:true legacy_usage:true legacy_usage:false legacy_usage:false]"
	if fmt.Sprint(kinds) != want {
		t.Fatalf("history %v, want %s", kinds, want)
	}
	// Date filters exclude undated entries; filters by kind and site.
	from := url.QueryEscape("2025-01-01T00:00:00+10:00")
	m := h.do("GET", "/purchases?created_from="+from, k.Secret, nil).json(t)
	if n := len(m["purchases"].([]any)); n != 3 {
		t.Fatalf("dated since 2025: %d", n)
	}
	m = h.do("GET", "/purchases?kind=legacy_usage&site_id="+s1.String(), k.Secret, nil).json(t)
	if n := len(m["purchases"].([]any)); n != 1 {
		t.Fatalf("legacy at s1: %d", n)
	}
	h.do("GET", "/purchases?created_before=2026-01-01T00:00:00", k.Secret, nil).problem(t, "invalid_request", 400)
	lp := h.do("GET", "/purchases/"+ledger.LegacyPurchaseID("T-2").String(), k.Secret, nil).json(t)["purchase"].(map[string]any)
	if lp["receipt"] != nil || lp["credits_refunded"] != nil {
		t.Fatalf("legacy purchase %v", lp)
	}
	h.checkLedger()
}
