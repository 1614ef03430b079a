package api_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/geo"
	"siteenv/ledger"
)

// squareHa is a square of about ha hectares near Parramatta, exact to 0.001 ha.
func squareHa(ha float64, lon0, lat0 float64) orb.Polygon {
	side := math.Sqrt(ha * 10_000)
	var p orb.Polygon
	for i := 0; i < 20; i++ {
		dlat := side / 110_950
		dlon := side / (111_320 * math.Cos(lat0*math.Pi/180))
		p = orb.Polygon{{{lon0, lat0}, {lon0 + dlon, lat0}, {lon0 + dlon, lat0 + dlat}, {lon0, lat0 + dlat}, {lon0, lat0}}}
		side *= math.Sqrt(ha * 10_000 / geo.Area(p))
	}
	return p
}

func geometrySelector(g orb.Geometry) map[string]any {
	return map[string]any{"kind": "geometry", "geometry": geojson.NewGeometry(g)}
}

// idem is shared by parallel tests.
var idem atomic.Int64

func nextIdem() string { return fmt.Sprintf("site-%d-%s", idem.Add(1), uuid.NewString()[:8]) }

func (h *harness) createSite(key string, body map[string]any) response {
	h.t.Helper()
	return h.do("POST", "/sites", key, body, "Idempotency-Key", nextIdem())
}

func TestCreateSiteCanonicalAndDeduplicated(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k := h.key(acct, nil, "sites:read", "sites:write")
	sq := squareHa(2, 151.0, -33.81)
	r := h.createSite(k.Secret, map[string]any{"site": geometrySelector(sq), "name": "Lot 7"})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	site := r.json(t)["site"].(map[string]any)
	if site["crs"] != "OGC:CRS84" || len(site["fingerprint"].(string)) != 64 || site["name"] != "Lot 7" {
		t.Fatalf("site %v", site)
	}
	if a := site["area_m2"].(float64); math.Abs(a-20_000) > 1 {
		t.Fatalf("area %f", a)
	}
	// The same boundary written differently (other start vertex, clockwise) is the same site.
	ring := sq[0]
	rewritten := orb.Polygon{{ring[2], ring[1], ring[0], ring[3], ring[2]}}
	r2 := h.createSite(k.Secret, map[string]any{"site": geometrySelector(rewritten)})
	if r2.json(t)["site"].(map[string]any)["site_id"] != site["site_id"] {
		t.Fatalf("rewritten boundary made a new site: %s", r2.body)
	}
	// A read-only key reuses but cannot create.
	ro := h.key(acct, nil, "sites:read")
	if r := h.createSite(ro.Secret, map[string]any{"site": geometrySelector(sq)}); r.status != 200 {
		t.Fatalf("reuse with sites:read: %d %s", r.status, r.body)
	}
	h.createSite(ro.Secret, map[string]any{"site": geometrySelector(squareHa(1, 151.01, -33.81))}).problem(t, "scope_insufficient", 403)

	// Saved-site selector returns the site.
	r3 := h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "saved_site", "site_id": site["site_id"]}})
	if r3.json(t)["site"].(map[string]any)["site_id"] != site["site_id"] {
		t.Fatal("saved_site selector")
	}
}

func TestCreateSiteAreaLimit(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "sites:read", "sites:write")
	if r := h.createSite(k.Secret, map[string]any{"site": geometrySelector(squareHa(39.9, 151.0, -33.8))}); r.status != 200 {
		t.Fatalf("39.9 ha refused: %s", r.body)
	}
	r := h.createSite(k.Secret, map[string]any{"site": geometrySelector(squareHa(40.1, 151.1, -33.8))})
	r.problem(t, "site_ineligible", 422)
	assertProblemShape(t, r)
}

