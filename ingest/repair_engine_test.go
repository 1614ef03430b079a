package ingest

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"
	"github.com/paulmach/orb/geojson"

	"siteenv/engine"
)

// TestRepairedLayerAgreesWithPostGIS ingests the invalid polygons of
// geo/testdata/makevalid_postgis.csv (made by gen_makevalid.sh with
// PostGIS ST_MakeValid; the cases at parcel size) with Repair, loads the release in the engine and
// asks, for every probe point, which features contain it: each case's
// feature must be found exactly where PostGIS's repaired geometry covers
// the probe.
func TestRepairedLayerAgreesWithPostGIS(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../geo/testdata/makevalid_postgis.csv")
	if err != nil {
		t.Fatal(err)
	}
	r := csv.NewReader(f)
	r.Comment, r.FieldsPerRecord = '#', -1
	rows, err := r.ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		id string
		p  orb.Point
		in bool
	}
	var lines []string
	var probes []probe
	for _, row := range rows {
		// The cases at parcel size (see gen_makevalid.sh): the engine
		// follows geodesic edges, PostGIS geometry straight ones in
		// degrees, and over the full-size cases (10 degrees) those differ
		// by kilometres.
		if !strings.HasSuffix(row[0], "@sydney") {
			continue
		}
		switch row[1] {
		case "wkt":
			g, err := wkt.Unmarshal(row[2])
			if err != nil {
				t.Fatal(err)
			}
			ft := geojson.NewFeature(g)
			ft.ID = row[0]
			ft.Properties["name"] = row[0]
			b, err := json.Marshal(ft)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		case "pt":
			x, _ := strconv.ParseFloat(row[2], 64)
			y, _ := strconv.ParseFloat(row[3], 64)
			probes = append(probes, probe{row[0], orb.Point{x, y}, row[4] == "1"})
		}
	}
	if len(lines) < 10 || len(probes) < 100*len(lines) {
		t.Fatalf("the reference has %d parcel-size cases and %d probes", len(lines), len(probes))
	}
	b := setup(t)
	in := b.write("invalid.ndjson", strings.Join(lines, "\n")+"\n")
	opt := b.opts()
	opt.Repair = true
	sum, err := Run(context.Background(), opt, in)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Repaired != int64(len(lines)) {
		t.Fatalf("repaired %d of %d", sum.Repaired, len(lines))
	}
	eng, err := engine.New(b.store, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, pr := range probes {
		res, err := eng.Query(context.Background(), engine.Request{Site: pr.p, RadiusM: 0,
			Layers: []engine.LayerRequest{{LayerID: b.def.LayerID, ReleaseID: sum.ReleaseID}}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ft := range res[0].Features {
			if ft.ID == pr.id {
				found = true
			}
		}
		if found != pr.in {
			if bad++; bad <= 10 {
				t.Errorf("%s: probe %v: found %v, PostGIS covers %v", pr.id, pr.p, found, pr.in)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d probes disagree with PostGIS", bad, len(probes))
	}
}
