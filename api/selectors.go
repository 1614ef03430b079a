package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/internal/jsonscan"
)

// Selector kinds of the contract.
const (
	kindAddress           = "address"
	kindSavedSite         = "saved_site"
	kindExternalReference = "external_reference"
	kindPoint             = "point"
	kindProjectedPoint    = "projected_point"
	kindCadastre          = "cadastre"
	kindGeometry          = "geometry"
)

var jurisdictions = []string{"ACT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA"}

// selector is a decoded, validated location selector.
type selector struct {
	Kind         string
	AddressID    string
	SiteID       uuid.UUID
	Namespace    string
	Reference    string
	Point        orb.Point // CRS84, for point and projected_point
	Jurisdiction string
	CadastreIDs  []string
	Geometry     orb.Geometry // CRS84, for geometry: its canonical form (geo.Canonical), checked valid
}

// checked reports whether the site geometry of a point or geometry
// selector (boundary) is known to pass geo.Validate without checking it
// again (jobs.DecodedSite.Checked): a point's is checked here, at no cost;
// a geometry's canonical form was checked when decoded (decodeSelector).
func (sel *selector) checked() bool {
	switch sel.Kind {
	case kindPoint, kindProjectedPoint:
		return geo.Validate(sel.Point, 0) == nil
	case kindGeometry:
		return sel.Geometry != nil
	}
	return false
}

// selectorFields lists the members each kind accepts besides "kind".
var selectorFields = map[string][]string{
	kindAddress:           {"address_id"},
	kindSavedSite:         {"site_id"},
	kindExternalReference: {"namespace", "reference"},
	kindPoint:             {"longitude", "latitude", "crs"},
	kindProjectedPoint:    {"easting", "northing", "epsg"},
	kindCadastre:          {"jurisdiction", "cadastre_ids"},
	kindGeometry:          {"geometry", "crs"},
}