func TestCreateSiteSelectors(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k := h.key(acct, nil, "sites:read", "sites:write")

	// point, and the same point in MGA zone 56 (cs2cs: 151.2108 -33.8523 -> 334475.546767 6252780.548820).
	p := h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": 151.2108, "latitude": -33.8523, "crs": "EPSG:7844"}})
	pp := h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "projected_point", "easting": 334475.546767, "northing": 6252780.548820, "epsg": 7856}})
	if p.status != 200 || pp.json(t)["site"].(map[string]any)["site_id"] != p.json(t)["site"].(map[string]any)["site_id"] {
		t.Fatalf("MGA point is not the same site: %s / %s", p.body, pp.body)
	}
	h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "projected_point", "easting": 334475, "northing": 6252780, "epsg": 28356}}).problem(t, "unsupported_crs", 422)
	h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "projected_point", "easting": 334475, "northing": 6252780}}).problem(t, "invalid_request", 400)
	h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": 151, "latitude": -95}}).problem(t, "invalid_geometry", 422)
	h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "address", "address_id": "adr_1"}}).problem(t, "invalid_request", 400)
	h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "teleport"}}).problem(t, "invalid_request", 400)

	bowtie := map[string]any{"kind": "geometry", "geometry": map[string]any{"type": "Polygon",
		"coordinates": [][][]float64{{{151, -33.8}, {151.001, -33.801}, {151.001, -33.8}, {151, -33.801}, {151, -33.8}}}}}
	m := h.createSite(k.Secret, map[string]any{"site": bowtie}).problem(t, "invalid_geometry", 422)
	fe := m["field_errors"].([]any)[0].(map[string]any)
	if f := fe["field"].(string); len(f) < len("site.geometry") || f[:13] != "site.geometry" {
		t.Fatalf("field_errors do not say where: %v", fe)
	}

	// cadastre: complete and incomplete.
	parcel := squareHa(0.06, 151.02, -33.82)
	pj, _ := json.Marshal(geojson.NewGeometry(parcel))
	rows := []ledger.ParcelRow{{Jurisdiction: "NSW", CadastreID: "7/DP1234", Geometry: pj, MinLon: 151.02, MinLat: -33.82, MaxLon: 151.03, MaxLat: -33.81}}
	i := 0
	if _, _, err := h.led.ReplaceGazetteer(h.ctx, func() (ledger.AddressRow, bool, error) { return ledger.AddressRow{}, false, nil },
		func() (ledger.ParcelRow, bool, error) {
			if i == len(rows) {
				return ledger.ParcelRow{}, false, nil
			}
			i++
			return rows[i-1], true, nil
		}); err != nil {
		t.Fatal(err)
	}
	c := h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{"7/DP1234"}}})
	if c.status != 200 || c.json(t)["site"].(map[string]any)["fingerprint"] != geo.Fingerprint(geo.Canonical(parcel)) {
		t.Fatalf("cadastre site %s", c.body)
	}
	m = h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{"7/DP1234", "8/DP1234"}}}).problem(t, "cadastre_incomplete", 422)
	if fe := m["field_errors"].([]any); len(fe) != 1 || fe[0].(map[string]any)["field"] != "site.cadastre_ids[1]" {
		t.Fatalf("missing parcel not named: %v", fe)
	}
}

func TestExternalReferences(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "sites:read", "sites:write")
	ref := map[string]any{"namespace": "crm", "reference": "DEAL-42"}
	a := h.createSite(k.Secret, map[string]any{"site": geometrySelector(squareHa(1, 151, -33.8)), "external_reference": ref})
	id := a.json(t)["site"].(map[string]any)["site_id"]
	b := h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "external_reference", "namespace": "crm", "reference": "DEAL-42"}})
	if b.json(t)["site"].(map[string]any)["site_id"] != id {
		t.Fatalf("reference did not resolve: %s", b.body)
	}
	r := h.createSite(k.Secret, map[string]any{"site": geometrySelector(squareHa(1.5, 151, -33.8)), "external_reference": ref})
	r.problem(t, "site_reference_conflict", 409)
	// The refused request created nothing.
	m := h.do("GET", "/sites", k.Secret, nil).json(t)
	if n := len(m["sites"].([]any)); n != 1 {
		t.Fatalf("%d sites after a refused rebinding", n)
	}
	h.createSite(k.Secret, map[string]any{"site": map[string]any{"kind": "external_reference", "namespace": "crm", "reference": "NOPE"}}).problem(t, "not_found", 404)
}

