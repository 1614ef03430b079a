package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/ledger"
)

// Location search (GET /locations/search) and resolve (POST
// /locations/resolve): previews over the gazetteer. Nothing is saved or
// charged.

var postcodeRE = regexp.MustCompile(`^[0-9]{4}$`)

// coverageDeg is how near (degrees of longitude and latitude, about 1 km) a
// point outside every parcel must be to some parcel or address for the
// gazetteer to count as covering it.
const coverageDeg = 0.01

// Resolution statuses.
const (
	statusResolved            = "resolved"
	statusMultipleMatches     = "multiple_matches"
	statusNoMatch             = "no_match"
	statusCoverageUnavailable = "coverage_unavailable"
)

// pointJSON is a GeoJSON Point.
type pointJSON struct {
	Type        string     `json:"type"`
	Coordinates [2]float64 `json:"coordinates"`
}

func newPointJSON(p orb.Point) *pointJSON {
	return &pointJSON{Type: "Point", Coordinates: [2]float64{p[0], p[1]}}
}

// Selector bodies as the API returns them (LocationSelector members).
type (
	addressSelectorBody struct {
		Kind      string `json:"kind"`
		AddressID string `json:"address_id"`
	}
	cadastreSelectorBody struct {
		Kind         string   `json:"kind"`
		Jurisdiction string   `json:"jurisdiction"`
		CadastreIDs  []string `json:"cadastre_ids"`
	}
	pointSelectorBody struct {
		Kind      string  `json:"kind"`
		Longitude float64 `json:"longitude"`
		Latitude  float64 `json:"latitude"`
	}
	geometrySelectorBody struct {
		Kind     string          `json:"kind"`
		Geometry json.RawMessage `json:"geometry"`
		CRS      string          `json:"crs"`
	}
	savedSiteSelectorBody struct {
		Kind   string `json:"kind"`
		SiteID string `json:"site_id"`
	}
	externalReferenceSelectorBody struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Reference string `json:"reference"`
	}
)

// locationSource says where a suggestion comes from (LocationSource). The
// gazetteer carries no provenance of its own, so licence and attribution are
// unknown (null), never invented.
type locationSource struct {
	Provider    string  `json:"provider"`
	Dataset     string  `json:"dataset"`
	Licence     *string `json:"licence"`
	Attribution *string `json:"attribution"`
	RetrievedAt *string `json:"retrieved_at"`
}

var (
	addressSource = locationSource{Provider: "siteenv gazetteer", Dataset: "addresses"}
	parcelSource  = locationSource{Provider: "siteenv gazetteer", Dataset: "parcels"}
)

// suggestion is a LocationSuggestion.
type suggestion struct {
	Rank         int            `json:"rank"`
	Kind         string         `json:"kind"`
	Label        string         `json:"label"`
	Selector     any            `json:"selector"`
	Point        *pointJSON     `json:"point"`
	Jurisdiction *string        `json:"jurisdiction"`
	Postcode     *string        `json:"postcode"`
	Source       locationSource `json:"source"`
}

type searchBody struct {
	APIVersion          string       `json:"api_version"`
	Results             []suggestion `json:"results"`
	MoreResultsPossible bool         `json:"more_results_possible"`
}

