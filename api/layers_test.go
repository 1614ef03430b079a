package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// publish puts a layer with one release into the catalogue.
func (h *harness) publish(id, section string, price int64, jurisdictions []string, coverage string) {
	h.t.Helper()
	if err := h.led.SetSection(h.ctx, section, "Section "+section, price); err != nil {
		h.t.Fatal(err)
	}
	desc := "Layer " + id + " for tests"
	y := ledger.Layer{
		ID: id, SectionKey: section, Name: "Layer " + id, Description: &desc, SchemaVersion: "2024-03",
		FieldSchema:   json.RawMessage(`{"site_name":{"type":"string"},"area_ha":{"type":["number","null"]},"listed_on":{"type":"string","format":"date"}}`),
		Units:         json.RawMessage(`{"area_ha":"ha","site_name":null}`),
		RadiusMaxM:    2000,
		Sources:       json.RawMessage(`[{"source_variant_id":"v1","scope":null,"provider":"NSW EPA","source_url":"https://www.epa.nsw.gov.au/","source_published_at":"2024-03-01","source_effective_at":null,"retrieved_at":"2024-03-05T00:00:00Z","licence":"CC-BY-4.0","attribution":"© State of NSW (EPA) 2024","coverage_verified":true,"api_approved":true,"agent_approved":true,"report_approved":true}]`),
		Jurisdictions: jurisdictions,
		GeometryTypes: []string{"Polygon"},
	}
	if coverage != "" {
		y.Coverage = json.RawMessage(coverage)
	}
	rel := ledger.Release{LayerID: id, ReleaseID: "r_" + fmt.Sprintf("%032x", len(id)), SchemaVersion: y.SchemaVersion,
		FieldSchema: y.FieldSchema, Units: y.Units, Sources: y.Sources, Coverage: y.Coverage,
		ManifestKey: "releases/" + id + "/m.json", FeatureCount: 10, TileCount: 1, Bytes: 100}
	if err := h.led.PublishRelease(h.ctx, y, rel); err != nil {
		h.t.Fatal(err)
	}
}

// site stores a site (a small square near Parramatta) directly in the ledger.
func (h *harness) site(account uuid.UUID) uuid.UUID {
	h.t.Helper()
	s, err := h.led.CreateSite(h.ctx, ledger.Site{AccountID: account,
		Geometry:    json.RawMessage(`{"type":"Polygon","coordinates":[[[151.0,-33.81],[151.001,-33.81],[151.001,-33.809],[151.0,-33.809],[151.0,-33.81]]]}`),
		Fingerprint: "00", AreaM2: 10000})
	if err != nil {
		h.t.Fatal(err)
	}
	return s.ID
}

const sydneyCover = `{"type":"Polygon","coordinates":[[[150.5,-34.2],[151.5,-34.2],[151.5,-33.5],[150.5,-33.5],[150.5,-34.2]]]}`

func layerIDs(t *testing.T, m map[string]any) []string {
	var out []string
	for _, l := range m["layers"].([]any) {
		out = append(out, l.(map[string]any)["layer_id"].(string))
	}
	return out
}

