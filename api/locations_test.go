package api_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"siteenv/geo"
	"siteenv/ledger"
)

// locParcel is a rectangular parcel [lon0, lon1] x [lat0, lat1].
type locParcel struct {
	j, id                  string
	lon0, lat0, lon1, lat1 float64
}

type locAddress struct {
	number, street, locality, state, postcode string
	lon, lat                                  float64
	parcel                                    string // cadastre id of its parcel, or ""
}

func (a locAddress) label() string {
	return a.number + " " + a.street + ", " + a.locality + " " + a.state + " " + a.postcode
}

// A small gazetteer: Smith Street in Parramatta (three lots side by side,
// the third shorter, so that it meets the second in a T), Smith Road, a
// vacant lot, Ermington with an address without a parcel and an address on
// two overlapping (strata) parcels, and two addresses in Brisbane.
var (
	locParcels = []locParcel{
		{"NSW", "12/DP34567", 151.00300, -33.81530, 151.00320, -33.81490},
		{"NSW", "13/DP34567", 151.00320, -33.81530, 151.00340, -33.81490},
		{"NSW", "14/DP34567", 151.00340, -33.81530, 151.00360, -33.81500},
		{"NSW", "7/DP11111", 151.01000, -33.82000, 151.01020, -33.81960},
		{"NSW", "99/DP99999", 151.00400, -33.81530, 151.00420, -33.81490},
		{"NSW", "1/DP22222", 151.05500, -33.81020, 151.05520, -33.80980},
		{"NSW", "12/DP70001", 151.06000, -33.81020, 151.06020, -33.80980},
		{"NSW", "1/SP90001", 151.06500, -33.81020, 151.06530, -33.80980},
		{"NSW", "2/SP90001", 151.06500, -33.81010, 151.06520, -33.80990},
		{"QLD", "2RP1234", 153.02500, -27.47020, 153.02520, -27.46980},
		{"QLD", "5RP5678", 153.03000, -27.47020, 153.03020, -27.46980},
	}
	locAddresses = []locAddress{
		{"12", "Smith Street", "PARRAMATTA", "NSW", "2150", 151.00310, -33.81510, "12/DP34567"},
		{"14", "Smith Street", "PARRAMATTA", "NSW", "2150", 151.00330, -33.81510, "13/DP34567"},
		{"16", "Smith Street", "PARRAMATTA", "NSW", "2150", 151.00350, -33.81515, "14/DP34567"},
		{"12", "Smith Road", "PARRAMATTA", "NSW", "2150", 151.01010, -33.81980, "7/DP11111"},
		{"12", "Smith Street", "ERMINGTON", "NSW", "2115", 151.05510, -33.81000, "1/DP22222"},
		{"12", "Banksia Avenue", "ERMINGTON", "NSW", "2115", 151.06010, -33.81000, "12/DP70001"},
		{"27", "Banksia Avenue", "ERMINGTON", "NSW", "2115", 151.06100, -33.81000, ""},
		{"5", "Overlap Lane", "ERMINGTON", "NSW", "2115", 151.06510, -33.81000, "1/SP90001"},
		{"3", "Queen Street", "BRISBANE CITY", "QLD", "4000", 153.02510, -27.47000, "2RP1234"},
		{"10", "Eagle Street", "BRISBANE CITY", "QLD", "4000", 153.03010, -27.47000, "5RP5678"},
	}
)

// gridParcels are nine lots in a 3 x 3 block, "1/DP50000" top left to
// "9/DP50000" bottom right, their corners computed in floating point (so
// neighbours agree only after canonical rounding, as in real data).
func gridParcels() []locParcel {
	var out []locParcel
	for row := range 3 {
		for col := range 3 {
			lon0, lat1 := 150.5+float64(col)*0.0002, -33.5-float64(row)*0.0002
			out = append(out, locParcel{"NSW", fmt.Sprintf("%d/DP50000", 3*row+col+1), lon0, lat1 - 0.0002, lon0 + 0.0002, lat1})
		}
	}
	return out
}