func TestSiteLifecycleAndIsolation(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k := h.key(acct, nil, "sites:read", "sites:write")
	var ids []string
	for i := 0; i < 3; i++ {
		r := h.createSite(k.Secret, map[string]any{"site": geometrySelector(squareHa(1, 151+float64(i)*0.01, -33.8)), "name": fmt.Sprintf("Site %d", i)})
		ids = append(ids, r.json(t)["site"].(map[string]any)["site_id"].(string))
	}
	port, err := h.led.CreatePortfolio(h.ctx, acct, "West")
	if err != nil {
		t.Fatal(err)
	}
	// PATCH: rename, assign portfolio, repeat safely, remove portfolio.
	for i := 0; i < 2; i++ {
		r := h.do("PATCH", "/sites/"+ids[1], k.Secret, map[string]any{"name": "Renamed", "portfolio_id": port.ID})
		s := r.json(t)["site"].(map[string]any)
		if s["name"] != "Renamed" || s["portfolio_id"] != port.ID.String() {
			t.Fatalf("patch %s", r.body)
		}
	}
	m := h.do("GET", "/portfolios", k.Secret, nil).json(t)
	if p := m["portfolios"].([]any)[0].(map[string]any); p["site_count"] != float64(1) {
		t.Fatalf("portfolios %v", p)
	}
	m = h.do("GET", "/sites?portfolio_id="+port.ID.String(), k.Secret, nil).json(t)
	if n := len(m["sites"].([]any)); n != 1 {
		t.Fatalf("portfolio filter %d", n)
	}
	h.do("PATCH", "/sites/"+ids[1], k.Secret, map[string]any{"geometry": map[string]any{"type": "Point", "coordinates": []float64{1, 2}}}).problem(t, "paid_site_immutable", 409)
	h.do("PATCH", "/sites/"+ids[1], k.Secret, map[string]any{"portfolio_id": uuid.NewString()}).problem(t, "not_found", 404)
	if r := h.do("PATCH", "/sites/"+ids[1], k.Secret, map[string]any{"portfolio_id": nil}); r.json(t)["site"].(map[string]any)["portfolio_id"] != nil {
		t.Fatal("null did not remove the portfolio")
	}
	h.do("PATCH", "/sites/"+ids[1], k.Secret, map[string]any{}).problem(t, "invalid_request", 400)

	// Oldest first, search, pages.
	m = h.do("GET", "/sites?limit=2", k.Secret, nil).json(t)
	if s := m["sites"].([]any); len(s) != 2 || s[0].(map[string]any)["site_id"] != ids[0] {
		t.Fatalf("order %v", s)
	}
	next := m["page"].(map[string]any)["next_cursor"].(string)
	m = h.do("GET", "/sites?limit=2&cursor="+url.QueryEscape(next), k.Secret, nil).json(t)
	if s := m["sites"].([]any); len(s) != 1 || s[0].(map[string]any)["site_id"] != ids[2] {
		t.Fatalf("page 2 %v", s)
	}
	m = h.do("GET", "/sites?search=renamed", k.Secret, nil).json(t)
	if n := len(m["sites"].([]any)); n != 1 {
		t.Fatalf("search %d", n)
	}

	// Another account sees nothing of these sites, exactly as if missing.
	other := h.key(h.account(0), nil, "sites:read", "sites:write")
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/sites/" + ids[0], nil},
		{"PATCH", "/sites/" + ids[0], map[string]any{"name": "x"}},
		{"DELETE", "/sites/" + ids[0], nil},
	} {
		a := h.do(c.method, c.path, other.Secret, c.body)
		b := h.do(c.method, "/sites/"+uuid.NewString(), other.Secret, c.body)
		sameApartFromRequestID(t, a, b)
	}
	h.createSite(other.Secret, map[string]any{"site": map[string]any{"kind": "saved_site", "site_id": ids[0]}}).problem(t, "not_found", 404)

	// Archive: safe to repeat; the site leaves lists and reads.
	for i := 0; i < 2; i++ {
		r := h.do("DELETE", "/sites/"+ids[0], k.Secret, nil)
		if r.status != 200 || r.json(t)["archived"] != true {
			t.Fatalf("archive %d: %s", i, r.body)
		}
	}
	h.do("GET", "/sites/"+ids[0], k.Secret, nil).problem(t, "not_found", 404)
	m = h.do("GET", "/sites", k.Secret, nil).json(t)
	if n := len(m["sites"].([]any)); n != 2 {
		t.Fatalf("archived site still listed: %d", n)
	}
	h.do("GET", "/sites/not-a-uuid", k.Secret, nil).problem(t, "invalid_request", 400)
}