func TestLayerCatalogue(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, sydneyCover)
	h.publish("aus.bores", "water", 0, []string{"AUS"}, `{"type":"Polygon","coordinates":[[[110,-45],[155,-45],[155,-9],[110,-9],[110,-45]]]}`)
	h.publish("qld.flood", "flood", 20, []string{"QLD"}, "")
	h.publish("nsw.flood", "flood", 20, []string{"NSW"}, sydneyCover)
	acct := h.account(0)
	k := h.key(acct, nil, "layers:read")

	m := h.do("GET", "/layers", k.Secret, nil).json(t)
	if got := fmt.Sprint(layerIDs(t, m)); got != "[aus.bores nsw.contaminated-sites nsw.flood qld.flood]" {
		t.Fatalf("order %s", got)
	}
	first := m["layers"].([]any)[0].(map[string]any)
	if first["access"] != "already_available" || first["availability"] != "available" || first["coverage"] != "complete" || first["schema_url"] != "/api/v1/layers/aus.bores/schema" {
		t.Fatalf("free national layer %v", first)
	}
	if l := m["layers"].([]any)[1].(map[string]any); l["access"] != "site_required" || l["coverage"] != "partial" {
		t.Fatalf("priced layer without site %v", l)
	}
	if l := m["layers"].([]any)[3].(map[string]any); l["coverage"] != "unknown" {
		t.Fatalf("layer of unknown coverage %v", l)
	}

	// Filters.
	m = h.do("GET", "/layers?jurisdiction=NSW", k.Secret, nil).json(t)
	if got := fmt.Sprint(layerIDs(t, m)); got != "[aus.bores nsw.contaminated-sites nsw.flood]" {
		t.Fatalf("NSW (with national) %s", got)
	}
	m = h.do("GET", "/layers?section_key=flood&search=QLD", k.Secret, nil).json(t)
	if got := fmt.Sprint(layerIDs(t, m)); got != "[qld.flood]" {
		t.Fatalf("section+search %s", got)
	}
	m = h.do("GET", "/layers?search="+url.QueryEscape("100%"), k.Secret, nil).json(t)
	if n := len(m["layers"].([]any)); n != 0 {
		t.Fatalf("%% must be literal: %d", n)
	}

	// Pages of one, following cursors, see every layer once.
	var seen []string
	path := "/layers?limit=1"
	for {
		m = h.do("GET", path, k.Secret, nil).json(t)
		seen = append(seen, layerIDs(t, m)...)
		pg := m["page"].(map[string]any)
		if pg["has_more"] != true {
			break
		}
		path = "/layers?limit=1&cursor=" + url.QueryEscape(pg["next_cursor"].(string))
	}
	if len(seen) != 4 {
		t.Fatalf("paged %v", seen)
	}
	r := h.do("GET", "/layers?limit=1&section_key=flood&cursor="+url.QueryEscape(h.do("GET", "/layers?limit=1", k.Secret, nil).json(t)["page"].(map[string]any)["next_cursor"].(string)), k.Secret, nil)
	r.problem(t, "invalid_cursor", 400)

	// One layer, and its schema.
	m = h.do("GET", "/layers/nsw.flood", k.Secret, nil).json(t)
	if m["layer"].(map[string]any)["section_name"] != "Section flood" {
		t.Fatalf("%v", m)
	}
	sch := h.do("GET", "/layers/nsw.contaminated-sites/schema", k.Secret, nil).json(t)
	props := sch["properties"].(map[string]any)
	if props["listed_on"].(map[string]any)["format"] != "date" || sch["type"] != "object" {
		t.Fatalf("schema %v", sch)
	}
	req := sch["required"].([]any)
	if len(req) != 2 {
		t.Fatalf("required %v (area_ha is nullable)", req)
	}
	h.do("GET", "/layers/no.such.layer", k.Secret, nil).problem(t, "not_found", 404)
	h.do("GET", "/layers/BAD%20ID", k.Secret, nil).problem(t, "invalid_request", 400)
}

func TestLayerAccessForASite(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, sydneyCover)
	h.publish("nsw.heritage", "heritage", 0, []string{"NSW"}, `{"type":"Polygon","coordinates":[[[140,-30],[141,-30],[141,-29],[140,-29],[140,-30]]]}`)
	h.publish("nsw.flood", "flood", 20, []string{"NSW"}, sydneyCover)
	acct := h.account(100)
	k := h.key(acct, nil, "layers:read")
	site := h.site(acct)
	buyer := h.key(acct, nil, "access:acquire")
	if _, err := h.led.Acquire(h.ctx, ledger.AcquireParams{Account: acct, Integration: buyer.IntegrationID, SiteID: site, Sections: []string{"flood"}}); err != nil {
		t.Fatal(err)
	}
	m := h.do("GET", "/layers?site_id="+site.String(), k.Secret, nil).json(t)
	want := map[string][2]string{
		"nsw.contaminated-sites": {"access_required", "complete"},
		"nsw.flood":              {"already_available", "complete"},
		"nsw.heritage":           {"already_available", "none"},
	}
	for _, l := range m["layers"].([]any) {
		l := l.(map[string]any)
		w := want[l["layer_id"].(string)]
		if l["access"] != w[0] || l["coverage"] != w[1] {
			t.Errorf("%s: access %v coverage %v, want %v", l["layer_id"], l["access"], l["coverage"], w)
		}
	}
	// Another account's site is not found, exactly like a missing one.
	other := h.key(h.account(0), nil, "layers:read")
	a := h.do("GET", "/layers/nsw.flood?site_id="+site.String(), other.Secret, nil)
	b := h.do("GET", "/layers/nsw.flood?site_id="+uuid.NewString(), other.Secret, nil)
	sameApartFromRequestID(t, a, b)
}

