package ingest

import (
	"archive/zip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/tiles"
)

// The publisher fixtures (testdata/publishers, made by gen.sh with ogr2ogr
// from the GDA2020 GeoJSON beside them).
const pubDir = "testdata/publishers"

// ingestFixture ingests files with IDProperty "name" and returns the
// release's features.
func ingestFixture(t *testing.T, mod func(*Options), files ...string) map[string]tiles.Feature {
	t.Helper()
	b := setup(t)
	opt := b.opts()
	opt.IDProperty = "name"
	if mod != nil {
		mod(&opt)
	}
	sum, err := Run(context.Background(), opt, files...)
	if err != nil {
		t.Fatalf("%s: %v", files, err)
	}
	if sum.Rejected != 0 {
		t.Fatalf("%s: %d rejected", files, sum.Rejected)
	}
	got, _ := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
	return got
}

// TestPublisherRoundTrip: the same features through the Shapefile and
// GeoPackage readers (GDA2020, no reprojection) and as GeoJSON give
// identical features, field for field and coordinate for coordinate.
func TestPublisherRoundTrip(t *testing.T) {
	t.Parallel()
	for _, layer := range []string{"polygons", "lines", "points"} {
		want := ingestFixture(t, nil, filepath.Join(pubDir, layer+".geojson"))
		if len(want) < 2 {
			t.Fatalf("%s: %d features", layer, len(want))
		}
		cases := map[string]struct {
			file string
			mod  func(*Options)
		}{
			"shapefile":  {filepath.Join(pubDir, "shp", layer+"_7844.shp"), nil},
			"geopackage": {filepath.Join(pubDir, "gpkg", "publishers_7844.gpkg"), func(o *Options) { o.Table = layer }},
		}
		if layer == "polygons" {
			cases["shapefile latin-1 .cpg"] = struct {
				file string
				mod  func(*Options)
			}{filepath.Join(pubDir, "shp", "polygons_latin1.shp"), nil}
			cases["shapefile ldid 87"] = struct {
				file string
				mod  func(*Options)
			}{filepath.Join(pubDir, "shp", "polygons_ldid.shp"), func(o *Options) { o.SourceCRS = "EPSG:7844" }}
		}
		for name, tc := range cases {
			got := ingestFixture(t, tc.mod, tc.file)
			if len(got) != len(want) {
				t.Errorf("%s %s: %d features, want %d", layer, name, len(got), len(want))
			}
			for id, w := range want {
				g, ok := got[id]
				if !ok {
					t.Errorf("%s %s: feature %q missing", layer, name, id)
					continue
				}
				if !orb.Equal(g.Geometry, w.Geometry) {
					t.Errorf("%s %s %q: geometry %v, want %v", layer, name, id, g.Geometry, w.Geometry)
				}
				if !reflect.DeepEqual(g.Properties, w.Properties) {
					t.Errorf("%s %s %q: properties %v, want %v", layer, name, id, g.Properties, w.Properties)
				}
			}
		}
	}
}

// TestPublisherGDA94 ingests the Shapefiles and GeoPackages that ogr2ogr
// wrote in GDA94 (EPSG:4283) and MGA94 zone 56 (EPSG:28356) from GDA2020
// features: every vertex comes back within 1 mm of its GDA2020 position.
func TestPublisherGDA94(t *testing.T) {
	t.Parallel()
	for _, layer := range []string{"polygons", "lines", "points"} {
		want := ingestFixture(t, nil, filepath.Join(pubDir, layer+".geojson"))
		inputs := map[string]struct {
			file string
			mod  func(*Options)
		}{}
		for _, crs := range []string{"4283", "28356"} {
			inputs["shp "+crs] = struct {
				file string
				mod  func(*Options)
			}{filepath.Join(pubDir, "shp", layer+"_"+crs+".shp"), nil}
			inputs["gpkg "+crs] = struct {
				file string
				mod  func(*Options)
			}{filepath.Join(pubDir, "gpkg", "publishers_"+crs+".gpkg"), func(o *Options) { o.Table = layer; o.SourceCRS = "EPSG:" + crs }}
		}
		if layer == "polygons" {
			inputs["zip 28356"] = struct {
				file string
				mod  func(*Options)
			}{filepath.Join(pubDir, "zip", "polygons_28356.zip"), nil}
		}
		for name, in := range inputs {
			got := ingestFixture(t, in.mod, in.file)
			worst := 0.0
			for id, w := range want {
				g, ok := got[id]
				if !ok {
					t.Errorf("%s %s: feature %q missing", layer, name, id)
					continue
				}
				gp, wp := slices.Collect(geo.Points(g.Geometry)), slices.Collect(geo.Points(w.Geometry))
				if len(gp) != len(wp) || g.Geometry.GeoJSONType() != w.Geometry.GeoJSONType() {
					t.Errorf("%s %s %q: %s of %d positions, want %s of %d", layer, name, id, g.Geometry.GeoJSONType(), len(gp), w.Geometry.GeoJSONType(), len(wp))
					continue
				}
				for i := range gp {
					d := geo.Distance(gp[i], wp[i])
					worst = max(worst, d)
					if d > 0.001 {
						t.Errorf("%s %s %q vertex %d: %.4f m from its GDA2020 position", layer, name, id, i, d)
					}
				}
				if !reflect.DeepEqual(g.Properties, w.Properties) {
					t.Errorf("%s %s %q: properties %v, want %v", layer, name, id, g.Properties, w.Properties)
				}
			}
			t.Logf("%s %s: worst vertex %.3g m from GDA2020", layer, name, worst)
		}
	}
}