// TestSiteInvalidOnceRoundedIsRefused: a geometry valid as written whose
// stored form (rounded to 8 decimals) is not, here two small squares
// 3e-9 degrees (0.3 mm) apart that rounding makes share an edge, is
// refused as invalid_geometry naming the geometry, by POST /sites and
// POST /queries alike, and nothing is stored: a site that could not be
// searched is never saved (it was, and its queries failed).
func TestSiteInvalidOnceRoundedIsRefused(t *testing.T) {
	t.Parallel()
	h := setup(t)
	k := h.key(h.account(0), nil, "sites:read", "sites:write", "queries:run")
	apart := map[string]any{"kind": "geometry", "geometry": map[string]any{"type": "MultiPolygon", "coordinates": [][][][]float64{
		{{{151, -33.801}, {151.001, -33.801}, {151.001, -33.8}, {151, -33.8}, {151, -33.801}}},
		{{{151.001000003, -33.801}, {151.002, -33.801}, {151.002, -33.8}, {151.001000003, -33.8}, {151.001000003, -33.801}}},
	}}}
	for _, r := range []response{
		h.createSite(k.Secret, map[string]any{"site": apart}),
		h.do("POST", "/queries", k.Secret, map[string]any{"site": apart, "layer_ids": []string{"nsw.none"}, "radius_m": 100}, "Idempotency-Key", nextIdem()),
	} {
		m := r.problem(t, "invalid_geometry", 422)
		fe := m["field_errors"].([]any)[0].(map[string]any)
		if fe["field"] != "site.geometry" || !strings.Contains(fe["message"].(string), "rounded to 8 decimal places") {
			t.Fatalf("field_errors %v do not name the geometry and say why", fe)
		}
	}
	if sites := h.do("GET", "/sites", k.Secret, nil).json(t)["sites"].([]any); len(sites) != 0 {
		t.Fatalf("%d sites stored", len(sites))
	}
	// The same squares a millimetre apart (on the grid) are a site.
	ok := map[string]any{"kind": "geometry", "geometry": map[string]any{"type": "MultiPolygon", "coordinates": [][][][]float64{
		{{{151, -33.801}, {151.001, -33.801}, {151.001, -33.8}, {151, -33.8}, {151, -33.801}}},
		{{{151.00100001, -33.801}, {151.002, -33.801}, {151.002, -33.8}, {151.00100001, -33.8}, {151.00100001, -33.801}}},
	}}}
	if r := h.createSite(k.Secret, map[string]any{"site": ok}); r.status != 201 && r.status != 200 {
		t.Fatalf("a valid site on the grid: %d %s", r.status, r.body)
	}
}