// loadGazetteer loads the test gazetteer through the ledger's loader.
func (h *harness) loadGazetteer() {
	h.t.Helper()
	labels := map[string]string{}
	for _, a := range locAddresses {
		if a.parcel != "" {
			labels[a.parcel] = a.label()
		}
	}
	parcels := append(slices.Clone(locParcels), gridParcels()...)
	i, j := 0, 0
	_, _, err := h.led.ReplaceGazetteer(h.ctx,
		func() (ledger.AddressRow, bool, error) {
			if i == len(locAddresses) {
				return ledger.AddressRow{}, false, nil
			}
			a := locAddresses[i]
			i++
			return ledger.AddressRow{Label: a.label(), Number: a.number, Street: a.street, Locality: a.locality, State: a.state,
				Postcode: a.postcode, Lon: a.lon, Lat: a.lat}, true, nil
		},
		func() (ledger.ParcelRow, bool, error) {
			if j == len(parcels) {
				return ledger.ParcelRow{}, false, nil
			}
			p := parcels[j]
			j++
			row := ledger.ParcelRow{Jurisdiction: p.j, CadastreID: p.id, Geometry: json.RawMessage(rectJSON(p.lon0, p.lat0, p.lon1, p.lat1)),
				MinLon: p.lon0, MinLat: p.lat0, MaxLon: p.lon1, MaxLat: p.lat1}
			if l, ok := labels[p.id]; ok {
				row.Address = &l
			}
			return row, true, nil
		})
	if err != nil {
		h.t.Fatal(err)
	}
}

func rectJSON(lon0, lat0, lon1, lat1 float64) string {
	return fmt.Sprintf(`{"type":"Polygon","coordinates":[[[%[1]v,%[2]v],[%[3]v,%[2]v],[%[3]v,%[4]v],[%[1]v,%[4]v],[%[1]v,%[2]v]]]}`, lon0, lat0, lon1, lat1)
}

func (h *harness) search(key string, params ...string) response {
	h.t.Helper()
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Add(params[i], params[i+1])
	}
	return h.do("GET", "/locations/search?"+v.Encode(), key, nil)
}

func (h *harness) resolve(key string, location any) response {
	h.t.Helper()
	return h.do("POST", "/locations/resolve", key, map[string]any{"location": location})
}

// ok asserts a 200 and decodes the body.
func (r response) ok(t *testing.T) map[string]any {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	return r.json(t)
}

func results(t *testing.T, m map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, x := range m["results"].([]any) {
		s := x.(map[string]any)
		if s["rank"] != float64(i+1) {
			t.Fatalf("result %d has rank %v", i, s["rank"])
		}
		out = append(out, s)
	}
	return out
}

