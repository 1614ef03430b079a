package ingest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// mgaRef is a PROJ (cs2cs) reference: easting, northing in an MGA zone and
// the GDA2020 longitude, latitude.
type mgaRef struct {
	e, n     float64
	lon, lat float64
}

// loadMGARefs reads the inverse (E, N -> lon, lat) rows of zone from
// geo's cs2cs reference file.
func loadMGARefs(t *testing.T, zone int) []mgaRef {
	t.Helper()
	f, err := os.Open("../geo/testdata/mga_cs2cs.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mgaRef
	sc := bufio.NewScanner(f)
	prefix := fmt.Sprintf("inv,%d,", zone)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		c := strings.Split(line, ",")
		var v [4]float64
		for i := range v {
			if v[i], err = strconv.ParseFloat(c[2+i], 64); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, mgaRef{lon: v[0], lat: v[1], e: v[2], n: v[3]})
	}
	if len(out) < 50 {
		t.Fatalf("only %d reference points for zone %d", len(out), zone)
	}
	return out
}

func TestMGAInputMatchesPROJ(t *testing.T) {
	t.Parallel()
	refs := loadMGARefs(t, 56)

	t.Run("CSV x/y with --source-crs", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var sb strings.Builder
		sb.WriteString("fid,x,y,name\n")
		for i, r := range refs {
			fmt.Fprintf(&sb, "p%d,%.6f,%.6f,ref\n", i, r.e, r.n)
		}
		path := b.write("mga.csv", sb.String())
		opt := b.opts()
		opt.SourceCRS = "EPSG:7856"
		opt.IDProperty = "fid"
		sum, err := Run(context.Background(), opt, path)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
		worst := 0.0
		for i, r := range refs {
			f, ok := got[fmt.Sprintf("p%d", i)]
			if !ok {
				t.Fatalf("p%d missing", i)
			}
			d := geo.Distance(f.Geometry.(orb.Point), orb.Point{r.lon, r.lat})
			worst = max(worst, d)
			if d > 0.001 {
				t.Errorf("p%d (E %.0f, N %.0f): %.6f m from PROJ", i, r.e, r.n, d)
			}
		}
		t.Logf("%d points, worst %.3g m from PROJ", len(refs), worst)
	})

	t.Run("GeoJSON with a legacy crs member", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A LineString through the first references and a Polygon on
		// four of them, in EPSG:7856 as the file's crs member says (no flag).
		line := refs[:20]
		var coords []string
		for _, r := range line {
			coords = append(coords, fmt.Sprintf("[%.6f,%.6f]", r.e, r.n))
		}
		sq := []mgaRef{refs[30], refs[31], refs[40], refs[39], refs[30]}
		var ring []string
		for _, r := range sq {
			ring = append(ring, fmt.Sprintf("[%.6f,%.6f]", r.e, r.n))
		}
		path := b.write("mga.geojson", `{"type":"FeatureCollection",
"crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::7856"}},
"features":[
{"type":"Feature","id":"line","geometry":{"type":"LineString","coordinates":[`+strings.Join(coords, ",")+`]},"properties":{"name":"l"}},
{"type":"Feature","id":"poly","geometry":{"type":"Polygon","coordinates":[[`+strings.Join(ring, ",")+`]]},"properties":{"name":"p"}}]}`)
		sum, err := Run(context.Background(), b.opts(), path)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := releaseFeatures(t, b.store, b.def.LayerID, sum.ReleaseID)
		check := func(pts []orb.Point, refs []mgaRef) {
			if len(pts) != len(refs) {
				t.Fatalf("%d positions, want %d", len(pts), len(refs))
			}
			for i, r := range refs {
				if d := geo.Distance(pts[i], orb.Point{r.lon, r.lat}); d > 0.001 {
					t.Errorf("position %d: %.6f m from PROJ", i, d)
				}
			}
		}
		check(got["line"].Geometry.(orb.LineString), line)
		check(got["poly"].Geometry.(orb.Polygon)[0], sq)
	})

	t.Run("outside the zone's domain is rejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		path := b.write("far.csv", "x,y,name\n500000,6000000,ok\n-9000000,6000000,far\n")
		opt := b.opts()
		opt.SourceCRS = "EPSG:7856"
		opt.MaxRejects = 1
		opt.RejectsPath = b.dir + "/rejects.csv"
		sum, err := Run(context.Background(), opt, path)
		if err != nil {
			t.Fatal(err)
		}
		rows := readRejects(t, opt.RejectsPath)
		if sum.Rejected != 1 || len(rows) != 2 || rows[1][1] != "2" || !strings.Contains(rows[1][2], "EPSG:7856") {
			t.Errorf("summary %+v, rejects %q", sum, rows)
		}
	})
}