func (s *Server) searchLocations(r *request) error {
	q := r.query("query", "kind", "jurisdiction", "postcode", "limit")
	if _, ok := q.get("query"); !ok {
		q.add("query", "required: 3 to 200 characters")
	}
	text := q.str("query", 3, 200, nil)
	kind := "address"
	if _, ok := q.get("kind"); ok {
		kind = q.enum("kind", "address", "parcel")
	}
	jurisdiction := q.enum("jurisdiction", jurisdictions...)
	postcode := q.str("postcode", 4, 4, postcodeRE)
	if _, ok := q.get("postcode"); ok && kind == "parcel" {
		q.add("postcode", "applies to address searches only: remove it, or search with kind=address")
	}
	limit := q.limit(maxLocationResults, maxLocationResults)
	if err := q.err(); err != nil {
		return err
	}
	body := searchBody{APIVersion: "1", Results: []suggestion{}}
	switch kind {
	case "address":
		ms, more, err := s.led.SearchAddresses(r.ctx, ledger.AddressQuery{Text: text, Jurisdiction: jurisdiction, Postcode: postcode, Limit: limit})
		if err != nil {
			return err
		}
		for i, m := range ms {
			body.Results = append(body.Results, addressSuggestion(i+1, m.Address))
		}
		body.MoreResultsPossible = more
	case "parcel":
		ms, more, err := s.led.SearchParcels(r.ctx, ledger.ParcelQuery{Text: text, Jurisdiction: jurisdiction, Limit: limit})
		if err != nil {
			return err
		}
		for i, m := range ms {
			p, err := decodeParcel(m.Parcel)
			if err != nil {
				return err
			}
			body.Results = append(body.Results, p.suggestion(i+1))
		}
		body.MoreResultsPossible = more
	}
	return r.writeJSON(200, body)
}

func addressSuggestion(rank int, a ledger.Address) suggestion {
	return suggestion{Rank: rank, Kind: "address", Label: a.Label,
		Selector: addressSelectorBody{Kind: kindAddress, AddressID: a.ID},
		Point:    newPointJSON(orb.Point{a.Lon, a.Lat}), Jurisdiction: &a.State, Postcode: &a.Postcode, Source: addressSource}
}

// parcel is a gazetteer parcel with its decoded, canonical geometry.
type parcel struct {
	ledger.Parcel
	geom orb.Geometry // canonical Polygon or MultiPolygon
	raw  orb.Geometry // as stored
}

func decodeParcel(p ledger.Parcel) (parcel, error) {
	what := "parcel " + p.Jurisdiction + " " + p.CadastreID
	g, err := geo.DecodeStored(what, p.Geometry)
	if err != nil {
		return parcel{}, err
	}
	switch g.(type) {
	case orb.Polygon, orb.MultiPolygon:
	default:
		return parcel{}, &geo.StoredError{What: what, Reason: "a " + g.GeoJSONType() + ", not a Polygon or MultiPolygon"}
	}
	return parcel{Parcel: p, geom: geo.Canonical(g), raw: g}, nil
}

// label names a parcel by its identifier and, when it has one, its address.
func (p parcel) label() string {
	l := p.CadastreID + " (" + p.Jurisdiction + ")"
	if p.Address != nil {
		l += ", " + *p.Address
	}
	return l
}

func (p parcel) selector() cadastreSelectorBody {
	return cadastreSelectorBody{Kind: kindCadastre, Jurisdiction: p.Jurisdiction, CadastreIDs: []string{p.CadastreID}}
}

func (p parcel) suggestion(rank int) suggestion {
	j := p.Jurisdiction
	return suggestion{Rank: rank, Kind: "parcel", Label: p.label(), Selector: p.selector(),
		Point: newPointJSON(geo.RepresentativePoint(p.geom)), Jurisdiction: &j, Postcode: p.Postcode, Source: parcelSource}
}

type parcelBody struct {
	CadastreID   string          `json:"cadastre_id"`
	Jurisdiction string          `json:"jurisdiction"`
	Label        string          `json:"label"`
	AreaM2       float64         `json:"area_m2"`
	Geometry     json.RawMessage `json:"geometry"`
}

func (p parcel) body() (parcelBody, error) {
	g, err := geometryJSON(p.geom)
	return parcelBody{CadastreID: p.CadastreID, Jurisdiction: p.Jurisdiction, Label: p.label(), AreaM2: geo.Area(p.geom), Geometry: g}, err
}

func geometryJSON(g orb.Geometry) (json.RawMessage, error) {
	if g == nil {
		return nil, nil
	}
	return geo.AppendGeoJSON(nil, g)
}

