package openapi_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tsClientCheck is TypeScript an integrator writes against the types
// openapi-typescript generates with its default settings: request bodies
// written naturally, leaving out every field the API defaults (page_size,
// include_geometry, a point's crs), numbers typed as numbers, a problem's
// typed code. tsc --strict must accept it.
const tsClientCheck = `import type { components, operations, paths } from "./schema";

type Schemas = components["schemas"];
type CreateQuery = paths["/queries"]["post"]["requestBody"]["content"]["application/json"];
type CreateSite = operations["create_site"]["requestBody"]["content"]["application/json"];

export const point: Schemas["PointSelector"] = { kind: "point", longitude: 151.0022684, latitude: -33.8146291 };
export const projected: Schemas["ProjectedPointSelector"] = { kind: "projected_point", easting: 316021.37, northing: 6255123.37, epsg: 7856 };
export const query: CreateQuery = { site: point, layer_ids: ["nsw.flood.extent"], radius_m: 250 };
export const projectedQuery: CreateQuery = { site: projected, layer_ids: ["nsw.flood.extent"], radius_m: 0.5 };
export const site: CreateSite = { site: { kind: "geometry", geometry: { type: "Polygon", coordinates: [[[151.0, -33.8], [151.001, -33.8], [151.001, -33.801, 12.5], [151.0, -33.8]]] } } };
export const listing: operations["list_sites"]["parameters"]["query"] = {};

export function describe(p: Schemas["Problem"]): string {
	const code: Schemas["ErrorCode"] = p.code;
	const status: number = p.status;
	return code + " " + status + (p.retryable ? " (retry)" : "");
}

export function distance(f: Schemas["FeatureRecord"]): number {
	return f.distance_m * 2;
}
`

// TestTypeScriptClientCompiles generates TypeScript types from the document
// with openapi-typescript 7 (default settings) and compiles a natural client
// against them with tsc --strict. Both are pinned in tools/openapi
// (package-lock.json); it installs them with npm ci when they are missing.
// Without node and npm (or with -short) it skips, saying so.
func TestTypeScriptClientCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the openapi-typescript + tsc check")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: skipping the TypeScript client check (install Node.js 18+ to run it)", tool)
		}
	}
	tools, err := filepath.Abs(filepath.Join("..", "..", "tools", "openapi"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tools, "node_modules", ".bin")
	lock, _ := os.ReadFile(filepath.Join(tools, "package-lock.json"))
	installed, _ := os.ReadFile(filepath.Join(tools, "node_modules", ".siteenv-lock"))
	if _, err := os.Stat(filepath.Join(bin, "openapi-typescript")); err != nil || !bytes.Equal(lock, installed) {
		out, err := exec.Command("npm", "ci", "--prefix", tools, "--no-audit", "--no-fund", "--loglevel=error").CombinedOutput()
		if err != nil {
			t.Fatalf("npm ci --prefix tools/openapi: %v\n%s", err, out)
		}
		if err := os.WriteFile(filepath.Join(tools, "node_modules", ".siteenv-lock"), lock, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_UPDATE_NOTIFIER=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	spec, err := filepath.Abs("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	run("openapi-typescript", spec, "-o", filepath.Join(dir, "schema.d.ts"))
	if err := os.WriteFile(filepath.Join(dir, "client.ts"), []byte(tsClientCheck), 0o644); err != nil {
		t.Fatal(err)
	}
	run("tsc", "--strict", "--noEmit", "--target", "es2022", "--module", "es2022", "--moduleResolution", "bundler", "client.ts")
}