func resultLabels(t *testing.T, m map[string]any) []string {
	var out []string
	for _, s := range results(t, m) {
		out = append(out, s["label"].(string))
	}
	return out
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLocationSearch(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.loadGazetteer()
	acct := h.account(50)
	k := h.key(acct, nil, "sites:read").Secret

	// Typos and abbreviations: the house number decides between the lots of one street.
	m := h.search(k, "query", "12 smth st parramata").ok(t)
	rs := results(t, m)
	if len(rs) == 0 || rs[0]["label"] != "12 Smith Street, PARRAMATTA NSW 2150" {
		t.Fatalf("12 smth st parramata: %v", resultLabels(t, m))
	}
	first := rs[0]
	sel := first["selector"].(map[string]any)
	if first["kind"] != "address" || sel["kind"] != "address" || !strings.HasPrefix(sel["address_id"].(string), "adr_") ||
		first["jurisdiction"] != "NSW" || first["postcode"] != "2150" ||
		asJSON(t, first["point"]) != `{"coordinates":[151.0031,-33.8151],"type":"Point"}` {
		t.Fatalf("first result %v", first)
	}
	if src := first["source"].(map[string]any); src["provider"] == "" || src["dataset"] != "addresses" {
		t.Fatalf("source %v", src)
	}
	for q, want := range map[string]string{
		"14 SMITH STREET PARRAMATTA":   "14 Smith Street, PARRAMATTA NSW 2150",
		"12 smith rd, parramatta":      "12 Smith Road, PARRAMATTA NSW 2150",
		"12 banksia av ermington 2115": "12 Banksia Avenue, ERMINGTON NSW 2115",
		"unit 2/10 eagle st brisbane":  "10 Eagle Street, BRISBANE CITY QLD 4000",
	} {
		if got := resultLabels(t, h.search(k, "query", q).ok(t)); len(got) == 0 || got[0] != want {
			t.Errorf("%q: %q, want %q first", q, got, want)
		}
	}

	// Filters.
	m = h.search(k, "query", "12 smith street", "postcode", "2115").ok(t)
	for _, r := range results(t, m) {
		if r["postcode"] != "2115" {
			t.Fatalf("postcode filter: %v", resultLabels(t, m))
		}
	}
	if got := resultLabels(t, m); len(got) == 0 || got[0] != "12 Smith Street, ERMINGTON NSW 2115" {
		t.Fatalf("postcode 2115: %q", got)
	}
	m = h.search(k, "query", "queen st", "jurisdiction", "QLD").ok(t)
	if got := resultLabels(t, m); len(got) != 1 || got[0] != "3 Queen Street, BRISBANE CITY QLD 4000" || m["more_results_possible"] != false {
		t.Fatalf("QLD: %q %v", got, m["more_results_possible"])
	}
	if got := resultLabels(t, h.search(k, "query", "12 smith street", "jurisdiction", "QLD").ok(t)); len(got) != 0 {
		t.Fatalf("NSW streets in a QLD search: %q", got)
	}

	// Limits and more_results_possible.
	m = h.search(k, "query", "smith street parramatta", "limit", "1").ok(t)
	if got := resultLabels(t, m); len(got) != 1 || m["more_results_possible"] != true {
		t.Fatalf("limit 1: %q %v", got, m["more_results_possible"])
	}
	m = h.search(k, "query", "smith street parramatta").ok(t)
	if got := resultLabels(t, m); len(got) != 4 || got[2] != "16 Smith Street, PARRAMATTA NSW 2150" || got[3] != "12 Smith Road, PARRAMATTA NSW 2150" ||
		m["more_results_possible"] != false {
		t.Fatalf("the street in number order, then the road: %q %v", got, m["more_results_possible"])
	}
	if got := resultLabels(t, h.search(k, "query", "zzzzzz qqqq").ok(t)); len(got) != 0 {
		t.Fatalf("nonsense: %q", got)
	}

	// Parcels: by cadastre identifier (trigram, so a prefix works) and by address.
	m = h.search(k, "query", "12/DP3456", "kind", "parcel").ok(t)
	rs = results(t, m)
	if len(rs) == 0 || asJSON(t, rs[0]["selector"]) != `{"cadastre_ids":["12/DP34567"],"jurisdiction":"NSW","kind":"cadastre"}` ||
		rs[0]["kind"] != "parcel" || rs[0]["label"] != "12/DP34567 (NSW), 12 Smith Street, PARRAMATTA NSW 2150" || rs[0]["postcode"] != "2150" {
		t.Fatalf("parcel by id: %v", rs)
	}
	if p := rs[0]["point"].(map[string]any)["coordinates"].([]any); !planar.PolygonContains(rectPolygon(locParcels[0]), orb.Point{p[0].(float64), p[1].(float64)}) {
		t.Fatalf("parcel point %v is not inside the parcel", p)
	}
	m = h.search(k, "query", "12/DP34576", "kind", "parcel").ok(t)
	if rs = results(t, m); len(rs) == 0 || rs[0]["selector"].(map[string]any)["cadastre_ids"].([]any)[0] != "12/DP34567" {
		t.Fatalf("parcel id with transposed digits: %v", rs)
	}
	m = h.search(k, "query", "14 smith st parramatta", "kind", "parcel").ok(t)
	if rs = results(t, m); len(rs) == 0 || rs[0]["selector"].(map[string]any)["cadastre_ids"].([]any)[0] != "13/DP34567" {
		t.Fatalf("parcel by address: %v", rs)
	}
	m = h.search(k, "query", "2RP12", "kind", "parcel", "jurisdiction", "NSW").ok(t)
	if rs = results(t, m); len(rs) != 0 {
		t.Fatalf("QLD parcel in an NSW search: %v", rs)
	}

	// Bad parameters name the field.
	for _, c := range []struct{ params, field string }{
		{"kind=parcel&query=12+smith+st&postcode=2150", "postcode"},
		{"query=12+smith&limit=0", "limit"},
		{"query=12+smith&limit=11", "limit"},
		{"query=12+smith&limit=ten", "limit"},
		{"", "query"},
		{"query=ab", "query"},
		{"query=" + strings.Repeat("a", 201), "query"},
		{"query=12+smith&kind=street", "kind"},
		{"query=12+smith&jurisdiction=XX", "jurisdiction"},
		{"query=12+smith&postcode=215", "postcode"},
		{"query=12+smith&radius=5", "radius"},
		{"query=12+smith&query=13+smith", "query"},
	} {
		p := h.do("GET", "/locations/search?"+c.params, k, nil).problem(t, "invalid_request", 400)
		if fe := p["field_errors"].([]any); len(fe) == 0 || fe[0].(map[string]any)["field"] != c.field {
			t.Errorf("%s: field_errors %v, want %s", c.params, fe, c.field)
		}
	}
	h.search(h.key(acct, nil, "layers:read").Secret, "query", "12 smith st").problem(t, "scope_insufficient", 403)

	// Searching charges nothing.
	if a, err := h.led.Account(h.ctx, acct); err != nil || a.CreditBalance != 50 {
		t.Fatalf("balance %+v %v", a, err)
	}
}

func rectPolygon(p locParcel) orb.Polygon {
	return orb.Polygon{{{p.lon0, p.lat0}, {p.lon1, p.lat0}, {p.lon1, p.lat1}, {p.lon0, p.lat1}, {p.lon0, p.lat0}}}
}

// norm re-encodes JSON with sorted keys, as asJSON encodes decoded bodies.
func norm(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return asJSON(t, v)
}

// cadastreSite is the site selector of listed parcels.
func cadastreSite(j string, ids ...string) string {
	b, _ := json.Marshal(map[string]any{"kind": "cadastre", "jurisdiction": j, "cadastre_ids": ids})
	return string(b)
}

func TestResolveAddressesAndPoints(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.loadGazetteer()
	k := h.key(h.account(0), nil, "sites:read").Secret

	// A search result's selector, passed unchanged, resolves to its parcel.
	find := func(q string) any {
		rs := results(t, h.search(k, "query", q).ok(t))
		if len(rs) == 0 {
			t.Fatalf("%q: nothing found", q)
		}
		return rs[0]["selector"]
	}
	m := h.resolve(k, find("12 smith st parramatta")).ok(t)
	if m["status"] != "resolved" || asJSON(t, m["site"]) != cadastreSite("NSW", "12/DP34567") ||
		asJSON(t, m["point"]) != `{"coordinates":[151.0031,-33.8151],"type":"Point"}` ||
		m["boundary"].(map[string]any)["type"] != "Polygon" || len(m["parcels"].([]any)) != 1 || len(m["missing_parcel_ids"].([]any)) != 0 ||
		m["crs"] != "OGC:CRS84" || m["existing_site_id"] != nil {
		t.Fatalf("address: %v", m)
	}
	// 20 m x 44 m at -33.8: about 900 m2, geodesic.
	if a := m["area_m2"].(float64); math.Abs(a-geo.Area(rectPolygon(locParcels[0]))) > 1e-6 || a < 800 || a > 1000 {
		t.Fatalf("area %v", a)
	}
	parcelSel := results(t, h.search(k, "query", "2RP1234", "kind", "parcel").ok(t))[0]["selector"]
	if m := h.resolve(k, parcelSel).ok(t); m["status"] != "resolved" || asJSON(t, m["site"]) != cadastreSite("QLD", "2RP1234") {
		t.Fatalf("parcel suggestion: %v", m)
	}

	// An address outside every parcel is its point; on two parcels, a choice.
	m = h.resolve(k, find("27 banksia avenue ermington")).ok(t)
	if m["status"] != "resolved" || m["boundary"] != nil || asJSON(t, m["site"]) != norm(t, `{"kind":"point","longitude":151.061,"latitude":-33.81}`) || m["area_m2"] != nil {
		t.Fatalf("address without parcel: %v", m)
	}
	m = h.resolve(k, find("5 overlap lane ermington")).ok(t)
	if m["status"] != "multiple_matches" || m["boundary"] != nil || m["site"] != nil || len(m["parcels"].([]any)) != 2 {
		t.Fatalf("two parcels: %v", m)
	}
	cands := m["candidates"].([]any)
	if len(cands) != 2 || asJSON(t, cands[0].(map[string]any)["selector"]) != cadastreSite("NSW", "2/SP90001") {
		t.Fatalf("candidates (smallest first): %v", cands)
	}
	// Unknown or malformed identifiers are no match.
	for _, id := range []string{"adr_" + strings.Repeat("0", 32), "GANSW716000012"} {
		m = h.resolve(k, map[string]any{"kind": "address", "address_id": id}).ok(t)
		if m["status"] != "no_match" || m["point"] != nil || m["boundary"] != nil || m["site"] != nil {
			t.Fatalf("%s: %v", id, m)
		}
	}

	// Points.
	pointCases := []struct {
		name   string
		sel    map[string]any
		status string
		site   string
	}{
		{"in a parcel", map[string]any{"kind": "point", "longitude": 151.0031, "latitude": -33.8151, "crs": "EPSG:7844"}, "resolved", cadastreSite("NSW", "12/DP34567")},
		{"CRS84 by default", map[string]any{"kind": "point", "longitude": 153.0301, "latitude": -27.4700}, "resolved", cadastreSite("QLD", "5RP5678")},
		{"on the road, near parcels", map[string]any{"kind": "point", "longitude": 151.0037, "latitude": -33.8145}, "resolved", `{"kind":"point","latitude":-33.8145,"longitude":151.0037}`},
		{"outside the gazetteer", map[string]any{"kind": "point", "longitude": 135.0, "latitude": -25.0, "crs": "EPSG:4326"}, "coverage_unavailable", `{"kind":"point","latitude":-25,"longitude":135}`},
		{"strata", map[string]any{"kind": "point", "longitude": 151.0651, "latitude": -33.8100}, "multiple_matches", "null"},
		// MGA zone 56 coordinates from PROJ (cs2cs EPSG:7844 EPSG:7856) of
		// 151.00310,-33.81510 (lot 12) and 151.00350,-33.81515 (lot 14).
		{"MGA zone 56, lot 12", map[string]any{"kind": "projected_point", "easting": 315177.6642, "northing": 6256552.2243, "epsg": 7856}, "resolved", cadastreSite("NSW", "12/DP34567")},
		{"MGA zone 56, lot 14", map[string]any{"kind": "projected_point", "easting": 315214.7993, "northing": 6256547.3977, "epsg": 7856}, "resolved", cadastreSite("NSW", "14/DP34567")},
	}
	for _, c := range pointCases {
		m := h.resolve(k, c.sel).ok(t)
		if m["status"] != c.status || asJSON(t, m["site"]) != c.site || m["point"] == nil {
			t.Errorf("%s: status %v site %s", c.name, m["status"], asJSON(t, m["site"]))
		}
		if c.status != "resolved" && m["boundary"] != nil {
			t.Errorf("%s: boundary %v", c.name, m["boundary"])
		}
	}
	m = h.resolve(k, pointCases[5].sel).ok(t)
	if p := m["point"].(map[string]any)["coordinates"].([]any); math.Abs(p[0].(float64)-151.0031) > 1e-8 || math.Abs(p[1].(float64)+33.8151) > 1e-8 {
		t.Fatalf("MGA point %v", p)
	}

	// Unsupported CRSs.
	for _, sel := range []map[string]any{
		{"kind": "projected_point", "easting": 315177.66, "northing": 6256552.22, "epsg": 7846},
		{"kind": "projected_point", "easting": 315177.66, "northing": 6256552.22, "epsg": 4283},
		{"kind": "projected_point", "easting": 151.0, "northing": -33.8, "epsg": 4326},
		{"kind": "point", "longitude": 151.0031, "latitude": -33.8151, "crs": "EPSG:4283"},
	} {
		p := h.resolve(k, sel).problem(t, "unsupported_crs", 422)
		if fe := p["field_errors"].([]any); len(fe) == 0 || !strings.HasPrefix(fe[0].(map[string]any)["field"].(string), "location.") {
			t.Errorf("%v: %v", sel, p)
		}
	}
}

func TestResolveCadastre(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.loadGazetteer()
	k := h.key(h.account(0), nil, "sites:read").Secret
	lots := []string{"12/DP34567", "13/DP34567", "14/DP34567"}

	// Three adjacent lots (one meeting the next in a T) dissolve into one
	// valid polygon of the same area.
	m := h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": lots}).ok(t)
	if m["status"] != "resolved" || asJSON(t, m["site"]) != cadastreSite("NSW", lots...) || len(m["missing_parcel_ids"].([]any)) != 0 {
		t.Fatalf("three lots: %v", m)
	}
	boundary, err := json.Marshal(m["boundary"])
	if err != nil {
		t.Fatal(err)
	}
	g, err := geo.DecodeGeometry(boundary, 0)
	if err != nil {
		t.Fatalf("the union is not valid geometry: %v: %s", err, boundary)
	}
	if poly, ok := g.(orb.Polygon); !ok || len(poly) != 1 {
		t.Fatalf("the union is not one polygon: %s", boundary)
	}
	var sum float64
	for i, p := range m["parcels"].([]any) {
		p := p.(map[string]any)
		if p["cadastre_id"] != lots[i] || p["jurisdiction"] != "NSW" || p["geometry"] == nil {
			t.Fatalf("parcel %d: %v", i, p)
		}
		sum += p["area_m2"].(float64)
	}
	if a := m["area_m2"].(float64); math.Abs(a-sum) > 1e-6*sum || math.Abs(a-geo.Area(g)) > 1e-9*a {
		t.Fatalf("area %v, parcels %v", a, sum)
	}
	pt := m["point"].(map[string]any)["coordinates"].([]any)
	if !planar.PolygonContains(g.(orb.Polygon), orb.Point{pt[0].(float64), pt[1].(float64)}) {
		t.Fatalf("point %v outside the boundary", pt)
	}

	// Blocks of lots: a ring around a missing lot has a hole; lots meeting
	// only at corners stay apart; any order of the identifiers gives the
	// same boundary.
	for _, c := range []struct {
		ids   []string
		shape string // type, polygons and rings of each
	}{
		{[]string{"1/DP50000", "2/DP50000", "3/DP50000", "4/DP50000", "6/DP50000", "7/DP50000", "8/DP50000", "9/DP50000"}, "Polygon [2]"},
		{[]string{"9/DP50000", "8/DP50000", "7/DP50000", "6/DP50000", "4/DP50000", "3/DP50000", "2/DP50000", "1/DP50000"}, "Polygon [2]"},
		{[]string{"1/DP50000", "5/DP50000", "9/DP50000"}, "MultiPolygon [1 1 1]"},
		{[]string{"1/DP50000", "2/DP50000", "5/DP50000", "6/DP50000", "9/DP50000"}, "Polygon [1]"},
		{[]string{"1/DP50000", "4/DP50000", "7/DP50000", "8/DP50000", "9/DP50000", "5/DP50000"}, "Polygon [1]"},
		{[]string{"2/DP50000", "4/DP50000", "6/DP50000", "8/DP50000"}, "MultiPolygon [1 1 1 1]"},
		// The hole meets the outside at the corner between lots 6 and 8.
		{[]string{"1/DP50000", "2/DP50000", "3/DP50000", "4/DP50000", "6/DP50000", "7/DP50000", "8/DP50000"}, "Polygon [2]"},
	} {
		m := h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": c.ids}).ok(t)
		raw, _ := json.Marshal(m["boundary"])
		g, err := geo.DecodeGeometry(raw, 0)
		if err != nil {
			t.Errorf("%v: invalid union: %v: %s", c.ids, err, raw)
			continue
		}
		var rings []int
		switch g := g.(type) {
		case orb.Polygon:
			rings = append(rings, len(g))
		case orb.MultiPolygon:
			for _, p := range g {
				rings = append(rings, len(p))
			}
		}
		if got := fmt.Sprint(g.GeoJSONType(), " ", rings); got != c.shape {
			t.Errorf("%v: %s, want %s: %s", c.ids, got, c.shape, raw)
		}
		want := 0.0
		for _, p := range m["parcels"].([]any) {
			want += p.(map[string]any)["area_m2"].(float64)
		}
		if a := m["area_m2"].(float64); math.Abs(a-want) > 1e-6*want {
			t.Errorf("%v: area %v, parcels %v", c.ids, a, want)
		}
	}
	// Every one of the 511 sets of lots of the block unites into valid
	// geometry of the same area (holes, pinches, corners and all).
	for set := 1; set < 1<<9; set++ {
		var ids []string
		for i := range 9 {
			if set&(1<<i) != 0 {
				ids = append(ids, fmt.Sprintf("%d/DP50000", i+1))
			}
		}
		m := h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": ids}).ok(t)
		raw, _ := json.Marshal(m["boundary"])
		if _, err := geo.DecodeGeometry(raw, 0); err != nil {
			t.Fatalf("%v: invalid union: %v: %s", ids, err, raw)
		}
		cell := m["parcels"].([]any)[0].(map[string]any)["area_m2"].(float64)
		if a := m["area_m2"].(float64); math.Abs(a-cell*float64(len(ids))) > 1e-3*cell {
			t.Fatalf("%v: area %v, %d lots of about %v", ids, a, len(ids), cell)
		}
	}
	ring := h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{"1/DP50000", "2/DP50000", "3/DP50000", "4/DP50000", "6/DP50000", "7/DP50000", "8/DP50000", "9/DP50000"}}).ok(t)
	reversed := h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{"9/DP50000", "8/DP50000", "7/DP50000", "6/DP50000", "4/DP50000", "3/DP50000", "2/DP50000", "1/DP50000"}}).ok(t)
	if asJSON(t, ring["boundary"]) != asJSON(t, reversed["boundary"]) {
		t.Fatalf("order changes the boundary")
	}

	// Parcels apart are a MultiPolygon.
	m = h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{"1/DP22222", "12/DP34567"}}).ok(t)
	if b := m["boundary"].(map[string]any); m["status"] != "resolved" || b["type"] != "MultiPolygon" || len(b["coordinates"].([]any)) != 2 {
		t.Fatalf("two apart: %v", m)
	}

	// Some missing: 422 naming each; all missing (or the wrong jurisdiction): no match.
	p := h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{"12/DP34567", "404/DP1", "13/DP34567", "405/DP1"}}).
		problem(t, "cadastre_incomplete", 422)
	if got := asJSON(t, p["field_errors"]); !strings.Contains(got, `"field":"location.cadastre_ids[1]"`) || !strings.Contains(got, `"field":"location.cadastre_ids[3]"`) || len(p["field_errors"].([]any)) != 2 {
		t.Fatalf("field errors %s", got)
	}
	m = h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{"404/DP1", "405/DP1"}}).ok(t)
	if m["status"] != "no_match" || asJSON(t, m["missing_parcel_ids"]) != `["404/DP1","405/DP1"]` || m["boundary"] != nil || m["site"] != nil {
		t.Fatalf("none found: %v", m)
	}
	m = h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "QLD", "cadastre_ids": lots}).ok(t)
	if m["status"] != "no_match" || len(m["missing_parcel_ids"].([]any)) != 3 {
		t.Fatalf("wrong jurisdiction: %v", m)
	}
	// Shape errors are invalid_request.
	h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{"1/DP1", "1/DP1"}}).problem(t, "invalid_request", 400)
	h.resolve(k, map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []string{}}).problem(t, "invalid_request", 400)
}

