package jobs_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb/geojson"

	"siteenv/ingest/gazetteer"
	"siteenv/jobs"
	"siteenv/ledger"
)

// TestReportCoverLGA: a buyer reads the site's local government area on
// the cover when the gazetteer's addresses file carries one for the
// address on the site's parcel, and "not held" when it does not (an
// addresses file without the lga column); the revision's evidence states
// the same (local_government_areas: the list, empty when none is held).
func TestReportCoverLGA(t *testing.T) {
	t.Parallel()
	const label = "1 Test Street, PARRAMATTA NSW 2150"
	row := `"` + label + `",1,Test Street,PARRAMATTA,NSW,2150,151,-33.81`
	for _, c := range []struct {
		name, csv, want string
		evidence        []string
	}{
		{"with lga", "label,number,street,locality,state,postcode,longitude,latitude,lga\n" + row + ",City of Parramatta\n",
			"Local government area City of Parramatta", []string{"City of Parramatta"}},
		{"without lga", "label,number,street,locality,state,postcode,longitude,latitude\n" + row + "\n",
			"Local government area not held", []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := reportSetup(t, nil)
			var addrs []ledger.AddressRow
			if err := gazetteer.ReadAddresses(strings.NewReader(c.csv), func(_ int64, a gazetteer.Address) error {
				addrs = append(addrs, ledger.AddressRow{Label: a.Label, Number: a.Number, Street: a.Street, Locality: a.Locality,
					State: a.State, Postcode: a.Postcode, Lon: a.Point[0], Lat: a.Point[1], LGA: a.LGA})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			// The parcel that makes up the site (40 m square), addressed.
			parcel := square(origin, 30)
			g, _ := json.Marshal(geojson.NewGeometry(parcel))
			bd := parcel.Bound()
			addr := label
			parcels := []ledger.ParcelRow{{Jurisdiction: "NSW", CadastreID: "1/DP1", Address: &addr, Geometry: g,
				MinLon: bd.Min[0], MinLat: bd.Min[1], MaxLon: bd.Max[0], MaxLat: bd.Max[1]}}
			if _, _, err := b.led.ReplaceGazetteer(b.ctx, next(addrs), next(parcels)); err != nil {
				t.Fatal(err)
			}
			rep, _ := b.order()
			if ran, err := b.runner(jobs.Config{}, nil).RunReportOnce(b.ctx); !ran || err != nil {
				t.Fatalf("RunReportOnce = %v, %v", ran, err)
			}
			rev := b.built(rep.ID, 1)
			var cover []string
			for _, line := range strings.Split(pdfText(t, b.pdf(&rev)), "\n") {
				if strings.HasPrefix(flat(line), "Local government area") {
					cover = append(cover, flat(line))
				}
			}
			if len(cover) != 1 || cover[0] != c.want {
				t.Fatalf("cover's LGA lines %q, want [%q]", cover, c.want)
			}
			var ev struct {
				Version string `json:"version"`
				Site    struct {
					Location struct {
						LGAs *[]string `json:"local_government_areas"`
					} `json:"location"`
				} `json:"site"`
			}
			if err := json.Unmarshal(rev.Evidence, &ev); err != nil {
				t.Fatal(err)
			}
			if lgas := ev.Site.Location.LGAs; ev.Version != jobs.EvidenceVersion || lgas == nil || !slices.Equal(*lgas, c.evidence) {
				t.Errorf("evidence %s: local_government_areas %v, want %q", ev.Version, lgas, c.evidence)
			}
		})
	}
}

// next yields the rows one by one, as ReplaceGazetteer pulls them.
func next[T any](rows []T) func() (T, bool, error) {
	return func() (T, bool, error) {
		var zero T
		if len(rows) == 0 {
			return zero, false, nil
		}
		r := rows[0]
		rows = rows[1:]
		return r, true, nil
	}
}