// resolution is what a location selector resolves to.
type resolution struct {
	status string
	// point: the address or point asked for, else a representative point
	// inside the boundary; nil for no_match.
	point *orb.Point
	// boundary: canonical Polygon or MultiPolygon, or nil.
	boundary orb.Geometry
	// site: a selector to pass unchanged to POST /sites, or nil; siteGeom is
	// the geometry it names when known here (for existing_site_id).
	site     any
	siteGeom orb.Geometry
	parcels  []parcel
	missing  []string
	area     *float64
	existing *uuid.UUID
	// candidates to choose from, for multiple_matches.
	candidates []suggestion
}

type resolutionBody struct {
	APIVersion       string          `json:"api_version"`
	Status           string          `json:"status"`
	Point            *pointJSON      `json:"point"`
	Boundary         json.RawMessage `json:"boundary"`
	Site             any             `json:"site"`
	Parcels          []parcelBody    `json:"parcels"`
	MissingParcelIDs []string        `json:"missing_parcel_ids"`
	CRS              string          `json:"crs"`
	AxisOrder        []string        `json:"axis_order"`
	AreaM2           *float64        `json:"area_m2"`
	ExistingSiteID   *string         `json:"existing_site_id"`
	Candidates       []suggestion    `json:"candidates,omitempty"`
}

func (res resolution) body() (resolutionBody, error) {
	b := resolutionBody{APIVersion: "1", Status: res.status, Site: res.site, Parcels: []parcelBody{}, MissingParcelIDs: []string{},
		CRS: "OGC:CRS84", AxisOrder: []string{"longitude", "latitude"}, AreaM2: res.area, Candidates: res.candidates}
	if res.point != nil {
		b.Point = newPointJSON(*res.point)
	}
	var err error
	if b.Boundary, err = geometryJSON(res.boundary); err != nil {
		return b, err
	}
	for _, p := range res.parcels {
		pb, err := p.body()
		if err != nil {
			return b, err
		}
		b.Parcels = append(b.Parcels, pb)
	}
	if res.missing != nil {
		b.MissingParcelIDs = res.missing
	}
	if res.existing != nil {
		id := res.existing.String()
		b.ExistingSiteID = &id
	}
	return b, nil
}

func (s *Server) resolveLocation(r *request) error {
	var req struct {
		Location json.RawMessage `json:"location"`
	}
	if err := decodeBody(string(r.http.Request.Header.ContentType()), r.http.Request.Body(), &req); err != nil {
		return err
	}
	if err := r.query().err(); err != nil {
		return err
	}
	sel, err := decodeSelector(req.Location, "location", true)
	if err != nil {
		return err
	}
	res, err := s.resolve(r, sel)
	if err != nil {
		return err
	}
	if res.existing == nil && res.siteGeom != nil {
		id, err := s.led.ActiveSiteWithFingerprint(r.ctx, r.principal.AccountID, geo.Fingerprint(res.siteGeom))
		switch {
		case err == nil:
			res.existing = &id
		case !errors.Is(err, ledger.ErrNotFound):
			return err
		}
	}
	b, err := res.body()
	if err != nil {
		return err
	}
	return r.writeJSON(200, b)
}

// resolve resolves a decoded selector (any kind, address included) to a
// preview; it writes nothing.
func (s *Server) resolve(r *request, sel selector) (resolution, error) {
	switch sel.Kind {
	case kindAddress:
		return s.resolveAddress(r, sel.AddressID)
	case kindSavedSite, kindExternalReference:
		return s.resolveSite(r, sel)
	case kindPoint, kindProjectedPoint:
		return s.resolvePoint(r, sel.Point)
	case kindCadastre:
		return s.resolveCadastre(r, sel)
	case kindGeometry:
		g := sel.Geometry
		raw, err := geometryJSON(g)
		if err != nil {
			return resolution{}, err
		}
		pt, area := geo.RepresentativePoint(g), geo.Area(g)
		return resolution{status: statusResolved, point: &pt, boundary: g, area: &area,
			site: geometrySelectorBody{Kind: kindGeometry, Geometry: raw, CRS: "OGC:CRS84"}, siteGeom: g}, nil
	}
	return resolution{}, fmt.Errorf("api: resolve: unexpected selector kind %q", sel.Kind)
}

