package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"siteenv/api"
	"siteenv/geo"
	"siteenv/geo/austates"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/tiles"
)

const reportPrice = 40

// reportSetup is a harness with a report price and three report-approved
// layers: one of NSW, one of QLD and one Australia-wide.
func reportSetup(t *testing.T) *harness {
	t.Helper()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, "")
	h.publish("qld.flood", "flood", 20, []string{"QLD"}, "")
	h.publish("aus.bores", "water", 0, []string{"AUS"}, "")
	if err := h.led.SetSetting(h.ctx, ledger.SettingReportPrice, reportPrice); err != nil {
		t.Fatal(err)
	}
	return h
}

// order sends POST /reports with body {site_id[, jurisdiction]}.
func (h *harness) order(key, idem string, site uuid.UUID, jurisdiction string) response {
	h.t.Helper()
	body := map[string]any{"site_id": site}
	if jurisdiction != "" {
		body["jurisdiction"] = jurisdiction
	}
	return h.do("POST", "/reports", key, body, "Idempotency-Key", idem)
}

// ordered asserts a 202 report acquisition and returns its report id.
func ordered(t *testing.T, r response) uuid.UUID {
	t.Helper()
	if r.status != 202 {
		t.Fatalf("order: %d %s", r.status, r.body)
	}
	m := r.json(t)
	id := uuid.MustParse(m["report_id"].(string))
	if r.header.Get("Location") != api.BasePath+"/reports/"+id.String() || r.header.Get("Retry-After") == "" {
		t.Fatalf("order headers: %v", r.header)
	}
	return id
}

// geomSite stores a site with geometry directly in the ledger.
func (h *harness) geomSite(account uuid.UUID, geometry string, areaM2 float64) uuid.UUID {
	h.t.Helper()
	s, err := h.led.CreateSite(h.ctx, ledger.Site{AccountID: account, Geometry: json.RawMessage(geometry), Fingerprint: "0a", AreaM2: areaM2})
	if err != nil {
		h.t.Fatal(err)
	}
	return s.ID
}

func (h *harness) purchaseCount(key string) int {
	h.t.Helper()
	return len(h.do("GET", "/purchases", key, nil).json(h.t)["purchases"].([]any))
}

// countingRunner counts Notify calls (the report builder's wake-up).
type countingRunner struct{ notified atomic.Int64 }

func (c *countingRunner) Notify() { c.notified.Add(1) }
func (c *countingRunner) Wait(context.Context, uuid.UUID, time.Duration) (ledger.Query, bool) {
	return ledger.Query{}, false
}

func TestReportOrder(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	runner := &countingRunner{}
	api.SetQueryBackend(h.srv, nil, runner)
	acct := h.account(100)
	k := h.key(acct, nil, "reports:create", "reports:read", "usage:read")
	site := h.site(acct)

	r := h.order(k.Secret, "order-1", site, "")
	id := ordered(t, r)
	m := r.json(t)
	if m["status"] != "queued" || m["jurisdiction"] != "NSW" || m["credits_charged"] != float64(reportPrice) ||
		m["credit_balance"] != float64(100-reportPrice) || m["acquisition_id"] != m["purchase_id"] || m["site_id"] != site.String() {
		t.Fatalf("acquisition %s", r.body)
	}
	if got := m["dataset_ids"].([]any); len(got) != 2 || got[0] != "aus.bores" || got[1] != "nsw.contaminated-sites" {
		t.Fatalf("scope %v", got)
	}
	if runner.notified.Load() != 1 {
		t.Fatalf("runner notified %d times", runner.notified.Load())
	}
	// The order is a receipt-backed purchase of kind report.
	p := h.do("GET", "/purchases/"+m["purchase_id"].(string), k.Secret, nil).json(t)["purchase"].(map[string]any)
	if p["kind"] != "report" || p["report_id"] != id.String() || p["credits_charged"] != float64(reportPrice) {
		t.Fatalf("purchase %v", p)
	}
	// Replay: the same answer, charged once; a changed body is a conflict.
	again := h.order(k.Secret, "order-1", site, "")
	if again.status != 202 || string(again.body) != string(r.body) || again.header.Get("Idempotent-Replayed") != "true" ||
		again.header.Get("Location") != r.header.Get("Location") || again.header.Get("Retry-After") == "" {
		t.Fatalf("replay: %d %s", again.status, again.body)
	}
	h.order(k.Secret, "order-1", site, "NSW").problem(t, "idempotency_conflict", 409)
	h.order(k.Secret, "order-1", h.site(acct), "").problem(t, "idempotency_conflict", 409)
	if b := h.balance(acct); b != 100-reportPrice {
		t.Fatalf("balance %d after replays", b)
	}
	// The order is in its integration's activity, accepted, naming the report.
	found := false
	for _, a := range h.do("GET", "/activity?operation=create_report", k.Secret, nil).json(t)["activity"].([]any) {
		a := a.(map[string]any)
		if a["outcome"] == "accepted" && a["resource_type"] == "report" && a["resource_id"] == id.String() {
			found = true
		}
	}
	if !found {
		t.Fatalf("no accepted create_report activity naming the report: %s", h.do("GET", "/activity?operation=create_report", k.Secret, nil).body)
	}
	h.checkLedger()
}