// copyShapefile copies the members of a fixture Shapefile into dir,
// skipping the extensions in skip, and returns the new .shp path.
func copyShapefile(t *testing.T, dir, stem string, skip ...string) string {
	t.Helper()
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj", ".cpg"} {
		if contains(skip, ext) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(pubDir, "shp", stem+ext))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, stem+ext), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, stem+".shp")
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestPublisherBadInput: each refused with a clear error naming the file,
// and nothing written or published.
func TestPublisherBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		make func(t *testing.T, dir string) string
		mod  func(*Options)
		want []string
	}{
		{"shp without dbf", func(t *testing.T, dir string) string {
			return copyShapefile(t, dir, "polygons_28356", ".dbf")
		}, nil, []string{"no .dbf"}},
		{"shp without shx", func(t *testing.T, dir string) string {
			return copyShapefile(t, dir, "polygons_28356", ".shx")
		}, nil, []string{"no .shx"}},
		{"truncated shp", func(t *testing.T, dir string) string {
			p := copyShapefile(t, dir, "polygons_28356")
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()-40); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, []string{".shp: truncated"}},
		{"shp shorter than its header", func(t *testing.T, dir string) string {
			p := copyShapefile(t, dir, "polygons_28356")
			if err := os.Truncate(p, 60); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, []string{".shp: truncated"}},
		{"prj naming an unsupported CRS", func(t *testing.T, dir string) string {
			p := copyShapefile(t, dir, "polygons_28356")
			vicgrid := `PROJCS["GDA_1994_VICGRID94",GEOGCS["GCS_GDA_1994",DATUM["D_GDA_1994",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",2500000.0],PARAMETER["False_Northing",2500000.0],PARAMETER["Central_Meridian",145.0],PARAMETER["Standard_Parallel_1",-36.0],PARAMETER["Standard_Parallel_2",-38.0],PARAMETER["Latitude_Of_Origin",-37.0],UNIT["Meter",1.0]]`
			if err := os.WriteFile(strings.TrimSuffix(p, ".shp")+".prj", []byte(vicgrid), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, []string{"unsupported crs", "GDA_1994_VICGRID94"}},
		{"prj disagreeing with --source-crs", func(t *testing.T, dir string) string {
			return copyShapefile(t, dir, "polygons_28356")
		}, func(o *Options) { o.SourceCRS = "EPSG:7856" }, []string{"EPSG:28356", "disagrees with --source-crs EPSG:7856"}},
		{"projected shp without prj or --source-crs", func(t *testing.T, dir string) string {
			return copyShapefile(t, dir, "polygons_28356", ".prj")
		}, nil, []string{"coordinate system is unknown", "give --source-crs"}},
		{"gpkg with several tables, none named", func(t *testing.T, dir string) string {
			return filepath.Join(pubDir, "gpkg", "publishers_28356.gpkg")
		}, nil, []string{"3 feature tables (lines, points, polygons)", "--table"}},
		{"gpkg naming a missing table", func(t *testing.T, dir string) string {
			return filepath.Join(pubDir, "gpkg", "publishers_28356.gpkg")
		}, func(o *Options) { o.Table = "roads" }, []string{`no feature table "roads"`}},
		{"gpkg srs disagreeing with --source-crs", func(t *testing.T, dir string) string {
			return filepath.Join(pubDir, "gpkg", "publishers_4283.gpkg")
		}, func(o *Options) { o.Table = "points"; o.SourceCRS = "EPSG:7844" }, []string{"EPSG:4283", "gpkg_spatial_ref_sys", "disagrees"}},
		{"not a gpkg", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "x.gpkg")
			os.WriteFile(p, []byte("this is not sqlite at all, not even close................................................................."), 0o644)
			return p
		}, nil, []string{"x.gpkg"}},
		{"zip holding two shapefiles", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "two.zip")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			zw := zip.NewWriter(f)
			for _, stem := range []string{"polygons_28356", "lines_28356"} {
				for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
					w, _ := zw.Create("data/" + stem + ext)
					src, err := os.Open(filepath.Join(pubDir, "shp", stem+ext))
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(w, src)
					src.Close()
				}
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			return p
		}, nil, []string{"2 shapefiles", "data/lines_28356.shp", "data/polygons_28356.shp"}},
		{"GeoJSON crs member disagreeing with --source-crs", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "mga94.geojson")
			os.WriteFile(p, []byte(`{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::28356"}},"features":[]}`), 0o644)
			return p
		}, func(o *Options) { o.SourceCRS = "EPSG:7856" }, []string{"EPSG:28356", "crs member", "disagrees with --source-crs EPSG:7856"}},
		{"zip without a shapefile", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "none.zip")
			f, _ := os.Create(p)
			zw := zip.NewWriter(f)
			w, _ := zw.Create("readme.txt")
			w.Write([]byte("hello"))
			zw.Close()
			f.Close()
			return p
		}, nil, []string{"holds no .shp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			path := tc.make(t, b.dir)
			opt := b.opts()
			opt.IDProperty = "name"
			if tc.mod != nil {
				tc.mod(&opt)
			}
			_, err := Run(context.Background(), opt, path)
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != path {
				t.Fatalf("err = %v, want a *FileError for %s", err, path)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			b.assertNothingPublished()
		})
	}
}
