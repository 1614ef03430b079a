package ingest

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// bowtieNDJSON holds a valid square and the self-intersecting ring that
// POST /sites refuses.
const bowtieNDJSON = `{"type":"Feature","id":"square","geometry":{"type":"Polygon","coordinates":[[[151,-33.9],[151.01,-33.9],[151.01,-33.89],[151,-33.89],[151,-33.9]]]},"properties":{"name":"ok"}}
{"type":"Feature","id":"bowtie","geometry":{"type":"Polygon","coordinates":[[[151.0,-33.82],[151.01,-33.81],[151.01,-33.82],[151.0,-33.81],[151.0,-33.82]]]},"properties":{"name":"bad"}}
`

// An invalid polygon is refused the way POST /sites refuses it: the same
// validator, its reason and location in the rejects file, nothing
// published.
func TestInvalidPolygonIsRejected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := b.write("sites.ndjson", bowtieNDJSON)
	opt := b.opts()
	opt.RejectsPath = filepath.Join(t.TempDir(), "rejects.csv")
	_, err := Run(context.Background(), opt, in)
	if !errors.Is(err, ErrTooManyRejects) {
		t.Fatalf("err = %v, want too many rejects", err)
	}
	b.assertNothingPublished()
	rows := readRejects(t, opt.RejectsPath)
	if len(rows) != 2 {
		t.Fatalf("rejects %v", rows)
	}
	siteErr := geo.Validate(orb.Polygon{{{151.0, -33.82}, {151.01, -33.81}, {151.01, -33.82}, {151.0, -33.81}, {151.0, -33.82}}}, 0)
	if siteErr == nil || !strings.HasPrefix(rows[1][2], siteErr.Error()) || !strings.Contains(rows[1][2], "near (151.005") {
		t.Errorf("reject reason %q, POST /sites says %v", rows[1][2], siteErr)
	}
}

// --repair makes the bowtie two triangles, counted in the summary; the
// tiles hold the repaired geometry.
func TestRepairInvalidPolygon(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := b.write("sites.ndjson", bowtieNDJSON)
	opt := b.opts()
	opt.Repair = true
	sum, err := Run(context.Background(), opt, in)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Repaired != 1 || sum.Features != 2 || sum.Rejected != 0 {
		t.Fatalf("summary %+v, want 2 features, 1 repaired", sum)
	}
	got, _ := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
	mp, ok := got["bowtie"].Geometry.(orb.MultiPolygon)
	if !ok || len(mp) != 2 || geo.Validate(mp, 0) != nil {
		t.Fatalf("bowtie stored as %v, want two valid triangles", got["bowtie"].Geometry)
	}
	if _, ok := got["square"].Geometry.(orb.Polygon); !ok {
		t.Errorf("square stored as %T", got["square"].Geometry)
	}
}

// Columns outside the schema: field_map renames, unknown_fields drop (or
// --drop-unknown-fields), and the summary says what happened.
func TestUnknownFieldsAndFieldMap(t *testing.T) {
	t.Parallel()
	csvIn := "WKT,site_name,lat,lon\n\"POINT (151 -33.9)\",Alpha,-33.9,151\n\"POINT (151.1 -33.8)\",Beta,-33.8,151.1\n"
	b := setup(t)
	in := b.write("pts.csv", csvIn)

	// Without a policy the file is refused, naming the columns.
	opt := b.opts()
	if _, err := Run(context.Background(), opt, in); err == nil || !strings.Contains(err.Error(), `"lat"`) {
		t.Fatalf("err = %v, want the columns named", err)
	}
	b.assertNothingPublished()

	def := *b.def
	def.FieldMap = map[string]string{"site_name": "name"}
	opt = b.opts()
	opt.Layer = &def
	opt.DropUnknownFields = true
	sum, err := Run(context.Background(), opt, in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sum.DroppedFields, ",") != "lat,lon" || sum.RenamedFields["site_name"] != "name" || sum.Features != 2 {
		t.Fatalf("summary %+v", sum)
	}
	got, _ := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
	if n := got["pts.csv:1"].Properties["name"]; n != "Alpha" {
		t.Errorf("name = %v, want Alpha (renamed from site_name); features %v", n, got)
	}

	// The layer file's own policy does the same.
	lj := strings.Replace(testLayerJSON, `"coverage": null`, `"coverage": null, "unknown_fields": "drop", "field_map": {"site_name": "name"}`, 1)
	d2, err := ParseLayerDef([]byte(lj))
	if err != nil {
		t.Fatal(err)
	}
	opt = b.opts()
	opt.Layer = d2
	if sum, err = Run(context.Background(), opt, in); err != nil || len(sum.DroppedFields) != 2 {
		t.Fatalf("layer policy: %+v, %v", sum, err)
	}
	// GeoJSON (as GeoPackage and Shapefile rows): the same, row by row.
	nd := b.write("pts.ndjson", `{"type":"Feature","id":"g1","geometry":{"type":"Point","coordinates":[151,-33.9]},"properties":{"site_name":"Gamma","lat":-33.9,"lon":151}}`+"\n")
	opt = b.opts()
	opt.Layer = d2
	sum, err = Run(context.Background(), opt, nd)
	if err != nil || strings.Join(sum.DroppedFields, ",") != "lat,lon" || sum.RenamedFields["site_name"] != "name" {
		t.Fatalf("GeoJSON with the layer's policy: %+v %v", sum, err)
	}
	got, _ = releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
	if n := got["g1"].Properties["name"]; n != "Gamma" {
		t.Errorf("GeoJSON name = %v", n)
	}
	opt.Layer = b.def
	opt.RejectsPath = filepath.Join(t.TempDir(), "rejects.csv")
	if _, err := Run(context.Background(), opt, nd); !errors.Is(err, ErrTooManyRejects) {
		t.Errorf("GeoJSON without a policy: %v, want the row rejected", err)
	}

	bad := strings.Replace(testLayerJSON, `"coverage": null`, `"coverage": null, "field_map": {"x": "nope"}, "unknown_fields": "keep-ish"`, 1)
	if _, err := ParseLayerDef([]byte(bad)); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "unknown_fields") {
		t.Errorf("bad layer: %v", err)
	}
}
