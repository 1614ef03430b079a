package faultsuite

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/api/openapi"
)

// TestTenantMatrix: account B calls every id-taking route of the OpenAPI
// document with account A's ids (in the path, the query string and the
// body), with every method. Each answer must be exactly what B gets for an id
// that exists nowhere (so nothing about A leaks), and for implemented routes
// that answer is 404 not_found, never 200 and never 403. A's resources are
// unchanged afterwards, and A itself reads them (positive control).
func TestTenantMatrix(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	e := env{dataDir: scratchDir(t), dsn: dsn}
	l := openLedger(t, dsn)
	loadCatalogue(t, e, l)
	const reportPrice = 10
	cli(t, e, "admin", "config", "set", "report-price", strconv.Itoa(reportPrice))
	a := newTenant(t, l, "Tenant A", tenantCredits)
	b := newTenant(t, l, "Tenant B", tenantCredits)
	srv := startServer(t, e)
	c := newClient(t, func() string { return srv.addr })

	type owned struct{ site, query, purchase, portfolio, report string }
	setupTenant := func(tn tenant, n int) owned {
		pf, err := l.CreatePortfolio(context.Background(), tn.account, fmt.Sprintf("Portfolio %d", n))
		if err != nil {
			t.Fatal(err)
		}
		o := owned{portfolio: pf.ID.String()}
		o.site = createSite(t, c, tn.key, n, map[string]any{"external_reference": map[string]any{"namespace": "crm", "reference": fmt.Sprintf("ref-%d", n)}})
		if r := c.do("PATCH", "/sites/"+o.site, tn.key, map[string]any{"portfolio_id": o.portfolio}); r.status != 200 {
			t.Fatalf("assign portfolio: %d %s", r.status, r.body)
		}
		o.purchase = buy(t, c, tn.key, o.site, "buy-"+uuid.NewString())
		o.query = runQuery(t, c, tn.key, o.site, "q-"+uuid.NewString())
		r := c.do("POST", "/reports", tn.key, map[string]any{"site_id": o.site}, "Idempotency-Key", "rep-"+uuid.NewString())
		if r.status != 202 {
			t.Fatalf("order report: %d %s", r.status, r.body)
		}
		o.report = r.json(t)["report_id"].(string)
		return o
	}
	ownA := setupTenant(a, 1)
	ownB := setupTenant(b, 2)
	// A's report, once built, and its PDF.
	var artifactA string
	if !pollUntil(60*time.Second, 100*time.Millisecond, func() bool {
		rep := c.do("GET", "/reports/"+ownA.report, a.key, nil).json(t)["report"].(map[string]any)
		if arts, _ := rep["artifacts"].([]any); len(arts) > 0 {
			artifactA = arts[0].(map[string]any)["artifact_id"].(string)
		}
		return artifactA != ""
	}) {
		t.Fatal("A's report was not built within 60 s")
	}

	// Path ids by parameter name: A's, and one that exists nowhere.
	aIDs := map[string]string{"site_id": ownA.site, "query_id": ownA.query, "purchase_id": ownA.purchase,
		"report_id": ownA.report, "artifact_id": artifactA}
	// Ids of kinds A cannot own (a delivery's capability is a secret, not
	// an id): the route still must not tell them apart.
	unknown := func() string { return uuid.NewString() }
	fixed := map[string]string{"layer_id": freeLayer, "section_key": pricedSection}

	bodyFor := map[string]any{
		"update_site":     map[string]any{"name": "renamed by B"},
		"create_delivery": map[string]any{},
	}

	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		name   string
		method string
		pathA  string // with A's ids
		pathX  string // with unknown ids
		body   func(id string) any
		// listFilter marks ids passed as list filters: the answer must also
		// carry none of A's items.
		listFilter bool
		// preview marks resolve: a selector naming nothing may be previewed
		// as 200 status no_match instead of 404 (nothing is saved or shown).
		preview bool
	}
	var probes []probe
	covered := map[string]bool{}
	for _, op := range ops {
		if op.Public || !strings.Contains(op.Path, "{") {
			continue
		}
		pathA, pathX, hasA := op.Path, op.Path, false
		for _, seg := range strings.Split(op.Path, "/") {
			if !strings.HasPrefix(seg, "{") {
				continue
			}
			name := strings.Trim(seg, "{}")
			switch {
			case aIDs[name] != "":
				pathA = strings.Replace(pathA, seg, aIDs[name], 1)
				pathX = strings.Replace(pathX, seg, unknown(), 1)
				hasA = true
			case fixed[name] != "":
				pathA = strings.Replace(pathA, seg, fixed[name], 1)
				pathX = strings.Replace(pathX, seg, fixed[name], 1)
			default:
				id := unknown()
				pathA = strings.Replace(pathA, seg, id, 1)
				pathX = strings.Replace(pathX, seg, unknown(), 1)
			}
		}
		if !hasA && pathA == pathX {
			// Only catalogue ids (layers, sections): not tenant resources.
			covered[op.ID] = true
			continue
		}
		if !hasA {
			t.Logf("%s %s: account A cannot own this kind of resource on this server; probed with unknown ids only", op.Method, op.Path)
		}
		covered[op.ID] = true
		body := bodyFor[op.ID]
		probes = append(probes, probe{name: op.ID, method: op.Method, pathA: pathA, pathX: pathX,
			body: func(string) any { return body }})
	}
	// Ids carried in query strings and bodies.
	for _, q := range []struct{ op, method, path, param, id string }{
		{"list_sites", "GET", "/sites", "portfolio_id", ownA.portfolio},
		{"list_layers", "GET", "/layers", "site_id", ownA.site},
		{"get_layer", "GET", "/layers/" + freeLayer, "site_id", ownA.site},
		{"get_layer_schema", "GET", "/layers/" + freeLayer + "/schema", "site_id", ownA.site},
		{"list_queries", "GET", "/queries", "site_id", ownA.site},
		{"list_purchases", "GET", "/purchases", "site_id", ownA.site},
		{"list_reports", "GET", "/reports", "site_id", ownA.site},
	} {
		probes = append(probes, probe{name: q.op + "?" + q.param, method: q.method,
			pathA: q.path + "?" + q.param + "=" + q.id, pathX: q.path + "?" + q.param + "=" + unknown(), listFilter: true,
			body: func(string) any { return nil }})
	}
	bodyProbes := []struct {
		name, method, path, idem string
		body                     func(id string) any
	}{
		{"create_acquisition.site_id", "POST", "/access/acquisitions", "yes", func(id string) any {
			return map[string]any{"site_id": id, "section_keys": []string{pricedSection}}
		}},
		{"create_query.saved_site", "POST", "/queries", "yes", func(id string) any {
			return map[string]any{"site": map[string]any{"kind": "saved_site", "site_id": id}, "layer_ids": []string{freeLayer}, "radius_m": 100}
		}},
		{"create_site.saved_site", "POST", "/sites", "yes", func(id string) any {
			return map[string]any{"site": map[string]any{"kind": "saved_site", "site_id": id}}
		}},
		{"resolve_location.saved_site", "POST", "/locations/resolve", "", func(id string) any {
			return map[string]any{"location": map[string]any{"kind": "saved_site", "site_id": id}}
		}},
		{"create_report.site_id", "POST", "/reports", "yes", func(id string) any {
			return map[string]any{"site_id": id}
		}},
		{"update_site.portfolio_id", "PATCH", "/sites/" + ownB.site, "", func(id string) any {
			return map[string]any{"portfolio_id": id}
		}},
	}
	for _, bp := range bodyProbes {
		idA := ownA.site
		if strings.HasSuffix(bp.name, "portfolio_id") {
			idA = ownA.portfolio
		}
		bp := bp
		probes = append(probes, probe{name: bp.name, method: bp.method, pathA: bp.path + "#" + idA, pathX: bp.path + "#" + unknown(),
			body: func(id string) any { return bp.body(id) }, preview: bp.path == "/locations/resolve"})
		if bp.idem != "" {
			probes[len(probes)-1].name += "+idem"
		}
	}
	// External references are ids too: A's (namespace, reference) from B.
	probes = append(probes,
		probe{name: "create_site.external_reference", method: "POST", pathA: "/sites#crm/ref-1", pathX: "/sites#crm/ref-unknown",
			body: func(id string) any {
				ns, ref, _ := strings.Cut(id, "/")
				return map[string]any{"site": map[string]any{"kind": "external_reference", "namespace": ns, "reference": ref}}
			}},
		probe{name: "resolve_location.external_reference", method: "POST", pathA: "/locations/resolve#crm/ref-1", pathX: "/locations/resolve#crm/ref-unknown",
			body: func(id string) any {
				ns, ref, _ := strings.Cut(id, "/")
				return map[string]any{"location": map[string]any{"kind": "external_reference", "namespace": ns, "reference": ref}}
			}, preview: true},
	)

	call := func(method, target string, bodyFn func(string) any) result {
		path, id, _ := strings.Cut(target, "#")
		var body any
		if bodyFn != nil {
			body = bodyFn(id)
		}
		var headers []string
		if method == "POST" && path != "/locations/resolve" && !strings.Contains(path, "/deliveries") {
			headers = []string{"Idempotency-Key", "tm-" + uuid.NewString()}
		}
		if (method == "POST" || method == "PATCH") && body == nil {
			body = map[string]any{}
		}
		return c.do(method, path, b.key, body, headers...)
	}

	for _, p := range probes {
		withA := call(p.method, p.pathA, p.body)
		withX := call(p.method, p.pathX, p.body)
		pa, px := withA.problem(), withX.problem()
		label := fmt.Sprintf("%s (%s %s)", p.name, p.method, p.pathA)
		if withA.status != withX.status || pa.Code != px.Code {
			t.Errorf("%s: B with A's id got %d %s, with an unknown id %d %s: the answer tells A's resource apart\nA: %s\nX: %s",
				label, withA.status, pa.Code, withX.status, px.Code, withA.body, withX.body)
			continue
		}
		if px.Code == "feature_disabled" {
			t.Logf("%s: not implemented (feature_disabled for any id)", label)
			continue
		}
		if p.listFilter {
			if withA.status == 200 && strings.Contains(string(withA.body), ownA.site) {
				t.Errorf("%s: a list filtered by A's id shows A's site: %s", label, withA.body)
			}
			if withA.status != 200 && withA.status != 404 {
				t.Errorf("%s: want 404 (or an empty 200 where the document has no 404), got %d %s", label, withA.status, withA.body)
			}
			continue
		}
		if p.preview && withA.status == 200 {
			if m := withA.json(t); m["status"] != "no_match" || strings.Contains(string(withA.body), ownA.site) {
				t.Errorf("%s: a preview of A's site: %s", label, withA.body)
			}
			continue
		}
		if withA.status != 404 || pa.Code != "not_found" {
			t.Errorf("%s: want 404 not_found, got %d %s", label, withA.status, withA.body)
		}
	}
	for _, op := range ops {
		if op.Public || !strings.Contains(op.Path, "{") {
			continue
		}
		if !covered[op.ID] {
			t.Errorf("id-taking operation %s was not probed", op.ID)
		}
	}

	// Nothing of A changed; A reads all of it (the ids were real).
	r := c.do("GET", "/sites/"+ownA.site, a.key, nil)
	site := r.json(t)["site"].(map[string]any)
	if r.status != 200 || site["name"] != "Site 1" || site["portfolio_id"] != ownA.portfolio {
		t.Errorf("A's site after B's attempts: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/queries/" + ownA.query, "/purchases/" + ownA.purchase, "/reports/" + ownA.report, "/artifacts/" + artifactA} {
		if r := c.do("GET", path, a.key, nil); r.status != 200 {
			t.Errorf("A reads %s: %d %s", path, r.status, r.body)
		}
	}
	r = c.do("GET", "/sites/"+ownB.site, b.key, nil)
	if pf := r.json(t)["site"].(map[string]any)["portfolio_id"]; pf != ownB.portfolio {
		t.Errorf("B's site moved to portfolio %v", pf)
	}
	// B was never charged for A's site.
	u := c.do("GET", "/usage", b.key, nil).json(t)["credits"].(map[string]any)
	if want := tenantCredits - sectionPrice - reportPrice; u["account_balance"] != float64(want) {
		t.Errorf("B's balance %v, want %d (its own section purchase and report)", u["account_balance"], want)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range covered {
			if !yield(k) {
				return
			}
		}
	}); len(got) > 0 {
		t.Logf("id-taking operations probed: %s", strings.Join(got, ", "))
	}
}
