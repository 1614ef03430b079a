package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestIngestKeepUnknownFields: --keep-unknown-fields keeps a publisher's
// extra columns as string fields of the release, in the catalogue's field
// schema, and the summary names them; it excludes --drop-unknown-fields.
func TestIngestKeepUnknownFields(t *testing.T) {
	dsn := ledgertest.DSN(t)
	t.Setenv("SITEENV_DATABASE_URL", dsn)
	t.Setenv("SITEENV_STORE", "")
	dir := t.TempDir()
	t.Setenv("SITEENV_DATA_DIR", filepath.Join(dir, "var"))
	layer := filepath.Join(dir, "layer.json")
	in := filepath.Join(dir, "bores.csv")
	for p, body := range map[string]string{layer: layerJSON, in: "WKT,depth_m,status,lat,lon\n\"POINT (151 -33.8)\",12.5,active,-33.8,151\n"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli(t, "ingest", "--json", "--layer", layer, in); err == nil || !strings.Contains(err.Error(), `"lat"`) {
		t.Fatalf("without a policy: %v, want the columns refused", err)
	}
	if err := run(context.Background(), []string{"ingest", "--keep-unknown-fields", "--drop-unknown-fields", "--layer", layer, in}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Fatalf("both flags: %v", err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"ingest", "--keep-unknown-fields", "--layer", layer, in}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kept columns (as string fields): lat, lon") {
		t.Fatalf("summary %q", out.String())
	}
	again, err := cli(t, "ingest", "--json", "--keep-unknown-fields", "--layer", layer, in)
	if err != nil || fmt.Sprint(again["kept_fields"]) != "[lat lon]" || again["same_input"] != true {
		t.Fatalf("again %v %v", again, err)
	}
	led, err := ledger.Open(context.Background(), dsn, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	y, err := led.Layer(context.Background(), "nsw.test-bores")
	if err != nil {
		t.Fatal(err)
	}
	var fs map[string]struct {
		Type  any    `json:"type"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal(y.FieldSchema, &fs); err != nil || fmt.Sprint(fs["lat"].Type) != "[string null]" || fs["status"].Type != "string" || fs["lon"].Title != "lon" {
		t.Fatalf("catalogue field_schema %s %v", y.FieldSchema, err)
	}
}