// TestReportOrderRetryFindsLostOrder: an order that committed though its
// answer was lost (a 5xx is not stored for replay) is found again by its
// Idempotency-Key, even after its site was archived, and not charged twice;
// the same key with another site is a conflict.
func TestReportOrderRetryFindsLostOrder(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(3 * reportPrice)
	k := h.key(acct, nil, "reports:create", "reports:read")
	site := h.site(acct)
	lost := func(key string) ledger.Report {
		rep, _, err := h.led.OrderReport(h.ctx, ledger.OrderReportParams{Account: acct, Integration: k.IntegrationID, IdemKey: key,
			SiteID: site, Jurisdiction: "NSW", DatasetIDs: []string{"aus.bores"}, Price: reportPrice, MaxSiteAreaM2: 400_000})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := lost("lost")
	lost("lost-2")
	lost("lost-3")
	if err := h.led.ArchiveSite(h.ctx, acct, site); err != nil {
		t.Fatal(err)
	}
	if _, err := h.led.FailReport(h.ctx, rep.ID, "internal_error"); err != nil {
		t.Fatal(err)
	}
	h.order(k.Secret, "lost-2", h.site(acct), "").problem(t, "idempotency_conflict", 409)
	h.order(k.Secret, "lost-3", site, "VIC").problem(t, "idempotency_conflict", 409)
	r := h.order(k.Secret, "lost", site, "")
	if got := ordered(t, r); got != rep.ID {
		t.Fatalf("retry made report %s, want %s", got, rep.ID)
	}
	if m := r.json(t); m["status"] != "failed" || m["dataset_ids"].([]any)[0] != "aus.bores" {
		t.Fatalf("retry %s", r.body)
	}
	if b := h.balance(acct); b != reportPrice { // three orders charged, the failed one refunded
		t.Fatalf("balance %d", b)
	}
	h.checkLedger()
}

// TestReportOrderConcurrentIdenticalChargesOnce: 100 concurrent identical
// orders (one Idempotency-Key) make one report and one charge.
func TestReportOrderConcurrentIdenticalChargesOnce(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(1000)
	k := h.key(acct, nil, "reports:create", "usage:read")
	site := h.site(acct)
	const n = 100
	var wg sync.WaitGroup
	results := make([]response, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.order(k.Secret, "same", site, "")
		}()
	}
	wg.Wait()
	var first string
	for i, r := range results {
		if r.status != 202 {
			t.Fatalf("order %d: %d %s", i, r.status, r.body)
		}
		if first == "" {
			first = string(r.body)
		}
		if string(r.body) != first {
			t.Fatalf("order %d answered differently:\n%s\n%s", i, r.body, first)
		}
	}
	if b := h.balance(acct); b != 1000-reportPrice {
		t.Fatalf("balance %d, want %d", b, 1000-reportPrice)
	}
	if n := h.purchaseCount(k.Secret); n != 1 {
		t.Fatalf("%d purchases", n)
	}
	h.checkLedger()
}

// TestReportOrdersRaceForCredits: 10N concurrent distinct orders on a
// balance of N reports: exactly N are charged, the rest are refused with
// insufficient_credits, and the ledger balances.
func TestReportOrdersRaceForCredits(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	const n = 4
	acct := h.account(n * reportPrice)
	k := h.key(acct, nil, "reports:create", "usage:read")
	site := h.site(acct)
	var wg sync.WaitGroup
	results := make([]response, 10*n)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idem := fmt.Sprintf("race-%d", i)
			results[i] = h.order(k.Secret, idem, site, "")
			// 40 orders of one account queue for its lock, each a durable
			// commit: on a machine loaded past its cores (the whole suite
			// at once) one can outlast its request's deadline and get a
			// retryable 503. A client retries it with the same key, as here.
			for range 5 {
				if results[i].status != 503 {
					break
				}
				time.Sleep(time.Second)
				results[i] = h.order(k.Secret, idem, site, "")
			}
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, r := range results {
		switch r.status {
		case 202:
			ok++
		case 402:
			r.problem(t, "insufficient_credits", 402)
			refused++
		default:
			t.Fatalf("unexpected %d %s", r.status, r.body)
		}
	}
	if ok != n || refused != 9*n {
		t.Fatalf("%d ordered, %d refused; want %d and %d", ok, refused, n, 9*n)
	}
	if b := h.balance(acct); b != 0 {
		t.Fatalf("balance %d", b)
	}
	if c := h.purchaseCount(k.Secret); c != n {
		t.Fatalf("%d purchases", c)
	}
	h.checkLedger()
}

