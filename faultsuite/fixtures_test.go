package faultsuite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// The suite's catalogue: a free layer and a priced one near Parramatta.
const (
	freeLayer      = "fz.bores"
	freeSection    = "water"
	pricedLayer    = "fz.contam"
	pricedSection  = "contamination"
	sectionPrice   = 10
	centreLon      = 151.0
	centreLat      = -33.8
	tenantCredits  = 1_000_000
	layerJSONShape = `{
  "layer_id": %q, "section_key": %q, "name": "Fault suite %s", "description": null,
  "schema_version": "1", "radius_max_m": 5000,
  "field_schema": {"depth_m": {"type": ["number", "null"]}, "status": {"type": "string"}},
  "units": {"depth_m": "m", "status": null},
  "sources": [{"source_variant_id": "v1", "scope": null, "provider": "Fault suite", "source_url": null,
    "source_published_at": "2024-01-01", "source_effective_at": null, "retrieved_at": null,
    "licence": "CC-BY-4.0", "attribution": "Fault suite", "coverage_verified": true, "api_approved": true,
    "agent_approved": true, "report_approved": true}],
  "jurisdictions": ["NSW"], "coverage": null
}`
)

// catalogue is what loadCatalogue published: release id by layer id.
type catalogue struct {
	releases map[string]string
}

// loadCatalogue prices the sections and ingests both layers with the real
// binary (`siteenv ingest`) into e's database and file store.
func loadCatalogue(t *testing.T, e env, l *ledger.Ledger) catalogue {
	t.Helper()
	ctx := context.Background()
	if err := l.SetSection(ctx, freeSection, "Water", 0); err != nil {
		t.Fatal(err)
	}
	if err := l.SetSection(ctx, pricedSection, "Contamination", sectionPrice); err != nil {
		t.Fatal(err)
	}
	dir := scratchDir(t)
	cat := catalogue{releases: map[string]string{}}
	for _, y := range []struct{ id, section string }{{freeLayer, freeSection}, {pricedLayer, pricedSection}} {
		layer := filepath.Join(dir, y.id+".json")
		if err := os.WriteFile(layer, []byte(fmt.Sprintf(layerJSONShape, y.id, y.section, y.id)), 0o644); err != nil {
			t.Fatal(err)
		}
		var features []string
		for i := range 5 {
			for j := range 5 {
				features = append(features, fmt.Sprintf(`{"type":"Feature","id":"%s-%d-%d","geometry":{"type":"Point","coordinates":[%.4f,%.4f]},"properties":{"depth_m":%d,"status":"active"}}`,
					y.id, i, j, centreLon-0.01+0.005*float64(i), centreLat-0.01+0.005*float64(j), i*10+j))
			}
		}
		src := filepath.Join(dir, y.id+".geojson")
		if err := os.WriteFile(src, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(features, ",")+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		out := cli(t, e, "ingest", "--json", "--layer", layer, "--rejects", filepath.Join(dir, y.id+".rejects.csv"), src)
		rel, _ := out["release_id"].(string)
		if rel == "" || out["features"] != float64(25) {
			t.Fatalf("ingest %s: %v", y.id, out)
		}
		cat.releases[y.id] = rel
	}
	return cat
}

// point is a point selector i steps east of the centre (distinct sites).
func point(i int) map[string]any {
	return map[string]any{"kind": "point", "longitude": centreLon + 0.0003*float64(i), "latitude": centreLat}
}

// createSite saves a point site and returns its id.
func createSite(t *testing.T, c *client, key string, i int, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"site": point(i), "name": fmt.Sprintf("Site %d", i)}
	for k, v := range extra {
		body[k] = v
	}
	r := c.do("POST", "/sites", key, body, "Idempotency-Key", "site-"+uuid.NewString())
	if r.status != 200 {
		t.Fatalf("create site %d: %d %s", i, r.status, r.body)
	}
	return r.json(t)["site"].(map[string]any)["site_id"].(string)
}

// buy acquires the priced section on a site and returns the purchase id.
func buy(t *testing.T, c *client, key, site, idem string) string {
	t.Helper()
	r := c.do("POST", "/access/acquisitions", key, map[string]any{"site_id": site, "section_keys": []string{pricedSection}}, "Idempotency-Key", idem)
	if r.status != 200 {
		t.Fatalf("acquisition: %d %s", r.status, r.body)
	}
	return r.json(t)["purchase_id"].(string)
}

// runQuery queries the free layer around a saved site and returns the query id.
func runQuery(t *testing.T, c *client, key, site, idem string) string {
	t.Helper()
	r := c.do("POST", "/queries", key, map[string]any{
		"site": map[string]any{"kind": "saved_site", "site_id": site}, "layer_ids": []string{freeLayer}, "radius_m": 2000,
	}, "Idempotency-Key", idem)
	if r.status != 200 && r.status != 202 {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	return r.json(t)["query_id"].(string)
}
