package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"siteenv/ledger"
	"siteenv/queries"
)

// TestSiteFingerprintAsMarshalled: the fingerprints of POST /queries and
// POST /sites written around the site's bytes (siteFingerprint) are
// json.Marshal's of their logical requests, byte for byte hashed, for
// compact and spaced sites, sites with the characters json.Marshal
// escapes, and every form of the other fields: a key stored before keeps
// its fingerprint.
func TestSiteFingerprintAsMarshalled(t *testing.T) {
	sites := []string{
		`{"kind":"point","longitude":151.2,"latitude":-33.8}`,
		`{"kind":"point", "longitude":151.2,"latitude":-33.8}`,
		"{\"kind\":\"point\",\n\"longitude\":151.2,\"latitude\":-33.8}",
		`{"kind":"saved_site","site_id":"a<b>&c"}`,
		"{\"kind\":\"external_reference\",\"namespace\":\"x\u2028y\",\"reference\":\"r\"}",
		"{\"kind\":\"external_reference\",\"namespace\":\"x\u2029y\",\"reference\":\"\\u003c\"}",
		`{"kind":"geometry","geometry":{"type":"Polygon","coordinates":[[[151,-33.8],[151.001,-33.8],[151.001,-33.801],[151,-33.8]]]}}`,
		`{"kind":"geometry","crs":"OGC:CRS84","geometry":{"type":"Polygon","coordinates":[[[1.5e-7,-33.8],[151.001,-33.8],[151.001,-33.801],[1.5e-7,-33.8]]]}}`,
		`"not an object"`,
		`{"kind": "point", "longitude": 151.2, "latitude": -33.8}`,
		"{ \"kind\" :\t\"saved_site\" ,\r\n \"site_id\": \"a b \\\" c \\\\\" , \"x\": [ 1 , 2 ] }",
		`{"kind":"geometry", "geometry": {"type": "Polygon", "coordinates": [[[151, -33.8], [151.001, -33.8], [151, -33.8]]]}}`,
	}
	layers := [][]string{nil, {}, {"nsw.bores"}, {"a", "b<c>"}}
	radii := []float64{0, 0.1, 250, 10_000, 1e-7, 1e21, 123.456789012345}
	n := 0
	for _, site := range sites {
		for _, l := range layers {
			for _, r := range radii {
				for _, g := range []bool{false, true} {
					want, err := queries.Fingerprint("create_query", logicalQuery{json.RawMessage(site), l, r, g})
					if err != nil {
						t.Fatal(err)
					}
					got, err := queryFingerprint("create_query", json.RawMessage(site), l, r, g)
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("site %s layers %q radius %v geometry %v: fingerprint %x (%v), want %x", site, l, r, g, got, err, want)
					}
					n++
				}
			}
		}
	}
	names := []*string{nil, ptr(""), ptr("Lot 7 <north> & \u2028 café")}
	refs := []*ledger.ExternalRef{nil, {Namespace: "crm", Reference: "a&b"}}
	for _, site := range sites {
		for _, name := range names {
			for _, ref := range refs {
				want, err := queries.Fingerprint("create_site", logicalSite{json.RawMessage(site), name, ref})
				if err != nil {
					t.Fatal(err)
				}
				got, err := siteFingerprint("create_site", logicalSite{json.RawMessage(site), name, ref}, json.RawMessage(site), struct {
					Name *string
					Ref  *ledger.ExternalRef
				}{name, ref})
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("site %s name %v ref %v: fingerprint %x (%v), want %x", site, name, ref, got, err, want)
				}
				n++
			}
		}
	}
	t.Logf("%d fingerprints compared", n)
}
