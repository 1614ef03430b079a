package ledger_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"siteenv/ledger"
)

// TestReportScope: a report covers the layers of its jurisdiction and of AUS
// whose catalogue and current-release sources are all report-approved,
// narrowed by a key's dataset restriction.
func TestReportScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	approved := `{"provider":"p","report_approved":true}`
	refused := `{"provider":"p","report_approved":false}`
	unflagged := `{"provider":"p"}`
	publish := func(id string, jurisdictions []string, layerSources, releaseSources string) {
		t.Helper()
		y := ledger.Layer{ID: id, SectionKey: "scope", Name: id, SchemaVersion: "1", FieldSchema: json.RawMessage(`{}`),
			Units: json.RawMessage(`{}`), RadiusMaxM: 100, Sources: json.RawMessage(layerSources), GeometryTypes: []string{"Point"},
			Jurisdictions: jurisdictions}
		rel := ledger.Release{LayerID: id, ReleaseID: "r_" + id, SchemaVersion: "1", FieldSchema: y.FieldSchema, Units: y.Units,
			Sources: json.RawMessage(releaseSources), ManifestKey: "releases/" + id + "/m.json", FeatureCount: 1, TileCount: 1, Bytes: 1}
		if err := b.led.PublishRelease(b.ctx, y, rel); err != nil {
			t.Fatal(err)
		}
	}
	publish("nsw.a", []string{"NSW"}, "["+approved+"]", "["+approved+"]")
	publish("nsw-vic.b", []string{"VIC", "NSW"}, "["+approved+","+approved+"]", "["+approved+"]")
	publish("aus.c", []string{"AUS"}, "["+approved+"]", "["+approved+"]")
	publish("qld.d", []string{"QLD"}, "["+approved+"]", "["+approved+"]")
	publish("nsw.mixed", []string{"NSW"}, "["+approved+","+refused+"]", "["+approved+"]")
	publish("nsw.unflagged", []string{"NSW"}, "["+unflagged+"]", "["+approved+"]")
	publish("nsw.release-refused", []string{"NSW"}, "["+approved+"]", "["+refused+"]")
	publish("nsw.no-sources", []string{"NSW"}, "[]", "[]")

	for _, tc := range []struct {
		jurisdiction string
		datasets     []string
		want         []string
	}{
		{"NSW", nil, []string{"aus.c", "nsw-vic.b", "nsw.a"}},
		{"VIC", nil, []string{"aus.c", "nsw-vic.b"}},
		{"QLD", nil, []string{"aus.c", "qld.d"}},
		{"TAS", nil, []string{"aus.c"}},
		{"NSW", []string{"nsw.a", "qld.d", "nsw.mixed"}, []string{"nsw.a"}},
		{"NSW", []string{"qld.d"}, []string{}},
		{"NSW", []string{}, []string{}},
	} {
		got, err := b.led.ReportScope(b.ctx, tc.jurisdiction, tc.datasets)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ReportScope(%s, %v) = %v, want %v", tc.jurisdiction, tc.datasets, got, tc.want)
		}
	}
	// Every jurisdiction's approved layers, and only those.
	got, err := b.led.ReportLayers(b.ctx)
	if want := []string{"aus.c", "nsw-vic.b", "nsw.a", "qld.d"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ReportLayers() = %v, %v; want %v", got, err, want)
	}
}

// TestReportLayersEmpty: with no approved layer, ReportLayers is empty (not nil).
func TestReportLayersEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if got, err := b.led.ReportLayers(b.ctx); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ReportLayers() = %#v, %v", got, err)
	}
}

// TestReportByOrderKey: an order is found by its integration and key only.
func TestReportByOrderKey(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 0)
	rep, _, err := f.led.OrderReport(f.ctx, f.order("k-1", 10))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.led.ReportByOrderKey(f.ctx, f.integration, "k-1")
	if err != nil || got.ID != rep.ID || got.SiteID == nil || *got.SiteID != f.site || !reflect.DeepEqual(got.DatasetIDs, rep.DatasetIDs) {
		t.Fatalf("by key: %+v %v", got, err)
	}
	if _, err := f.led.ReportByOrderKey(f.ctx, f.integration, "k-2"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
}
