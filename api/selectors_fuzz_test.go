package api

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo"
)

// FuzzDecodeSelector: any bytes give either a usable selector or a Problem
// naming the field at fault with invalid_request, invalid_geometry or
// unsupported_crs; never a panic or another error.
func FuzzDecodeSelector(f *testing.F) {
	for _, s := range []string{
		`{"kind":"address","address_id":"adr_0123456789abcdef0123456789abcdef"}`,
		`{"kind":"saved_site","site_id":"0190b7a4-7f3e-7c1a-9d2e-1234567890ab"}`,
		`{"kind":"external_reference","namespace":"crm","reference":"LOT-12"}`,
		`{"kind":"point","longitude":151.0031,"latitude":-33.8151,"crs":"EPSG:7844"}`,
		`{"kind":"point","longitude":181,"latitude":-33}`,
		`{"kind":"point","longitude":"151","latitude":null}`,
		`{"kind":"projected_point","easting":315177.6642,"northing":6256552.2243,"epsg":7856}`,
		`{"kind":"projected_point","easting":1e308,"northing":-1e308,"epsg":7847}`,
		`{"kind":"projected_point","easting":0,"northing":0,"epsg":4283}`,
		`{"kind":"cadastre","jurisdiction":"NSW","cadastre_ids":["12/DP34567","13/DP34567"]}`,
		`{"kind":"cadastre","jurisdiction":"XX","cadastre_ids":["a","a",""]}`,
		`{"kind":"geometry","geometry":{"type":"Polygon","coordinates":[[[151,-33],[151.001,-33],[151.001,-33.001],[151,-33]]]}}`,
		`{"kind":"geometry","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]},"crs":"OGC:CRS84"}`,
		`{"kind":"geometry","geometry":{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]]]},"crs":"EPSG:4326"}`,
		`{"kind":"geometry","geometry":{"type":"Point","coordinates":[1,2]}}`,
		`{"kind":"geometry","geometry":{"type":"Polygon","coordinates":[[[[0]]]]}}`,
		`{"kind":"site"}`, `{"kind":1}`, `{}`, `[]`, `null`, `"point"`, `{"kind":"point"`, ``, "\xff",
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, allowAddress bool) {
		sel, err := decodeSelector(json.RawMessage(raw), "location", allowAddress)
		if err != nil {
			var p *Problem
			if !errors.As(err, &p) {
				t.Fatalf("%q: not a Problem: %T %v", raw, err, err)
			}
			if !slices.Contains([]Code{CodeInvalidRequest, CodeInvalidGeometry, CodeUnsupportedCRS}, p.Code) {
				t.Fatalf("%q: code %s", raw, p.Code)
			}
			if len(p.FieldErrors) == 0 || p.Detail == "" {
				t.Fatalf("%q: %s names no field: %+v", raw, p.Code, p)
			}
			for _, fe := range p.FieldErrors {
				if len(fe.Field) < len("location") || fe.Field[:len("location")] != "location" {
					t.Fatalf("%q: field %q is not under location", raw, fe.Field)
				}
			}
			return
		}
		// Accepted: the selector is complete and within the contract.
		inRange := func(p orb.Point) bool {
			return !math.IsNaN(p[0]) && !math.IsNaN(p[1]) && p[0] >= -180 && p[0] <= 180 && p[1] >= -90 && p[1] <= 90
		}
		switch sel.Kind {
		case kindAddress:
			if !allowAddress || sel.AddressID == "" {
				t.Fatalf("%q: address accepted (allowed %v)", raw, allowAddress)
			}
		case kindSavedSite:
		case kindExternalReference:
			if sel.Namespace == "" || sel.Reference == "" {
				t.Fatalf("%q: empty reference accepted", raw)
			}
		case kindPoint, kindProjectedPoint:
			if !inRange(sel.Point) {
				t.Fatalf("%q: point %v accepted", raw, sel.Point)
			}
		case kindCadastre:
			if !slices.Contains(jurisdictions, sel.Jurisdiction) || len(sel.CadastreIDs) == 0 || len(sel.CadastreIDs) > maxParcels {
				t.Fatalf("%q: cadastre %+v accepted", raw, sel)
			}
			seen := map[string]bool{}
			for _, id := range sel.CadastreIDs {
				if id == "" || seen[id] {
					t.Fatalf("%q: cadastre ids %q accepted", raw, sel.CadastreIDs)
				}
				seen[id] = true
			}
		case kindGeometry:
			switch sel.Geometry.(type) {
			case orb.Polygon, orb.MultiPolygon:
			default:
				t.Fatalf("%q: geometry %T accepted", raw, sel.Geometry)
			}
			if err := geo.Validate(sel.Geometry, maxVertices); err != nil {
				t.Fatalf("%q: invalid geometry accepted: %v", raw, err)
			}
		default:
			t.Fatalf("%q: kind %q accepted", raw, sel.Kind)
		}
	})
}