// decodeSelector validates the selector at field (e.g. "site") of a body.
// Shape problems are invalid_request naming the fields; bad coordinates and
// geometry are invalid_geometry; a CRS outside the contract is unsupported_crs.
func decodeSelector(raw json.RawMessage, field string, allowAddress bool) (selector, error) {
	var sel selector
	if len(raw) == 0 || string(raw) == "null" {
		return sel, invalid("A location selector is required.", FieldError{Field: field, Message: "required"})
	}
	m, ok := members(raw)
	if !ok {
		return sel, invalid("The selector must be an object.", FieldError{Field: field, Message: "must be an object with a kind"})
	}
	if err := json.Unmarshal(m["kind"], &sel.Kind); err != nil || sel.Kind == "" {
		return sel, invalid("The selector needs a kind.", FieldError{Field: field + ".kind", Message: "required: one of " + strings.Join(kindsFor(allowAddress), ", ")})
	}
	allowed, ok := selectorFields[sel.Kind]
	if !ok || (sel.Kind == kindAddress && !allowAddress) {
		msg := "must be one of " + strings.Join(kindsFor(allowAddress), ", ")
		if sel.Kind == kindAddress {
			msg = "address selectors are not accepted here: resolve it with POST /locations/resolve and use the returned site"
		}
		return sel, invalid("Unsupported selector kind.", FieldError{Field: field + ".kind", Message: msg})
	}
	var fe []FieldError
	for _, k := range sortedKeys(m) {
		if k != "kind" && !slices.Contains(allowed, k) {
			fe = append(fe, FieldError{Field: field + "." + k, Message: "not a member of a " + sel.Kind + " selector"})
		}
	}
	str := func(name string, maxLen int) string {
		var s string
		if v, ok := m[name]; !ok {
			fe = append(fe, FieldError{Field: field + "." + name, Message: "required"})
		} else if json.Unmarshal(v, &s) != nil || s == "" || len(s) > maxLen {
			fe = append(fe, FieldError{Field: field + "." + name, Message: fmt.Sprintf("must be a string of 1 to %d characters", maxLen)})
		}
		return s
	}
	num := func(name string) float64 {
		var f float64
		if v, ok := m[name]; !ok {
			fe = append(fe, FieldError{Field: field + "." + name, Message: "required"})
		} else if json.Unmarshal(v, &f) != nil {
			fe = append(fe, FieldError{Field: field + "." + name, Message: "must be a number"})
		}
		return f
	}
	switch sel.Kind {
	case kindAddress:
		sel.AddressID = str("address_id", 200)
	case kindSavedSite:
		id := str("site_id", 36)
		if id != "" {
			u, err := parseUUID(id)
			if err != nil {
				fe = append(fe, FieldError{Field: field + ".site_id", Message: "must be a UUID"})
			}
			sel.SiteID = u
		}
	case kindExternalReference:
		sel.Namespace = str("namespace", 100)
		sel.Reference = str("reference", 256)
	case kindPoint:
		lon, lat := num("longitude"), num("latitude")
		if len(fe) > 0 {
			break
		}
		if v, ok := m["crs"]; ok {
			var c string
			if json.Unmarshal(v, &c) != nil {
				fe = append(fe, FieldError{Field: field + ".crs", Message: "must be a string"})
				break
			}
			if !slices.Contains([]string{"OGC:CRS84", "EPSG:4326", "EPSG:7844"}, c) {
				return sel, &Problem{Code: CodeUnsupportedCRS, Detail: "A point's crs must be OGC:CRS84, EPSG:4326 or EPSG:7844; use projected_point with an epsg code for MGA coordinates.",
					FieldErrors: []FieldError{{Field: field + ".crs", Message: "must be OGC:CRS84, EPSG:4326 or EPSG:7844"}}}
			}
		}
		if lon < -180 || lon > 180 || lat < -90 || lat > 90 {
			return sel, &Problem{Code: CodeInvalidGeometry, Detail: "The point is outside longitude -180..180, latitude -90..90 (order: longitude, latitude).",
				FieldErrors: []FieldError{{Field: field + ".longitude", Message: "longitude -180..180"}, {Field: field + ".latitude", Message: "latitude -90..90"}}}
		}
		sel.Point = orb.Point{lon, lat}
	case kindProjectedPoint:
		e, n := num("easting"), num("northing")
		var epsg int
		if v, ok := m["epsg"]; !ok {
			fe = append(fe, FieldError{Field: field + ".epsg", Message: "required: a GDA2020 MGA zone, EPSG:7847..7858; a zone is never guessed"})
		} else if json.Unmarshal(v, &epsg) != nil {
			fe = append(fe, FieldError{Field: field + ".epsg", Message: "must be an integer EPSG code"})
		}
		if len(fe) > 0 {
			break
		}
		crs, err := geo.CRSFromEPSG(epsg)
		if err != nil || !crs.IsProjected() {
			return sel, &Problem{Code: CodeUnsupportedCRS, Detail: fmt.Sprintf("EPSG:%d is not a supported projected CRS; use a GDA2020 MGA zone, EPSG:7847..7858.", epsg),
				FieldErrors: []FieldError{{Field: field + ".epsg", Message: "must be 7847..7858"}}}
		}
		lon, lat, err := geo.ToCRS84(crs, e, n)
		if err != nil || math.IsNaN(lon) || math.IsNaN(lat) {
			return sel, &Problem{Code: CodeInvalidGeometry, Detail: fmt.Sprintf("The easting and northing are outside MGA zone %d.", crs.Zone()),
				FieldErrors: []FieldError{{Field: field + ".easting", Message: "outside the zone"}, {Field: field + ".northing", Message: "outside the zone"}}}
		}
		sel.Point = orb.Point{lon, lat}
	case kindCadastre:
		sel.Jurisdiction = str("jurisdiction", 3)
		if sel.Jurisdiction != "" && !slices.Contains(jurisdictions, sel.Jurisdiction) {
			fe = append(fe, FieldError{Field: field + ".jurisdiction", Message: "must be one of " + strings.Join(jurisdictions, ", ")})
		}
		if v, ok := m["cadastre_ids"]; !ok {
			fe = append(fe, FieldError{Field: field + ".cadastre_ids", Message: "required"})
		} else if json.Unmarshal(v, &sel.CadastreIDs) != nil || len(sel.CadastreIDs) == 0 || len(sel.CadastreIDs) > maxParcels {
			fe = append(fe, FieldError{Field: field + ".cadastre_ids", Message: fmt.Sprintf("must be an array of 1 to %d parcel identifiers", maxParcels)})
		} else {
			seen := map[string]bool{}
			for i, id := range sel.CadastreIDs {
				switch {
				case id == "" || len(id) > 100:
					fe = append(fe, FieldError{Field: fmt.Sprintf("%s.cadastre_ids[%d]", field, i), Message: "must be 1 to 100 characters"})
				case seen[id]:
					fe = append(fe, FieldError{Field: fmt.Sprintf("%s.cadastre_ids[%d]", field, i), Message: "duplicate identifier"})
				}
				seen[id] = true
			}
		}
	case kindGeometry:
		if v, ok := m["crs"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte(`"OGC:CRS84"`)) {
			return sel, &Problem{Code: CodeUnsupportedCRS, Detail: "Geometry selectors are in OGC:CRS84 (longitude, latitude); reproject MGA coordinates or use projected_point.",
				FieldErrors: []FieldError{{Field: field + ".crs", Message: "must be OGC:CRS84"}}}
		}
		v, ok := m["geometry"]
		if !ok {
			fe = append(fe, FieldError{Field: field + ".geometry", Message: "required: a GeoJSON Polygon or MultiPolygon"})
			break
		}
		g, err := geo.DecodeGeometry(v, maxVertices)
		if err != nil {
			return sel, geometryProblem(err, field+".geometry")
		}
		switch g.(type) {
		case orb.Polygon, orb.MultiPolygon:
		default:
			return sel, &Problem{Code: CodeInvalidGeometry, Detail: "A geometry selector takes a Polygon or MultiPolygon.",
				FieldErrors: []FieldError{{Field: field + ".geometry.type", Message: "must be Polygon or MultiPolygon"}}}
		}
		// The site is the canonical form (rounded to 8 decimals, as stored
		// and searched); rounding can make a valid geometry invalid (two
		// boundaries under a millimetre apart meet), so off the grid the
		// canonical form is checked too, and refused here rather than
		// stored and failed later.
		c := geo.Canonical(g)
		if !geo.OnGrid(g) {
			if err := geo.Validate(c, 0); err != nil {
				msg := "rounded to " + strconv.Itoa(geo.CanonicalDecimals) + " decimal places (about 1 mm), as sites are stored, it is not valid: " + reasonOf(err)
				return sel, &Problem{Code: CodeInvalidGeometry, Detail: "The geometry is invalid " + msg + ".",
					FieldErrors: []FieldError{{Field: field + ".geometry", Message: msg}}}
			}
		}
		sel.Geometry = c
	}
	if len(fe) > 0 {
		return sel, invalid("The "+sel.Kind+" selector is incomplete or malformed.", fe...)
	}
	return sel, nil
}