// TestReportRefusalsChargeNothing: every refusal leaves the balance, the
// purchases and the reports as they were.
func TestReportRefusalsChargeNothing(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	// A layer whose sources are not approved for reports is never in scope.
	unapproved := json.RawMessage(`[{"source_variant_id":"v1","scope":null,"provider":"TAS EPA","source_url":null,"source_published_at":null,"source_effective_at":null,"retrieved_at":null,"licence":"Restricted","attribution":"TAS EPA","coverage_verified":true,"api_approved":true,"agent_approved":true,"report_approved":false}]`)
	y := ledger.Layer{ID: "tas.unapproved", SectionKey: "soil", Name: "Unapproved", SchemaVersion: "1", FieldSchema: json.RawMessage(`{}`),
		Units: json.RawMessage(`{}`), RadiusMaxM: 1000, Sources: unapproved, Jurisdictions: []string{"TAS"}, GeometryTypes: []string{"Polygon"}}
	if err := h.led.PublishRelease(h.ctx, y, ledger.Release{LayerID: y.ID, ReleaseID: "r_tas", SchemaVersion: "1", FieldSchema: y.FieldSchema,
		Units: y.Units, Sources: unapproved, ManifestKey: "releases/tas/m.json", FeatureCount: 1, TileCount: 1, Bytes: 1}); err != nil {
		t.Fatal(err)
	}
	acct := h.account(100)
	limit := int64(30)
	k := h.key(acct, nil, "reports:create", "reports:read", "usage:read")
	capped, err := h.led.CreateKey(h.ctx, ledger.KeyParams{Account: acct, Scopes: []string{"reports:create"}, SpendLimit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	site := h.site(acct)
	archived := h.site(acct)
	if err := h.led.ArchiveSite(h.ctx, acct, archived); err != nil {
		t.Fatal(err)
	}
	big := h.geomSite(acct, `{"type":"Point","coordinates":[151.0,-33.8]}`, 400_001)
	foreign := h.site(h.account(100))
	offshore := h.geomSite(acct, `{"type":"Point","coordinates":[156.0,-31.0]}`, 0)

	for _, id := range []uuid.UUID{archived, big} {
		m := h.order(k.Secret, "inel-"+id.String(), id, "").problem(t, "site_ineligible", 422)
		if !slices.Contains(fieldsNamed(m), "site_id") {
			t.Fatalf("site_ineligible does not name site_id: %v", m)
		}
	}
	// Another account's site answers exactly like a missing one.
	for _, id := range []uuid.UUID{foreign, uuid.New()} {
		m := h.order(k.Secret, "nf-"+id.String(), id, "").problem(t, "not_found", 404)
		if !slices.Contains(fieldsNamed(m), "site_id") {
			t.Fatalf("not_found does not name site_id: %v", m)
		}
	}
	// No layer in scope: a key restricted to QLD data ordering for NSW, and
	// a TAS site whose only TAS layer is not approved for reports (the
	// Australia-wide one is outside the key's restriction).
	narrow := h.key(acct, []string{"qld.flood"}, "reports:create")
	h.order(narrow.Secret, "u1", site, "").problem(t, "report_unavailable", 409)
	tasOnly := h.key(acct, []string{"tas.unapproved"}, "reports:create")
	h.order(tasOnly.Secret, "u2", offshore, "TAS").problem(t, "report_unavailable", 409)
	h.order(h.key(acct, []string{}, "reports:create").Secret, "u3", site, "").problem(t, "report_unavailable", 409)

	h.order(capped.Secret, "ceiling", site, "").problem(t, "credit_ceiling_exceeded", 409)
	poor := h.account(reportPrice - 1)
	pk := h.key(poor, nil, "reports:create")
	h.order(pk.Secret, "poor", h.site(poor), "").problem(t, "insufficient_credits", 402)
	if b := h.balance(poor); b != reportPrice-1 {
		t.Fatalf("poor balance %d", b)
	}

	if b := h.balance(acct); b != 100 {
		t.Fatalf("refusals charged: balance %d", b)
	}
	if n := h.purchaseCount(k.Secret); n != 0 {
		t.Fatalf("%d purchases after refusals", n)
	}
	if n := len(h.do("GET", "/reports", k.Secret, nil).json(t)["reports"].([]any)); n != 0 {
		t.Fatalf("%d reports after refusals", n)
	}
	h.checkLedger()
}

func TestReportJurisdiction(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(1000)
	k := h.key(acct, nil, "reports:create", "reports:read")
	nsw := h.site(acct)
	offshore := h.geomSite(acct, `{"type":"Point","coordinates":[156.0,-31.0]}`, 0)
	// A line from Sydney to Brisbane: vertices in NSW and QLD.
	border := h.geomSite(acct, `{"type":"LineString","coordinates":[[151.2,-33.87],[153.02,-27.47]]}`, 0)

	m := h.order(k.Secret, "j1", offshore, "").problem(t, "report_jurisdiction_required", 422)
	if got := fieldsNamed(m); len(got) != 1 || got[0] != "jurisdiction" {
		t.Fatalf("field_errors %v", got)
	}
	r := h.order(k.Secret, "j2", offshore, "VIC")
	ordered(t, r)
	if m := r.json(t); m["jurisdiction"] != "VIC" || len(m["dataset_ids"].([]any)) != 1 {
		t.Fatalf("offshore VIC order %s", r.body)
	}
	m = h.order(k.Secret, "j3", nsw, "VIC").problem(t, "report_jurisdiction_conflict", 422)
	if got := fieldsNamed(m); len(got) != 1 || got[0] != "jurisdiction" {
		t.Fatalf("field_errors %v", got)
	}
	ordered(t, h.order(k.Secret, "j4", nsw, "NSW"))
	h.order(k.Secret, "j5", border, "").problem(t, "report_jurisdiction_required", 422)
	h.order(k.Secret, "j6", border, "WA").problem(t, "report_jurisdiction_conflict", 422)
	r = h.order(k.Secret, "j7", border, "QLD")
	ordered(t, r)
	if ds := r.json(t)["dataset_ids"].([]any); len(ds) != 2 || ds[1] != "qld.flood" {
		t.Fatalf("QLD scope %v", ds)
	}
	h.order(k.Secret, "j8", nsw, "XX").problem(t, "invalid_request", 400)
}

// TestReportJurisdictionRule covers the rule itself, including Jervis Bay
// Territory (not one of the contract's eight: undetermined).
func TestReportJurisdictionRule(t *testing.T) {
	t.Parallel()
	var jbt orb.Point
	for _, s := range austates.States() {
		if s.Code == "JBT" {
			jbt, _ = planar.CentroidArea(s.Geometry)
		}
	}
	for _, tc := range []struct {
		geometry, given, want, code string
	}{
		{`{"type":"Point","coordinates":[144.96,-37.81]}`, "", "VIC", ""},
		{`{"type":"Point","coordinates":[144.96,-37.81]}`, "VIC", "VIC", ""},
		{`{"type":"Point","coordinates":[144.96,-37.81]}`, "NSW", "", "report_jurisdiction_conflict"},
		{`{"type":"Polygon","coordinates":[[[149.12,-35.28],[149.13,-35.28],[149.13,-35.27],[149.12,-35.27],[149.12,-35.28]]]}`, "", "ACT", ""},
		{`{"type":"MultiPoint","coordinates":[[115.86,-31.95],[138.6,-34.93]]}`, "", "", "report_jurisdiction_required"},
		{`{"type":"MultiPoint","coordinates":[[115.86,-31.95],[138.6,-34.93]]}`, "SA", "SA", ""},
		{`{"type":"MultiPoint","coordinates":[[115.86,-31.95],[138.6,-34.93]]}`, "NT", "", "report_jurisdiction_conflict"},
		{`{"type":"Point","coordinates":[160,-40]}`, "", "", "report_jurisdiction_required"},
		{`{"type":"Point","coordinates":[160,-40]}`, "TAS", "TAS", ""},
		{fmt.Sprintf(`{"type":"Point","coordinates":[%g,%g]}`, jbt[0], jbt[1]), "", "", "report_jurisdiction_required"},
		{fmt.Sprintf(`{"type":"Point","coordinates":[%g,%g]}`, jbt[0], jbt[1]), "ACT", "ACT", ""},
	} {
		got, code, err := api.ReportJurisdiction(json.RawMessage(tc.geometry), tc.given)
		if err != nil || got != tc.want || code != tc.code {
			t.Errorf("%s given %q: %q %q %v, want %q %q", tc.geometry, tc.given, got, code, err, tc.want, tc.code)
		}
	}
	if austates.StateAt(jbt) != "JBT" {
		t.Fatalf("the JBT probe %v lies in %q", jbt, austates.StateAt(jbt))
	}
}

// TestSiteStatesAgreesWithStateAt: the fast rule (only the state edges that
// cross a site's bound) finds what asking austates.StateAt of every vertex
// and the centroid finds, with a point counting also for the states within
// 3 nautical miles of it, for random sites across borders and coasts.
func TestSiteStatesAgreesWithStateAt(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	centres := []orb.Point{
		{146.92, -36.08}, {153.3, -28.2}, {150.0, -28.9}, {149.0, -35.4}, {141.0, -34.0}, {129.0, -26.0},
		{151.28, -33.85}, {147.3, -42.9}, {150.7, -35.15}, {138.6, -34.93}, {144.9, -37.85}, {151.0, -33.81},
	}
	checked := 0
	for _, c := range centres {
		for _, spread := range []float64{0.001, 0.02, 0.3} {
			for range 40 {
				n := 1 + rng.IntN(30)
				mp := make(orb.MultiPoint, n)
				for i := range mp {
					mp[i] = orb.Point{c[0] + spread*(2*rng.Float64()-1), c[1] + spread*(2*rng.Float64()-1)}
				}
				var want []string
				centroid, _ := planar.CentroidArea(mp)
				for _, p := range append(orb.MultiPoint{centroid}, mp...) {
					for _, code := range append(coastalStates(p), austates.StateAt(p)) {
						if code != "" && !slices.Contains(want, code) {
							want = append(want, code)
						}
					}
				}
				slices.Sort(want)
				got := api.SiteStates(mp)
				switch {
				case len(want) <= 2 && !slices.Equal(got, want):
					t.Fatalf("%v: got %v, want %v", mp, got, want)
				case len(want) > 2 && (len(got) != 2 || !slices.Contains(want, got[0]) || !slices.Contains(want, got[1])):
					t.Fatalf("%v: got %v, want two of %v", mp, got, want)
				}
				checked++
			}
		}
	}
	t.Logf("%d random sites checked", checked)
}

// coastalStates is the 3-nautical-mile reach by brute force: the states with
// an outline edge within 3 nautical miles of p, measured in p's
// own azimuthal equidistant projection (geodesic distances from p).
func coastalStates(p orb.Point) []string {
	local := geo.NewLocal(p)
	var out []string
	for _, s := range austates.Within(p.Bound().Pad(0.2)) {
	state:
		for _, poly := range s.Geometry {
			for _, ring := range poly {
				for i := 1; i < len(ring); i++ {
					if !(orb.MultiPoint{ring[i-1], ring[i]}).Bound().Intersects(p.Bound().Pad(0.2)) {
						continue
					}
					a, b := local.ForwardPoint(ring[i-1]), local.ForwardPoint(ring[i])
					if planar.DistanceFromSegment(a, b, orb.Point{}) <= 3*1852 {
						out = append(out, s.Code)
						break state
					}
				}
			}
		}
	}
	return out
}

// TestReportFeatureDisabledWithoutPrice: with no report price the order is
// feature_disabled, GET /context says so, and the refusal is not stored
// under the Idempotency-Key: once priced, the same request is accepted.
func TestReportFeatureDisabledWithoutPrice(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("aus.bores", "water", 0, []string{"AUS"}, "")
	acct := h.account(100)
	k := h.key(acct, nil, ledger.Scopes...)
	site := h.site(acct)
	capability := func() map[string]any {
		for _, c := range h.do("GET", "/context", k.Secret, nil).json(t)["capabilities"].(map[string]any)["operations"].([]any) {
			if c := c.(map[string]any); c["operation_id"] == "create_report" {
				return c
			}
		}
		t.Fatal("create_report not listed")
		return nil
	}
	if c := capability(); c["available"] != false || c["reason_code"] != "feature_disabled" {
		t.Fatalf("create_report without a price: %v", c)
	}
	h.order(k.Secret, "before-price", site, "").problem(t, "feature_disabled", 403)
	if b := h.balance(acct); b != 100 {
		t.Fatalf("balance %d", b)
	}
	if err := h.led.SetSetting(h.ctx, ledger.SettingReportPrice, 0); err != nil {
		t.Fatal(err)
	}
	if c := capability(); c["available"] != true || c["reason_code"] != nil {
		t.Fatalf("create_report with a price: %v", c)
	}
	r := h.order(k.Secret, "before-price", site, "")
	ordered(t, r)
	if m := r.json(t); m["credits_charged"] != float64(0) {
		t.Fatalf("free report charged: %s", r.body)
	}
	h.checkLedger()
}

// TestContextReportUnavailable: with a price set, GET /context lists
// create_report as report_unavailable for a key that may use no layer
// approved for reports, in any jurisdiction, and POST /reports agrees.
func TestContextReportUnavailable(t *testing.T) {
	t.Parallel()
	h := setup(t)
	if err := h.led.SetSetting(h.ctx, ledger.SettingReportPrice, 0); err != nil {
		t.Fatal(err)
	}
	acct := h.account(100)
	capability := func(key string) map[string]any {
		t.Helper()
		for _, c := range h.do("GET", "/context", key, nil).json(t)["capabilities"].(map[string]any)["operations"].([]any) {
			if c := c.(map[string]any); c["operation_id"] == "create_report" {
				return c
			}
		}
		t.Fatal("create_report not listed")
		return nil
	}
	want := func(key, reason string) {
		t.Helper()
		c := capability(key)
		if reason == "" && (c["available"] != true || c["reason_code"] != nil) ||
			reason != "" && (c["available"] != false || c["reason_code"] != reason) {
			t.Fatalf("create_report %v, want reason %q", c, reason)
		}
	}
	all := h.key(acct, nil, ledger.Scopes...)
	site := h.site(acct)
	// An empty catalogue: nothing can be in a report.
	want(all.Secret, "report_unavailable")
	h.order(all.Secret, "empty", site, "").problem(t, "report_unavailable", 409)

	// A QLD layer approved for reports: some report can be built (if not
	// for this NSW site), and the catalogue's change reaches the answer.
	h.publish("qld.flood", "flood", 0, []string{"QLD"}, "")
	want(all.Secret, "")
	h.order(all.Secret, "nsw-site", site, "").problem(t, "report_unavailable", 409)
	want(h.key(acct, []string{"qld.flood", "nsw.other"}, "reports:create").Secret, "")
	want(h.key(acct, []string{"nsw.other"}, "reports:create").Secret, "report_unavailable")
	want(h.key(acct, []string{}, "reports:create").Secret, "report_unavailable")
	// Scope comes first.
	want(h.key(acct, []string{}, "sites:read").Secret, "scope_insufficient")

	h.publish("aus.bores", "water", 0, []string{"AUS"}, "")
	want(h.key(acct, []string{"aus.bores"}, "reports:create").Secret, "")
	ordered(t, h.order(all.Secret, "aus", site, ""))
}

func TestReportRequestStrictness(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(100)
	k := h.key(acct, nil, "reports:create", "reports:read")
	site := h.site(acct)
	post := func(body string, headers ...string) response {
		return h.do("POST", "/reports", k.Secret, body, append([]string{"Idempotency-Key", uuid.NewString()}, headers...)...)
	}
	refused(t, post(`{"site_id":"`+site.String()+`","colour":"red"}`), "invalid_request", "colour")
	refused(t, post(`{"site_id":5}`), "invalid_request", "site_id")
	refused(t, post(`{"site_id":"not-a-uuid"}`), "invalid_request", "site_id")
	refused(t, post(`{}`), "invalid_request", "site_id")
	refused(t, post(`{"site_id":"`+site.String()+`","jurisdiction":"nsw"}`), "invalid_request", "jurisdiction")
	refused(t, post(`{"site_id":"`+site.String()+`","jurisdiction":null}`), "invalid_request", "jurisdiction")
	refused(t, post(`{"site_id":"`+site.String()+`","jurisdiction":7}`), "invalid_request", "jurisdiction")
	dup := post(`{"site_id":"` + site.String() + `","site_id":"` + site.String() + `"}`)
	if dup.status != 400 || !strings.Contains(string(dup.body), "duplicate key") {
		t.Fatalf("duplicate key: %d %s", dup.status, dup.body)
	}
	refused(t, h.do("POST", "/reports", k.Secret, map[string]any{"site_id": site}), "invalid_request", "Idempotency-Key")
	// Scopes: reading needs reports:read, ordering reports:create.
	reader := h.key(acct, nil, "reports:read")
	h.order(reader.Secret, "s1", site, "").problem(t, "scope_insufficient", 403)
	orderer := h.key(acct, nil, "reports:create")
	h.do("GET", "/reports", orderer.Secret, nil).problem(t, "scope_insufficient", 403)
	h.do("GET", "/reports/"+uuid.NewString(), orderer.Secret, nil).problem(t, "scope_insufficient", 403)
	if b := h.balance(acct); b != 100 {
		t.Fatalf("balance %d", b)
	}
}

func TestReportList(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(1000)
	k := h.key(acct, nil, "reports:create", "reports:read")
	a, b := h.site(acct), h.site(acct)
	start := h.clock.Now()
	var ids []uuid.UUID
	for i := range 5 {
		site := a
		if i%2 == 1 {
			site = b
		}
		ids = append(ids, ordered(t, h.order(k.Secret, fmt.Sprintf("list-%d", i), site, "")))
		h.clock.Advance(time.Minute)
	}
	if _, err := h.led.FailReport(h.ctx, ids[1], "internal_error"); err != nil {
		t.Fatal(err)
	}
	list := func(query string) (ids []string, next string) {
		t.Helper()
		m := h.do("GET", "/reports"+query, k.Secret, nil).json(t)
		for _, r := range m["reports"].([]any) {
			ids = append(ids, r.(map[string]any)["report_id"].(string))
		}
		if p := m["page"].(map[string]any); p["has_more"] == true {
			next = p["next_cursor"].(string)
		}
		return ids, next
	}
	str := func(ids ...uuid.UUID) []string {
		var out []string
		for _, id := range ids {
			out = append(out, id.String())
		}
		return out
	}
	// Oldest first, in pages of two.
	var all []string
	got, next := list("?limit=2")
	all = append(all, got...)
	for next != "" {
		got, next = list("?limit=2&cursor=" + url.QueryEscape(next))
		all = append(all, got...)
	}
	if !slices.Equal(all, str(ids...)) {
		t.Fatalf("traversal %v, want %v", all, str(ids...))
	}
	if got, _ := list("?site_id=" + b.String()); !slices.Equal(got, str(ids[1], ids[3])) {
		t.Fatalf("site filter %v", got)
	}
	if got, _ := list("?status=failed"); !slices.Equal(got, str(ids[1])) {
		t.Fatalf("status filter %v", got)
	}
	from := url.QueryEscape(start.Add(time.Minute).Format(time.RFC3339))
	before := url.QueryEscape(start.Add(3 * time.Minute).Format(time.RFC3339))
	if got, _ := list("?created_from=" + from + "&created_before=" + before); !slices.Equal(got, str(ids[1], ids[2])) {
		t.Fatalf("date filter %v", got)
	}
	// A cursor is bound to its filters.
	_, next = list("?limit=1&status=queued")
	h.do("GET", "/reports?limit=1&status=completed&cursor="+url.QueryEscape(next), k.Secret, nil).problem(t, "invalid_cursor", 400)
	h.do("GET", "/reports?cursor=garbage", k.Secret, nil).problem(t, "invalid_cursor", 400)
	m := h.do("GET", "/reports?created_from="+before+"&created_before="+from, k.Secret, nil).problem(t, "invalid_request", 400)
	if !slices.Contains(fieldsNamed(m), "created_before") {
		t.Fatalf("inverted range: %v", m)
	}
	m = h.do("GET", "/reports?limit=101&status=done&site_id=x&created_from=2026-01-01T00:00:00", k.Secret, nil).problem(t, "invalid_request", 400)
	for _, f := range []string{"limit", "status", "site_id", "created_from"} {
		if !slices.Contains(fieldsNamed(m), f) {
			t.Fatalf("field_errors %v lack %s", fieldsNamed(m), f)
		}
	}
	// Another account sees none of them.
	other := h.key(h.account(0), nil, "reports:read")
	if n := len(h.do("GET", "/reports", other.Secret, nil).json(t)["reports"].([]any)); n != 0 {
		t.Fatalf("another account lists %d reports", n)
	}
	sameApartFromRequestID(t, h.do("GET", "/reports/"+ids[0].String(), other.Secret, nil),
		h.do("GET", "/reports/"+uuid.NewString(), other.Secret, nil))
}

// TestReportDatasetRestriction: a restricted key sees a report only if it
// permits every dataset in its scope, and a historical report of unknown
// scope only without a restriction (contract endpoint rule 8).
func TestReportDatasetRestriction(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(1000)
	k := h.key(acct, nil, "reports:create", "reports:read")
	site := h.site(acct)
	full := ordered(t, h.order(k.Secret, "full", site, "")) // aus.bores + nsw.contaminated-sites
	narrowOrderer := h.key(acct, []string{"aus.bores"}, "reports:create", "reports:read")
	narrowed := ordered(t, h.order(narrowOrderer.Secret, "narrow", site, ""))
	imported, err := h.led.ImportReport(h.ctx, ledger.ImportReportParams{ID: uuid.New(), RevisionID: uuid.New(), Account: acct, SiteID: site,
		CreatedAt: h.clock.Now().Add(-24 * time.Hour), Limitations: []string{"Historical report: dataset scope and provenance unknown."}})
	if err != nil {
		t.Fatal(err)
	}
	visible := func(key string) []string {
		var out []string
		for _, r := range h.do("GET", "/reports", key, nil).json(t)["reports"].([]any) {
			out = append(out, r.(map[string]any)["report_id"].(string))
		}
		return out
	}
	both := h.key(acct, []string{"nsw.contaminated-sites", "aus.bores"}, "reports:read")
	bores := h.key(acct, []string{"aus.bores"}, "reports:read")
	unrestricted := h.key(acct, nil, "reports:read")
	for _, tc := range []struct {
		key  string
		want []uuid.UUID
	}{
		{unrestricted.Secret, []uuid.UUID{imported.ID, full, narrowed}},
		{both.Secret, []uuid.UUID{full, narrowed}},
		{bores.Secret, []uuid.UUID{narrowed}},
	} {
		var want []string
		for _, id := range tc.want {
			want = append(want, id.String())
		}
		if got := visible(tc.key); !slices.Equal(got, want) {
			t.Errorf("visible %v, want %v", got, want)
		}
	}
	sameApartFromRequestID(t, h.do("GET", "/reports/"+full.String(), bores.Secret, nil), h.do("GET", "/reports/"+uuid.NewString(), bores.Secret, nil))
	h.do("GET", "/reports/"+imported.ID.String(), both.Secret, nil).problem(t, "not_found", 404)
	h.do("GET", "/reports/"+imported.ID.String()+"/revisions", both.Secret, nil).problem(t, "not_found", 404)
	h.do("GET", "/reports/"+imported.ID.String()+"/content", both.Secret, nil).problem(t, "not_found", 404)
	if r := h.do("GET", "/reports/"+narrowed.String(), bores.Secret, nil); r.status != 200 {
		t.Fatalf("narrowed report for its own scope: %d", r.status)
	}
	m := h.do("GET", "/reports/"+imported.ID.String(), unrestricted.Secret, nil).json(t)["report"].(map[string]any)
	if m["origin"] != "website" || m["dataset_ids"] != nil || m["receipt"] != nil || m["purchase_id"] != nil ||
		m["provenance_status"] != "unknown" || m["content_status"] != "unavailable" || m["evidence"] != nil {
		t.Fatalf("imported report %v", m)
	}
	// A PDF-only report has no text.
	h.do("GET", "/reports/"+imported.ID.String()+"/content", unrestricted.Secret, nil).problem(t, "content_unavailable", 409)
}

// evidence is a revision's frozen evidence for tests.
func evidence(site uuid.UUID, feature string, previous *uuid.UUID) json.RawMessage {
	rel := "r_1"
	sv := "2024-03"
	count := int64(1)
	bearing := 87.5
	e := jobs.Evidence{Version: jobs.EvidenceVersion, BuiltAt: time.Date(2026, 11, 22, 9, 1, 0, 0, time.UTC),
		Site: jobs.EvidenceSite{SiteID: site.String(), Fingerprint: strings.Repeat("0a", 32), AreaM2: 10000, Jurisdiction: "NSW"},
		Layers: []jobs.EvidenceLayer{{LayerID: "nsw.contaminated-sites", Name: "Contaminated sites", SectionKey: "contamination",
			SectionName: "Contamination", ReleaseID: &rel, SchemaVersion: &sv, RadiusM: 500, DataStatus: "data_present", Coverage: "complete",
			MatchedCount: &count,
			Provenance: []jobs.EvidenceProvenance{{ReleaseID: rel, Source: tiles.Source{SourceVariantID: "v1", Provider: "NSW EPA",
				Licence: "CC-BY-4.0", Attribution: "© State of NSW", ReportApproved: true}}},
			Features: []jobs.EvidenceFeature{{FeatureID: feature, DistanceM: 212.5, BearingDeg: &bearing}}}},
	}
	// A first revision's evidence is as evidence-2 stored it (no local
	// government areas); a later one's names them.
	e.Site.Location = &jobs.EvidenceLocation{Longitude: 151, Latitude: -33.8, Addresses: []string{}, LotPlans: []string{}, TimeZone: "Australia/Sydney"}
	if previous != nil {
		e.Site.Location.LGAs = []string{"City of Parramatta"}
		p := previous.String()
		e.PreviousRevisionID = &p
		e.Layers[0].Changes = &jobs.EvidenceChanges{PreviousReleaseID: &rel, PreviousStatus: "data_present", PreviousCount: &count,
			AddedCount: 1, RemovedCount: 1, Added: []string{feature}, Removed: []string{"f-1"}}
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return b
}

// revise adds revision n of a report with sections and one PDF artifact.
func (h *harness) revise(account, report, site uuid.UUID, n int, sections []string, prev *uuid.UUID) uuid.UUID {
	h.t.Helper()
	id := uuid.Must(uuid.NewV7())
	if _, err := h.led.CreateArtifact(h.ctx, ledger.ArtifactParams{ID: uuid.Must(uuid.NewV7()), Account: account, ReportID: &report,
		RevisionID: &id, Revision: &n, Filename: fmt.Sprintf("site-report-r%d.pdf", n), MediaType: ledger.MediaPDF, Size: 1000 + int64(n),
		SHA256: strings.Repeat(fmt.Sprintf("%x", n%16), 64), StorageKey: "artifacts/" + id.String(), DatasetIDs: []string{"aus.bores", "nsw.contaminated-sites"}}); err != nil {
		h.t.Fatal(err)
	}
	var secs []ledger.ReportSection
	for i, s := range sections {
		heading := fmt.Sprintf("Section %d", i)
		secs = append(secs, ledger.ReportSection{Index: i, Heading: &heading, Text: s})
	}
	if _, err := h.led.AddRevision(h.ctx, ledger.RevisionParams{ID: id, ReportID: report, Number: n, ContentStatus: "available",
		ProvenanceStatus: "captured", Limitations: []string{"An empty result does not prove the absence of risk."},
		Evidence: evidence(site, fmt.Sprintf("f-%d", n), prev), Sections: secs}); err != nil {
		h.t.Fatal(err)
	}
	return id
}

func TestReportReadAndRevisions(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(100)
	k := h.key(acct, nil, "reports:create", "reports:read")
	site := h.site(acct)
	id := ordered(t, h.order(k.Secret, "read", site, ""))
	path := "/reports/" + id.String()

	// Before the build: pending, no evidence, the receipt already there.
	m := h.do("GET", path, k.Secret, nil).json(t)["report"].(map[string]any)
	if m["status"] != "queued" || m["content_status"] != "pending" || m["provenance_status"] != "pending" || m["evidence"] != nil ||
		m["revision_id"] != nil || m["receipt"] == nil || m["refund_status"] != "none" || len(m["artifacts"].([]any)) != 0 {
		t.Fatalf("queued report %v", m)
	}
	if rv := m["revisions"].(map[string]any); rv["count"] != float64(0) || rv["latest_revision_id"] != nil || rv["revisions_url"] != api.BasePath+path+"/revisions" {
		t.Fatalf("revisions %v", rv)
	}
	h.do("GET", path+"/content", k.Secret, nil).problem(t, "result_not_ready", 409)

	r1 := h.revise(acct, id, site, 1, []string{"one", "two"}, nil)
	r2 := h.revise(acct, id, site, 2, []string{"uno"}, &r1)
	r3 := h.revise(acct, id, site, 3, []string{"eins"}, &r2)

	m = h.do("GET", path, k.Secret, nil).json(t)["report"].(map[string]any)
	if m["status"] != "completed" || m["revision_id"] != r3.String() || m["revision"] != float64(3) || m["content_status"] != "available" ||
		m["provenance_status"] != "captured" || len(m["limitations"].([]any)) != 1 {
		t.Fatalf("completed report %v", m)
	}
	ev := m["evidence"].(map[string]any)
	layer := ev["layers"].([]any)[0].(map[string]any)
	if ev["previous_revision_id"] != r2.String() || layer["features"].([]any)[0].(map[string]any)["feature_id"] != "f-3" ||
		layer["changes"].(map[string]any)["added_count"] != float64(1) || layer["provenance"].([]any)[0].(map[string]any)["release_id"] != "r_1" {
		t.Fatalf("evidence %v", ev)
	}
	if lgas := ev["site"].(map[string]any)["location"].(map[string]any)["local_government_areas"]; fmt.Sprint(lgas) != "[City of Parramatta]" {
		t.Fatalf("evidence's local government areas %v", lgas)
	}
	arts := m["artifacts"].([]any)
	if len(arts) != 1 || arts[0].(map[string]any)["revision"] != float64(3) || arts[0].(map[string]any)["revision_id"] != r3.String() {
		t.Fatalf("artifacts %v", arts)
	}
	// A selected revision: its own evidence and files; latest stays r3.
	m = h.do("GET", path+"?revision_id="+r1.String(), k.Secret, nil).json(t)["report"].(map[string]any)
	ev = m["evidence"].(map[string]any)
	if m["revision_id"] != r1.String() || m["revision"] != float64(1) || ev["previous_revision_id"] != nil ||
		ev["layers"].([]any)[0].(map[string]any)["changes"] != nil ||
		m["artifacts"].([]any)[0].(map[string]any)["revision_id"] != r1.String() ||
		m["revisions"].(map[string]any)["latest_revision_id"] != r3.String() || m["revisions"].(map[string]any)["count"] != float64(3) {
		t.Fatalf("revision 1 %v", m)
	}
	if _, ok := ev["site"].(map[string]any)["location"].(map[string]any)["local_government_areas"]; ok {
		t.Fatalf("evidence stored without local government areas names some: %v", ev["site"])
	}
	h.do("GET", path+"?revision_id="+uuid.NewString(), k.Secret, nil).problem(t, "not_found", 404)

	// Revisions in order, paged.
	rm := h.do("GET", path+"/revisions?limit=2", k.Secret, nil).json(t)
	revs := rm["revisions"].([]any)
	if len(revs) != 2 || revs[0].(map[string]any)["revision_id"] != r1.String() || revs[1].(map[string]any)["revision"] != float64(2) {
		t.Fatalf("revisions page 1 %v", revs)
	}
	next := rm["page"].(map[string]any)["next_cursor"].(string)
	rm = h.do("GET", path+"/revisions?limit=2&cursor="+url.QueryEscape(next), k.Secret, nil).json(t)
	if revs := rm["revisions"].([]any); len(revs) != 1 || revs[0].(map[string]any)["revision_id"] != r3.String() || rm["page"].(map[string]any)["has_more"] != false {
		t.Fatalf("revisions page 2 %v", rm)
	}
	// A cursor belongs to its report.
	other := ordered(t, h.order(k.Secret, "read-2", site, ""))
	h.do("GET", "/reports/"+other.String()+"/revisions?cursor="+url.QueryEscape(next), k.Secret, nil).problem(t, "invalid_cursor", 400)
}

// TestReportContentPinnedToRevision: a text traversal stays on the revision
// it started with when a newer one lands.
func TestReportContentPinnedToRevision(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(100)
	k := h.key(acct, nil, "reports:create", "reports:read")
	site := h.site(acct)
	id := ordered(t, h.order(k.Secret, "content", site, ""))
	path := "/reports/" + id.String() + "/content"
	r1 := h.revise(acct, id, site, 1, []string{"a0", "a1", "a2", "a3", "a4"}, nil)

	page := func(query string) (texts []string, revision, next string) {
		t.Helper()
		m := h.do("GET", path+query, k.Secret, nil).json(t)
		for _, s := range m["sections"].([]any) {
			texts = append(texts, s.(map[string]any)["text"].(string))
		}
		if p := m["page"].(map[string]any); p["has_more"] == true {
			next = p["next_cursor"].(string)
		}
		return texts, m["revision_id"].(string), next
	}
	texts, rev, next := page("?limit=2")
	if !slices.Equal(texts, []string{"a0", "a1"}) || rev != r1.String() || next == "" {
		t.Fatalf("page 1: %v %s %q", texts, rev, next)
	}
	r2 := h.revise(acct, id, site, 2, []string{"b0", "b1", "b2"}, &r1)
	texts, rev, next = page("?limit=2&cursor=" + url.QueryEscape(next))
	if !slices.Equal(texts, []string{"a2", "a3"}) || rev != r1.String() {
		t.Fatalf("page 2 left revision 1: %v %s", texts, rev)
	}
	texts, _, last := page("?limit=2&cursor=" + url.QueryEscape(next))
	if !slices.Equal(texts, []string{"a4"}) || last != "" {
		t.Fatalf("page 3: %v %q", texts, last)
	}
	// A new traversal reads the latest revision; revision_id selects one.
	if texts, rev, _ := page(""); !slices.Equal(texts, []string{"b0", "b1", "b2"}) || rev != r2.String() {
		t.Fatalf("latest: %v %s", texts, rev)
	}
	texts, rev, next = page("?limit=4&revision_id=" + r1.String())
	if !slices.Equal(texts, []string{"a0", "a1", "a2", "a3"}) || rev != r1.String() {
		t.Fatalf("revision 1: %v %s", texts, rev)
	}
	// The cursor is bound to the revision_id it was issued with.
	h.do("GET", path+"?cursor="+url.QueryEscape(next), k.Secret, nil).problem(t, "invalid_cursor", 400)
	h.do("GET", path+"?revision_id="+r2.String()+"&cursor="+url.QueryEscape(next), k.Secret, nil).problem(t, "invalid_cursor", 400)
	if texts, _, _ := page("?revision_id=" + r1.String() + "&cursor=" + url.QueryEscape(next)); !slices.Equal(texts, []string{"a4"}) {
		t.Fatalf("revision 1 page 2: %v", texts)
	}
	h.do("GET", path+"?revision_id="+uuid.NewString(), k.Secret, nil).problem(t, "not_found", 404)

	// A failed report that never had a revision has no text.
	failed := ordered(t, h.order(k.Secret, "content-failed", site, ""))
	if _, err := h.led.FailReport(h.ctx, failed, "source_unavailable"); err != nil {
		t.Fatal(err)
	}
	h.do("GET", "/reports/"+failed.String()+"/content", k.Secret, nil).problem(t, "content_unavailable", 409)
	m := h.do("GET", "/reports/"+failed.String(), k.Secret, nil).json(t)["report"].(map[string]any)
	if m["status"] != "failed" || m["reason_code"] != "source_unavailable" || m["refund_status"] != "full" || m["credits_refunded"] != float64(reportPrice) {
		t.Fatalf("failed report %v", m)
	}
	h.checkLedger()
}

// TestReportContentPageBound: sections whose JSON escapes swell them end a
// page before the 1 MiB response limit; the cursor continues after it.
func TestReportContentPageBound(t *testing.T) {
	t.Parallel()
	h := reportSetup(t)
	acct := h.account(100)
	k := h.key(acct, nil, "reports:create", "reports:read")
	site := h.site(acct)
	id := ordered(t, h.order(k.Secret, "bound", site, ""))
	// 8 KiB of control characters: 6 bytes each once escaped (\u0001).
	text := strings.Repeat("\x01", 8192)
	var secs []string
	for range 40 {
		secs = append(secs, text)
	}
	h.revise(acct, id, site, 1, secs, nil)
	path := "/reports/" + id.String() + "/content?limit=100"
	total, cursor := 0, ""
	for pages := 0; ; pages++ {
		q := path
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := h.do("GET", q, k.Secret, nil)
		if len(r.body) > 1<<20 {
			t.Fatalf("page of %d bytes", len(r.body))
		}
		m := r.json(t)
		n := len(m["sections"].([]any))
		if n == 0 || n == 40 {
			t.Fatalf("page of %d sections", n)
		}
		total += n
		p := m["page"].(map[string]any)
		if p["has_more"] != true {
			break
		}
		cursor = p["next_cursor"].(string)
	}
	if total != 40 {
		t.Fatalf("%d sections in all", total)
	}
}

// BenchmarkReportJurisdiction: the rule over a site of the contract's
// largest size, 10,000 vertices (a 40 ha circle in NSW).
func BenchmarkReportJurisdiction(b *testing.B) {
	ring := make([][2]float64, 0, 10_000)
	for i := range 9_999 {
		a := 2 * math.Pi * float64(i) / 9_999
		ring = append(ring, [2]float64{151.0 + 0.0038*math.Cos(a), -33.81 + 0.0032*math.Sin(a)})
	}
	ring = append(ring, ring[0])
	g, err := json.Marshal(map[string]any{"type": "Polygon", "coordinates": [][][2]float64{ring}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if j, code, err := api.ReportJurisdiction(g, ""); err != nil || j != "NSW" || code != "" {
			b.Fatal(j, code, err)
		}
	}
}
