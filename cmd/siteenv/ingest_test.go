package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

const layerJSON = `{
  "layer_id": "nsw.test-bores", "section_key": "water", "section_name": "Water", "name": "Test bores",
  "description": null, "schema_version": "1", "radius_max_m": 2000,
  "field_schema": {"depth_m": {"type": ["number", "null"]}, "status": {"type": "string"}},
  "units": {"depth_m": "m", "status": null},
  "sources": [{"source_variant_id": "v1", "scope": null, "provider": "Test", "source_url": null,
    "source_published_at": "2024-01-01", "source_effective_at": null, "retrieved_at": null,
    "licence": "CC-BY-4.0", "attribution": "© Test", "coverage_verified": true, "api_approved": true,
    "agent_approved": true, "report_approved": true}],
  "jurisdictions": ["NSW"], "coverage": null
}`

const goodGeoJSON = `{"type": "FeatureCollection", "features": [
 {"type": "Feature", "id": "b1", "geometry": {"type": "Point", "coordinates": [151.0, -33.8]}, "properties": {"depth_m": 12.5, "status": "active"}},
 {"type": "Feature", "id": "b2", "geometry": {"type": "Point", "coordinates": [151.01, -33.8]}, "properties": {"depth_m": null, "status": "capped"}}
]}`

const badGeoJSON = `{"type": "FeatureCollection", "features": [
 {"type": "Feature", "id": "p1", "geometry": {"type": "Polygon", "coordinates": [[[151,-33.8],[151.1,-33.8],[151.1,-33.7]]]}, "properties": {"depth_m": 1, "status": "x"}}
]}`