// reasonOf is a geo validation error's reason, without its place.
func reasonOf(err error) string {
	var ve *geo.ValidationError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return err.Error()
}

// members splits a JSON object into its members' values, views into raw
// (encoding/json's Unmarshal into a map copied a 10,000-position
// geometry's 240 KB after checking it again: 3 ms); false when raw is not
// one object. A repeated key keeps its last value, as Unmarshal does
// (decodeBody refuses repeated keys before).
func members(raw []byte) (map[string]json.RawMessage, bool) {
	s := jsonscan.Scanner{B: raw}
	if !s.Consume('{') {
		return nil, false
	}
	m := map[string]json.RawMessage{}
	if s.Consume('}') {
		return m, s.AtEnd()
	}
	for {
		k, err := s.KeyRaw()
		if err != nil {
			return nil, false
		}
		s.WS()
		start := s.I
		if err := s.Skip(0); err != nil {
			return nil, false
		}
		m[string(k)] = raw[start:s.I]
		switch {
		case s.Consume(','):
		case s.Consume('}'):
			return m, s.AtEnd()
		default:
			return nil, false
		}
	}
}

// geometryProblem turns a geo validation error into invalid_geometry naming
// the place (e.g. site.geometry.coordinates[0][3]).
func geometryProblem(err error, field string) error {
	var ve *geo.ValidationError
	if errors.As(err, &ve) {
		f := field
		if ve.Path != "" {
			f += "." + ve.Path
		}
		return &Problem{Code: CodeInvalidGeometry, Detail: "The geometry is invalid at " + f + ": " + ve.Reason + ".",
			FieldErrors: []FieldError{{Field: f, Message: ve.Reason}}}
	}
	if errors.Is(err, geo.ErrInvalidGeometry) {
		return &Problem{Code: CodeInvalidGeometry, Detail: "The geometry is invalid: " + err.Error(), FieldErrors: []FieldError{{Field: field, Message: err.Error()}}}
	}
	return err
}

func kindsFor(allowAddress bool) []string {
	k := []string{kindSavedSite, kindExternalReference, kindPoint, kindProjectedPoint, kindCadastre, kindGeometry}
	if allowAddress {
		k = append([]string{kindAddress}, k...)
	}
	return k
}