// resolveAddress: the address point, and the parcel whose polygon contains
// it (or, failing that, the parcel the gazetteer links to the address). An
// unknown address identifier is no_match.
func (s *Server) resolveAddress(r *request, id string) (resolution, error) {
	a, err := s.led.AddressByID(r.ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return resolution{status: statusNoMatch}, nil
	}
	if err != nil {
		return resolution{}, err
	}
	pt := orb.Point{a.Lon, a.Lat}
	ps, err := s.parcelsContaining(r, pt)
	if err != nil {
		return resolution{}, err
	}
	if len(ps) == 0 {
		linked, err := s.led.ParcelsOfAddress(r.ctx, a.Label)
		if err != nil {
			return resolution{}, err
		}
		for _, lp := range linked {
			p, err := decodeParcel(lp)
			if err != nil {
				return resolution{}, err
			}
			ps = append(ps, p)
		}
	}
	return fromParcels(pt, ps, true), nil
}

// resolvePoint: the parcel containing the point; without one, the point
// itself, resolved when the gazetteer has data within about 1 km and
// coverage_unavailable when it has none (the gazetteer cannot say which
// parcel it is in).
func (s *Server) resolvePoint(r *request, pt orb.Point) (resolution, error) {
	ps, err := s.parcelsContaining(r, pt)
	if err != nil {
		return resolution{}, err
	}
	covered := len(ps) > 0
	if !covered {
		if covered, err = s.led.GazetteerNear(r.ctx, pt[0], pt[1], coverageDeg); err != nil {
			return resolution{}, err
		}
	}
	return fromParcels(pt, ps, covered), nil
}

// fromParcels builds the resolution of a point and the parcels found for it:
// one parcel is the boundary (resolved), several are a choice
// (multiple_matches, no boundary), none leaves the point itself as the site
// (resolved inside the gazetteer's coverage, else coverage_unavailable).
func fromParcels(pt orb.Point, ps []parcel, covered bool) resolution {
	res := resolution{point: &pt, parcels: ps}
	switch len(ps) {
	case 0:
		res.status = statusResolved
		if !covered {
			res.status = statusCoverageUnavailable
		}
		res.site, res.siteGeom = pointSelectorBody{Kind: kindPoint, Longitude: pt[0], Latitude: pt[1]}, pt
	case 1:
		area := geo.Area(ps[0].geom)
		res.status, res.boundary, res.area = statusResolved, ps[0].geom, &area
		res.site, res.siteGeom = ps[0].selector(), ps[0].geom
	default:
		// Smallest first: the most specific parcel is the likeliest meant.
		sort.SliceStable(ps, func(i, j int) bool { return geo.Area(ps[i].geom) < geo.Area(ps[j].geom) })
		if len(ps) > maxParcels {
			ps = ps[:maxParcels]
		}
		res.status, res.parcels = statusMultipleMatches, ps
		for i, p := range ps {
			if i == 10 {
				break
			}
			res.candidates = append(res.candidates, p.suggestion(i+1))
		}
	}
	return res
}

// parcelsContaining reads the parcels whose polygon contains pt (boundary
// included): a bounding-box search in the ledger, then the exact test.
func (s *Server) parcelsContaining(r *request, pt orb.Point) ([]parcel, error) {
	rows, err := s.led.ParcelsAt(r.ctx, pt[0], pt[1])
	if err != nil {
		return nil, err
	}
	var out []parcel
	for _, row := range rows {
		p, err := decodeParcel(row)
		if err != nil {
			return nil, err
		}
		// The raw geometry: canonical rounding must not move the boundary
		// across the point.
		if geo.PolygonalContains(p.raw, pt) {
			out = append(out, p)
		}
	}
	return out, nil
}