func TestDatasetRestrictionNarrowsTheCatalogue(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("aus.bores", "water", 0, []string{"AUS"}, "")
	h.publish("nsw.flood", "flood", 20, []string{"NSW"}, "")
	acct := h.account(0)
	narrow := h.key(acct, []string{"aus.bores"}, "layers:read")
	none := h.key(acct, []string{}, "layers:read")

	m := h.do("GET", "/layers", narrow.Secret, nil).json(t)
	if got := fmt.Sprint(layerIDs(t, m)); got != "[aus.bores]" {
		t.Fatalf("restricted list %s", got)
	}
	if n := len(h.do("GET", "/layers", none.Secret, nil).json(t)["layers"].([]any)); n != 0 {
		t.Fatalf("an empty restriction permits none, got %d", n)
	}
	forbidden := h.do("GET", "/layers/nsw.flood", narrow.Secret, nil)
	missing := h.do("GET", "/layers/nsw.nothing", narrow.Secret, nil)
	sameApartFromRequestID(t, forbidden, missing)
	sameApartFromRequestID(t, h.do("GET", "/layers/nsw.flood/schema", narrow.Secret, nil), h.do("GET", "/layers/nsw.nothing/schema", narrow.Secret, nil))

	// The restriction is read live: the account narrows too.
	if r := h.do("GET", "/layers/nsw.flood", h.key(acct, nil, "layers:read").Secret, nil); r.status != 200 {
		t.Fatalf("unrestricted key: %d", r.status)
	}
}

// sameApartFromRequestID asserts two Problem responses are identical but for request_id.
func sameApartFromRequestID(t *testing.T, a, b response) {
	t.Helper()
	ma, mb := a.json(t), b.json(t)
	if a.status != 404 || b.status != 404 {
		t.Fatalf("statuses %d and %d, want 404", a.status, b.status)
	}
	delete(ma, "request_id")
	delete(mb, "request_id")
	ja, _ := json.Marshal(ma)
	jb, _ := json.Marshal(mb)
	if string(ja) != string(jb) {
		t.Fatalf("distinguishable:\n%s\n%s", ja, jb)
	}
}

// TestLayerListRenderCache: GET /layers without a site splices each
// layer's object from a cache of rendered layers; every object equals, byte
// for byte, the one GET /layers/{id} encodes for the same row, and a change
// to a layer's row or section (price, name, new release) shows on the very
// next read.
func TestLayerListRenderCache(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, sydneyCover)
	h.publish("qld.flood", "flood", 20, []string{"QLD"}, "")
	k := h.key(h.account(0), nil, "layers:read")
	list := func() []json.RawMessage {
		t.Helper()
		var b struct{ Layers []json.RawMessage }
		if err := json.Unmarshal(h.do("GET", "/layers", k.Secret, nil).body, &b); err != nil {
			t.Fatal(err)
		}
		return b.Layers
	}
	same := func(ls []json.RawMessage) {
		t.Helper()
		for _, l := range ls {
			var id struct {
				LayerID string `json:"layer_id"`
			}
			if err := json.Unmarshal(l, &id); err != nil {
				t.Fatal(err)
			}
			var one struct{ Layer json.RawMessage }
			if err := json.Unmarshal(h.do("GET", "/layers/"+id.LayerID, k.Secret, nil).body, &one); err != nil {
				t.Fatal(err)
			}
			if string(one.Layer) != string(l) {
				t.Fatalf("listed %s\n  single %s", l, one.Layer)
			}
		}
	}
	first := list()
	same(first)
	if again := list(); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("a second read differs:\n%s\n%s", again, first)
	}
	// The section's price and name change; the layer gets coverage and a
	// new release.
	if err := h.led.SetSection(h.ctx, "flood", "Flooding", 45); err != nil {
		t.Fatal(err)
	}
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW", "ACT"}, sydneyCover)
	changed := list()
	same(changed)
	var flood, contam map[string]any
	for _, l := range changed {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		switch m["layer_id"] {
		case "qld.flood":
			flood = m
		case "nsw.contaminated-sites":
			contam = m
		}
	}
	if flood["price_credits"] != float64(45) || flood["section_name"] != "Flooding" {
		t.Fatalf("section change not seen: %v", flood)
	}
	if fmt.Sprint(contam["jurisdictions"]) != "[NSW ACT]" {
		t.Fatalf("layer change not seen: %v", contam)
	}
}