func TestResolveGeometryAndSites(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.loadGazetteer()
	acct := h.account(0)
	k := h.key(acct, nil, "sites:read").Secret
	other := h.key(h.account(0), nil, "sites:read").Secret

	// A geometry is previewed in canonical form (counter-clockwise, from its
	// smallest vertex), whatever the order it was written in.
	written := `{"type":"Polygon","coordinates":[[[151.002,-33.8145],[151.002,-33.814],[151.001,-33.814],[151.001,-33.8145],[151.002,-33.8145]]]}`
	canonical := `{"type":"Polygon","coordinates":[[[151.001,-33.8145],[151.002,-33.8145],[151.002,-33.814],[151.001,-33.814],[151.001,-33.8145]]]}`
	m := h.resolve(k, map[string]any{"kind": "geometry", "geometry": json.RawMessage(written)}).ok(t)
	if m["status"] != "resolved" || asJSON(t, m["boundary"]) != norm(t, canonical) ||
		asJSON(t, m["site"]) != norm(t, `{"crs":"OGC:CRS84","geometry":`+canonical+`,"kind":"geometry"}`) || m["existing_site_id"] != nil {
		t.Fatalf("geometry: %v", m)
	}
	g, _ := geo.DecodeGeometry([]byte(canonical), 0)
	if a := m["area_m2"].(float64); math.Abs(a-geo.Area(g)) > 1e-6 {
		t.Fatalf("area %v", a)
	}
	if pt := m["point"].(map[string]any)["coordinates"].([]any); !planar.PolygonContains(g.(orb.Polygon), orb.Point{pt[0].(float64), pt[1].(float64)}) {
		t.Fatalf("point %v", pt)
	}
	p := h.resolve(k, map[string]any{"kind": "geometry", "geometry": json.RawMessage(`{"type":"Polygon","coordinates":[[[151.001,-33.814],[151.002,-33.8145],[151.002,-33.814],[151.001,-33.8145],[151.001,-33.814]]]}`)}).
		problem(t, "invalid_geometry", 422)
	if fe := p["field_errors"].([]any); len(fe) != 1 || !strings.HasPrefix(fe[0].(map[string]any)["field"].(string), "location.geometry") {
		t.Fatalf("bow tie: %v", p)
	}
	h.resolve(k, map[string]any{"kind": "geometry", "geometry": json.RawMessage(written), "crs": "EPSG:4326"}).problem(t, "unsupported_crs", 422)

	// Once saved, the same boundary names the existing site.
	saved, _, err := h.led.SaveSite(h.ctx, ledger.Site{AccountID: acct, Geometry: json.RawMessage(canonical), Fingerprint: geo.Fingerprint(g),
		AreaM2: geo.Area(g), Bounds: [4]float64{151.001, -33.8145, 151.002, -33.814}}, &ledger.ExternalRef{Namespace: "crm", Reference: "LOT-12"}, true)
	if err != nil {
		t.Fatal(err)
	}
	m = h.resolve(k, map[string]any{"kind": "geometry", "geometry": json.RawMessage(written)}).ok(t)
	if m["existing_site_id"] != saved.ID.String() {
		t.Fatalf("existing site: %v", m)
	}
	if m := h.resolve(other, map[string]any{"kind": "geometry", "geometry": json.RawMessage(written)}).ok(t); m["existing_site_id"] != nil {
		t.Fatalf("another account's site leaks: %v", m)
	}

	// Saved sites and external references preview the stored boundary.
	siteSel := map[string]any{"kind": "saved_site", "site_id": saved.ID.String()}
	refSel := map[string]any{"kind": "external_reference", "namespace": "crm", "reference": "LOT-12"}
	for _, sel := range []map[string]any{siteSel, refSel} {
		m = h.resolve(k, sel).ok(t)
		if m["status"] != "resolved" || asJSON(t, m["boundary"]) != norm(t, canonical) || asJSON(t, m["site"]) != asJSON(t, sel) ||
			m["existing_site_id"] != saved.ID.String() || m["area_m2"] != geo.Area(g) {
			t.Fatalf("%v: %v", sel, m)
		}
	}
	// Another account's site, an unknown one, an unregistered reference and
	// an archived site are all no match, indistinguishable.
	noMatch := h.resolve(k, map[string]any{"kind": "saved_site", "site_id": uuid.NewString()})
	for _, r := range []response{
		h.resolve(other, siteSel),
		h.resolve(other, refSel),
		h.resolve(k, map[string]any{"kind": "external_reference", "namespace": "crm", "reference": "LOT-13"}),
	} {
		if string(r.body) != string(noMatch.body) || r.json(t)["status"] != "no_match" {
			t.Fatalf("%s, want %s", r.body, noMatch.body)
		}
	}
	if err := h.led.ArchiveSite(h.ctx, acct, saved.ID); err != nil {
		t.Fatal(err)
	}
	for _, sel := range []map[string]any{siteSel, refSel} {
		if r := h.resolve(k, sel); string(r.body) != string(noMatch.body) {
			t.Fatalf("archived %v: %s", sel, r.body)
		}
	}

	// Malformed bodies.
	h.do("POST", "/locations/resolve", k, `{}`).problem(t, "invalid_request", 400)
	h.do("POST", "/locations/resolve", k, `{"location":{"kind":"parcel"}}`).problem(t, "invalid_request", 400)
	h.do("POST", "/locations/resolve", k, `{"location":{"kind":"address","address_id":"adr_1","extra":1}}`).problem(t, "invalid_request", 400)
	h.do("POST", "/locations/resolve", k, `{"location":{"kind":"point","longitude":1,"latitude":2},"more":true}`).problem(t, "invalid_request", 400)
	h.do("POST", "/locations/resolve", k, `{"location":`).problem(t, "invalid_json", 400)
	h.do("POST", "/locations/resolve", h.key(acct, nil, "layers:read").Secret, `{"location":{"kind":"point","longitude":1,"latitude":2}}`).problem(t, "scope_insufficient", 403)
}