// TestIngestCommand: a release goes from a file to the catalogue in one
// command; re-running is a no-op; bad input publishes nothing.
func TestIngestCommand(t *testing.T) {
	dsn := ledgertest.DSN(t)
	t.Setenv("SITEENV_DATABASE_URL", dsn)
	t.Setenv("SITEENV_STORE", "")
	dir := t.TempDir()
	t.Setenv("SITEENV_DATA_DIR", filepath.Join(dir, "var"))
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	layer := write("layer.json", layerJSON)
	good := write("bores.geojson", goodGeoJSON)

	first, err := cli(t, "ingest", "--json", "--layer", layer, "--rejects", filepath.Join(dir, "rejects.csv"), good)
	if err != nil {
		t.Fatal(err)
	}
	if first["features"] != float64(2) || first["rejected"] != float64(0) || !strings.HasPrefix(first["release_id"].(string), "r_") {
		t.Fatalf("summary %v", first)
	}
	again, err := cli(t, "ingest", "--json", "--layer", layer, good)
	if err != nil || again["release_id"] != first["release_id"] || again["already_published"] != true {
		t.Fatalf("re-ingest %v %v", again, err)
	}
	led, err := ledger.Open(context.Background(), dsn, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	y, err := led.Layer(context.Background(), "nsw.test-bores")
	if err != nil || y.CurrentReleaseID == nil || *y.CurrentReleaseID != first["release_id"] {
		t.Fatalf("catalogue %+v %v", y, err)
	}

	bad := write("bad.geojson", badGeoJSON)
	rejects := filepath.Join(dir, "bad-rejects.csv")
	if _, err := cli(t, "ingest", "--json", "--layer", layer, "--rejects", rejects, bad); err == nil {
		t.Fatal("an unclosed ring was published")
	}
	b, err := os.ReadFile(rejects)
	if err != nil || !strings.Contains(string(b), "bad.geojson") {
		t.Fatalf("rejects file: %q %v", b, err)
	}
	if y, _ := led.Layer(context.Background(), "nsw.test-bores"); *y.CurrentReleaseID != first["release_id"] {
		t.Fatal("a failed ingest moved the current release")
	}
	if _, err := cli(t, "ingest", "--json", "--layer", write("broken.json", `{"layer_id": "x"}`), good); err == nil || !strings.Contains(err.Error(), "schema_version") {
		t.Fatalf("layer.json without required fields: %v", err)
	}
}

func TestIngestGazetteerCommand(t *testing.T) {
	t.Setenv("SITEENV_DATABASE_URL", ledgertest.DSN(t))
	dir := t.TempDir()
	t.Setenv("SITEENV_DATA_DIR", filepath.Join(dir, "var"))
	addr := filepath.Join(dir, "addresses.csv")
	parcels := filepath.Join(dir, "parcels.ndjson")
	_ = os.WriteFile(addr, []byte("label,number,street,locality,state,postcode,longitude,latitude,lga\n"+
		"\"12 Smith Street, PARRAMATTA NSW 2150\",12,Smith Street,PARRAMATTA,NSW,2150,151.0036,-33.8150,City of Parramatta\n"), 0o644)
	_ = os.WriteFile(parcels, []byte(`{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[151.0035,-33.8151],[151.0037,-33.8151],[151.0037,-33.8149],[151.0035,-33.8149],[151.0035,-33.8151]]]},"properties":{"jurisdiction":"NSW","cadastre_id":"12/DP1234","address":"12 Smith Street, PARRAMATTA NSW 2150"}}`+"\n"), 0o644)
	out, err := cli(t, "ingest", "gazetteer", "--addresses", addr, "--parcels", parcels)
	if err != nil || out["addresses"] != float64(1) || out["parcels"] != float64(1) {
		t.Fatalf("%v %v", out, err)
	}
	// The address's local government area is held for its parcel.
	led, err := ledger.Open(context.Background(), os.Getenv("SITEENV_DATABASE_URL"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	ps, err := led.ParcelsOfAddress(context.Background(), "12 Smith Street, PARRAMATTA NSW 2150")
	if err != nil || len(ps) != 1 || ps[0].LGA == nil || *ps[0].LGA != "City of Parramatta" {
		t.Fatalf("parcel of the address: %+v %v", ps, err)
	}
	_ = os.WriteFile(addr, []byte("label,number,street,locality,state,postcode,longitude,latitude\nx,1,y,z,NZ,2150,151,-33\n"), 0o644)
	if _, err := cli(t, "ingest", "gazetteer", "--addresses", addr, "--parcels", parcels); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a bad state was loaded: %v", err)
	}
}

func TestAdminLegacyImportAndLedgerCheck(t *testing.T) {
	t.Setenv("SITEENV_DATABASE_URL", ledgertest.DSN(t))
	dir := t.TempDir()
	t.Setenv("SITEENV_DATA_DIR", filepath.Join(dir, "var"))
	acct, err := cli(t, "admin", "account", "create", "--name", "Legacy Co", "--credits", "40")
	if err != nil {
		t.Fatal(err)
	}
	id := acct["account_id"].(string)
	csvPath := filepath.Join(dir, "legacy.csv")
	_ = os.WriteFile(csvPath, []byte("legacy_id,account_id,credits,created_at,site_id\n"+
		"U-1,"+id+",12,2024-05-01T10:00:00+10:00,\n"+
		"U-2,"+id+",3,,\n"), 0o644)
	out, err := cli(t, "admin", "legacy", "import", csvPath)
	if err != nil || out["imported"] != float64(2) {
		t.Fatalf("%v %v", out, err)
	}
	out, err = cli(t, "admin", "legacy", "import", csvPath)
	if err != nil || out["imported"] != float64(0) || out["already_present"] != float64(2) {
		t.Fatalf("re-import %v %v", out, err)
	}
	if _, err := cli(t, "admin", "credits", "grant", "--account", id, "--amount", "10"); err != nil {
		t.Fatal(err)
	}
	if out, err := cli(t, "admin", "ledger", "check"); err != nil || out["ok"] != true {
		t.Fatalf("ledger check %v %v", out, err)
	}
	_ = os.WriteFile(csvPath, []byte("legacy_id,account_id,credits,created_at,site_id\nU-3,"+id+",5,2024-05-01 10:00,\n"), 0o644)
	if _, err := cli(t, "admin", "legacy", "import", csvPath); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("a date without timezone was accepted: %v", err)
	}
}