// TestLayerPageCache proves the site-less GET /layers page rendered once
// per catalogue version and filter serves every key exactly what it would
// render afresh: the same bytes and ETag (If-None-Match answers 304) while
// nothing changes, a new body and ETag as soon as the catalogue changes,
// a dataset-restricted key only its datasets even after an unrestricted key
// filled the cache (and the reverse), and a next cursor bound to each
// account that continues the listing.
func TestLayerPageCache(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW"}, sydneyCover)
	h.publish("qld.flood", "flood", 20, []string{"QLD"}, "")
	all := h.key(h.account(0), nil, "layers:read")
	only := h.key(h.account(1), []string{"qld.flood"}, "layers:read")
	other := h.key(h.account(2), nil, "layers:read")
	ids := func(r response) []string {
		t.Helper()
		var b struct {
			Layers []struct {
				LayerID string `json:"layer_id"`
			}
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range b.Layers {
			out = append(out, l.LayerID)
		}
		return out
	}

	first := h.do("GET", "/layers", all.Secret, nil)
	again := h.do("GET", "/layers", other.Secret, nil)
	tag := first.header.Get("ETag")
	if first.status != 200 || string(again.body) != string(first.body) || again.header.Get("ETag") != tag || tag == "" {
		t.Fatalf("a second key's read differs: %s %q\n%s %q", first.body, tag, again.body, again.header.Get("ETag"))
	}
	if r := h.do("GET", "/layers", all.Secret, nil, "If-None-Match", tag); r.status != 304 {
		t.Fatalf("If-None-Match with the page's ETag: %d", r.status)
	}
	if got := ids(h.do("GET", "/layers", only.Secret, nil)); fmt.Sprint(got) != "[qld.flood]" {
		t.Fatalf("restricted key after an unrestricted one: %v", got)
	}

	// A page with a next cursor: the layers are shared, the cursor is each
	// account's own and continues the listing.
	p1 := h.do("GET", "/layers?limit=1", all.Secret, nil)
	p1b := h.do("GET", "/layers?limit=1", other.Secret, nil)
	cursor := func(r response) string {
		t.Helper()
		var b struct {
			Page struct {
				HasMore    bool    `json:"has_more"`
				NextCursor *string `json:"next_cursor"`
			}
		}
		if err := json.Unmarshal(r.body, &b); err != nil || !b.Page.HasMore || b.Page.NextCursor == nil {
			t.Fatalf("no next cursor (%v): %s", err, r.body)
		}
		return *b.Page.NextCursor
	}
	c1, c1b := cursor(p1), cursor(p1b)
	if fmt.Sprint(ids(p1)) != "[nsw.contaminated-sites]" || fmt.Sprint(ids(p1b)) != fmt.Sprint(ids(p1)) || c1 == "" || c1 == c1b {
		t.Fatalf("first pages %v %v, cursors %q %q", ids(p1), ids(p1b), c1, c1b)
	}
	if got := ids(h.do("GET", "/layers?limit=1&cursor="+c1b, other.Secret, nil)); fmt.Sprint(got) != "[qld.flood]" {
		t.Fatalf("second page: %v", got)
	}
	if r := h.do("GET", "/layers?limit=1&cursor="+c1, other.Secret, nil); r.status != 400 {
		t.Fatalf("another account's cursor: %d %s", r.status, r.body)
	}

	// A change of the catalogue is seen by the next read, with a new ETag.
	h.publish("nsw.contaminated-sites", "contamination", 30, []string{"NSW", "ACT"}, sydneyCover)
	changed := h.do("GET", "/layers", other.Secret, nil)
	if string(changed.body) == string(first.body) || changed.header.Get("ETag") == tag || !bytes.Contains(changed.body, []byte(`"ACT"`)) {
		t.Fatalf("change not seen: %s", changed.body)
	}
	if r := h.do("GET", "/layers", all.Secret, nil, "If-None-Match", tag); r.status != 200 {
		t.Fatalf("the old ETag after a change: %d", r.status)
	}
	if got := ids(h.do("GET", "/layers", only.Secret, nil)); fmt.Sprint(got) != "[qld.flood]" {
		t.Fatalf("restricted key after the change: %v", got)
	}
}