// resolveSite: a saved site or a registered external reference previews
// the stored boundary. Another account's, an archived or a missing site all
// give no_match: a preview never tells them apart.
func (s *Server) resolveSite(r *request, sel selector) (resolution, error) {
	var site ledger.Site
	var err error
	var selBody any
	if sel.Kind == kindSavedSite {
		site, err = s.led.Site(r.ctx, r.principal.AccountID, sel.SiteID)
		selBody = savedSiteSelectorBody{Kind: kindSavedSite, SiteID: sel.SiteID.String()}
	} else {
		site, err = s.led.SiteByReference(r.ctx, r.principal.AccountID, sel.Namespace, sel.Reference)
		selBody = externalReferenceSelectorBody{Kind: kindExternalReference, Namespace: sel.Namespace, Reference: sel.Reference}
	}
	if errors.Is(err, ledger.ErrNotFound) {
		return resolution{status: statusNoMatch}, nil
	}
	if err != nil {
		return resolution{}, err
	}
	g, err := geo.DecodeStored("boundary of site "+site.ID.String(), site.Geometry)
	if err != nil {
		return resolution{}, err
	}
	r.resourceType, r.resourceID = "site", site.ID.String()
	pt, area, id := geo.RepresentativePoint(g), site.AreaM2, site.ID
	res := resolution{status: statusResolved, point: &pt, site: selBody, area: &area, existing: &id}
	switch g.(type) {
	case orb.Polygon, orb.MultiPolygon:
		res.boundary = g
	}
	return res, nil
}

// resolveCadastre: every listed parcel, their union as the boundary.
//
// Missing parcels: when none of the identifiers is in the jurisdiction's
// cadastre the answer is a 200 no_match listing them all in
// missing_parcel_ids (the client may simply have the wrong jurisdiction);
// when some are found and some are not, it is 422 cadastre_incomplete with a
// field error naming each missing location.cadastre_ids[i]. A cadastre
// selector is a complete list by definition, so a partial boundary would be
// a wrong boundary: previewing it as "resolved" would invite saving a site
// that is not the one meant, and POST /sites refuses the same selector with
// the same error.
func (s *Server) resolveCadastre(r *request, sel selector) (resolution, error) {
	rows, err := s.led.ParcelsByID(r.ctx, sel.Jurisdiction, sel.CadastreIDs)
	if err != nil {
		return resolution{}, err
	}
	byID := map[string]ledger.Parcel{}
	for _, p := range rows {
		byID[p.CadastreID] = p
	}
	var missing []string
	var fe []FieldError
	ps := make([]parcel, 0, len(sel.CadastreIDs))
	for i, id := range sel.CadastreIDs {
		row, ok := byID[id]
		if !ok {
			missing = append(missing, id)
			fe = append(fe, FieldError{Field: fmt.Sprintf("location.cadastre_ids[%d]", i), Message: "no parcel with this identifier in " + sel.Jurisdiction})
			continue
		}
		p, err := decodeParcel(row)
		if err != nil {
			return resolution{}, err
		}
		ps = append(ps, p)
	}
	switch {
	case len(ps) == 0:
		return resolution{status: statusNoMatch, missing: missing}, nil
	case len(missing) > 0:
		return resolution{}, &Problem{Code: CodeCadastreIncomplete,
			Detail:      fmt.Sprintf("%d of the %d parcels are not in the %s cadastre; check the identifiers, or list only parcels that exist.", len(missing), len(sel.CadastreIDs), sel.Jurisdiction),
			FieldErrors: fe}
	}
	boundary := parcelUnion(ps)
	pt, area := geo.RepresentativePoint(boundary), geo.Area(boundary)
	return resolution{status: statusResolved, point: &pt, boundary: boundary, area: &area, parcels: ps,
		site:     cadastreSelectorBody{Kind: kindCadastre, Jurisdiction: sel.Jurisdiction, CadastreIDs: sel.CadastreIDs},
		siteGeom: boundary}, nil
}

// parcelUnion is the boundary of a set of parcels; see parcelBoundary.
func parcelUnion(ps []parcel) orb.Geometry {
	gs := make([]orb.Geometry, len(ps))
	for i, p := range ps {
		gs[i] = p.geom
	}
	return geo.ParcelBoundary(gs)
}
