package ledger_test

import (
	"encoding/json"
	"testing"
	"time"

	"siteenv/ledger"
)

// TestCatalogueVersionMovesWithEveryChange: the version authentication
// reads (Principal.Catalogue, which api's catalogue caches key on) moves
// with every committed change to a section, a layer or a release, and only
// then; reads and key checks leave it alone.
func TestCatalogueVersionMovesWithEveryChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, err := b.led.CreateAccount(b.ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{"layers:read"}})
	if err != nil {
		t.Fatal(err)
	}
	version := func() int64 {
		t.Helper()
		p, err := b.led.Authenticate(b.ctx, k.Secret)
		if err != nil {
			t.Fatal(err)
		}
		q, _, _, err := b.led.AuthenticateCount(b.ctx, k.Secret, []string{"layers:read"}, "reads", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if p.Catalogue != q.Catalogue || p.Catalogue == 0 {
			t.Fatalf("Authenticate sees version %d, AuthenticateCount %d", p.Catalogue, q.Catalogue)
		}
		return p.Catalogue
	}
	v0 := version()
	if v := version(); v != v0 {
		t.Fatalf("reads moved the version: %d -> %d", v0, v)
	}
	if err := b.led.SetSection(b.ctx, "water", "Water", 10); err != nil {
		t.Fatal(err)
	}
	v1 := version()
	if v1 <= v0 {
		t.Fatalf("a new section left the version at %d", v1)
	}
	y := ledger.Layer{ID: "nsw.bores", SectionKey: "water", Name: "Bores", SchemaVersion: "1", FieldSchema: json.RawMessage(`{}`),
		Units: json.RawMessage(`{}`), RadiusMaxM: 1000, Sources: json.RawMessage(`[]`), Jurisdictions: []string{"NSW"}, GeometryTypes: []string{"Point"}}
	rel := ledger.Release{LayerID: y.ID, ReleaseID: "r_00000000000000000000000000000001", SchemaVersion: "1", FieldSchema: y.FieldSchema,
		Units: y.Units, Sources: y.Sources, ManifestKey: "releases/nsw.bores/m.json", FeatureCount: 1, TileCount: 1, Bytes: 1}
	if err := b.led.PublishRelease(b.ctx, y, rel); err != nil {
		t.Fatal(err)
	}
	v2 := version()
	if v2 <= v1 {
		t.Fatalf("a published release left the version at %d", v2)
	}
	if err := b.led.SetSection(b.ctx, "water", "Water", 12); err != nil {
		t.Fatal(err)
	}
	if v3 := version(); v3 <= v2 {
		t.Fatalf("a price change left the version at %d", v3)
	}
}
