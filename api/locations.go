package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/planar"

	"siteenv/engine/geo"
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
	limit := q.limit(10, 10)
	if err := q.err(); err != nil {
		return err
	}
	body := searchBody{APIVersion: "1", Results: []suggestion{}}
	switch kind {
	case "address":
		ms, more, err := s.led.SearchAddresses(r.c, ledger.AddressQuery{Text: text, Jurisdiction: jurisdiction, Postcode: postcode, Limit: limit})
		if err != nil {
			return err
		}
		for i, m := range ms {
			body.Results = append(body.Results, addressSuggestion(i+1, m.Address))
		}
		body.MoreResultsPossible = more
	case "parcel":
		ms, more, err := s.led.SearchParcels(r.c, ledger.ParcelQuery{Text: text, Jurisdiction: jurisdiction, Limit: limit})
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
}

func decodeParcel(p ledger.Parcel) (parcel, error) {
	g, err := geojson.UnmarshalGeometry(p.Geometry)
	if err != nil {
		return parcel{}, fmt.Errorf("api: parcel %s %s: %w", p.Jurisdiction, p.CadastreID, err)
	}
	switch g.Geometry().(type) {
	case orb.Polygon, orb.MultiPolygon:
	default:
		return parcel{}, fmt.Errorf("api: parcel %s %s: geometry is a %s", p.Jurisdiction, p.CadastreID, g.Geometry().GeoJSONType())
	}
	return parcel{Parcel: p, geom: geo.Canonical(g.Geometry())}, nil
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
		Point: newPointJSON(representativePoint(p.geom)), Jurisdiction: &j, Postcode: p.Postcode, Source: parcelSource}
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
	return json.Marshal(geojson.NewGeometry(g))
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
	if err := decodeBody(string(r.ctx.Request.Header.ContentType()), r.ctx.Request.Body(), &req); err != nil {
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
		id, err := s.led.ActiveSiteWithFingerprint(r.c, r.principal.AccountID, geo.Fingerprint(res.siteGeom))
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
		g := geo.Canonical(sel.Geometry)
		raw, err := geometryJSON(g)
		if err != nil {
			return resolution{}, err
		}
		pt, area := representativePoint(g), geo.Area(g)
		return resolution{status: statusResolved, point: &pt, boundary: g, area: &area,
			site: geometrySelectorBody{Kind: kindGeometry, Geometry: raw, CRS: "OGC:CRS84"}, siteGeom: g}, nil
	}
	return resolution{}, fmt.Errorf("api: resolve: unexpected selector kind %q", sel.Kind)
}

// resolveAddress: the address point, and the parcel whose polygon contains
// it (or, failing that, the parcel the gazetteer links to the address). An
// unknown address identifier is no_match.
func (s *Server) resolveAddress(r *request, id string) (resolution, error) {
	a, err := s.led.AddressByID(r.c, id)
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
		linked, err := s.led.ParcelsOfAddress(r.c, a.Label)
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
		if covered, err = s.led.GazetteerNear(r.c, pt[0], pt[1], coverageDeg); err != nil {
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
	rows, err := s.led.ParcelsAt(r.c, pt[0], pt[1])
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
		raw, _ := geojson.UnmarshalGeometry(row.Geometry)
		if contains(raw.Geometry(), pt) {
			out = append(out, p)
		}
	}
	return out, nil
}

func contains(g orb.Geometry, pt orb.Point) bool {
	switch g := g.(type) {
	case orb.Polygon:
		return planar.PolygonContains(g, pt)
	case orb.MultiPolygon:
		return planar.MultiPolygonContains(g, pt)
	}
	return false
}

// resolveSite: a saved site or a registered external reference previews
// the stored boundary. Another account's, an archived or a missing site all
// give no_match: a preview never tells them apart.
func (s *Server) resolveSite(r *request, sel selector) (resolution, error) {
	var site ledger.Site
	var err error
	var selBody any
	if sel.Kind == kindSavedSite {
		site, err = s.led.Site(r.c, r.principal.AccountID, sel.SiteID)
		selBody = savedSiteSelectorBody{Kind: kindSavedSite, SiteID: sel.SiteID.String()}
	} else {
		site, err = s.led.SiteByReference(r.c, r.principal.AccountID, sel.Namespace, sel.Reference)
		selBody = externalReferenceSelectorBody{Kind: kindExternalReference, Namespace: sel.Namespace, Reference: sel.Reference}
	}
	if errors.Is(err, ledger.ErrNotFound) {
		return resolution{status: statusNoMatch}, nil
	}
	if err != nil {
		return resolution{}, err
	}
	g, err := geojson.UnmarshalGeometry(site.Geometry)
	if err != nil {
		return resolution{}, fmt.Errorf("api: site %s geometry: %w", site.ID, err)
	}
	r.resourceType, r.resourceID = "site", site.ID.String()
	pt, area, id := representativePoint(g.Geometry()), site.AreaM2, site.ID
	res := resolution{status: statusResolved, point: &pt, site: selBody, area: &area, existing: &id}
	switch g.Geometry().(type) {
	case orb.Polygon, orb.MultiPolygon:
		res.boundary = g.Geometry()
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
	rows, err := s.led.ParcelsByID(r.c, sel.Jurisdiction, sel.CadastreIDs)
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
	pt, area := representativePoint(boundary), geo.Area(boundary)
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
	return parcelBoundary(gs)
}

// parcelBoundary is the boundary of a set of parcel geometries (Polygon or
// MultiPolygon, CRS84): one canonical Polygon or MultiPolygon with the
// edges neighbouring parcels share dissolved (see dissolve), so that two
// adjacent lots make one valid polygon rather than a MultiPolygon whose
// members overlap along their common edge (which geo.Validate refuses).
// When the parcels do not fit the model of a cadastral fabric (they
// overlap, or neighbours do not share vertices), it is the canonical
// MultiPolygon of the parcels as they are. POST /sites should use the same
// function for cadastre selectors, so that a preview and the saved site
// agree (and existing_site_id finds it).
func parcelBoundary(gs []orb.Geometry) orb.Geometry {
	var polys []orb.Polygon
	for _, g := range gs {
		switch g := g.(type) {
		case orb.Polygon:
			polys = append(polys, g)
		case orb.MultiPolygon:
			polys = append(polys, g...)
		}
	}
	if g, ok := dissolve(polys); ok {
		return g
	}
	return geo.Canonical(orb.MultiPolygon(polys))
}

// Dissolve limits: vertices considered, and the distance (degrees, about
// 2 mm) within which a vertex of one parcel lies on another's edge.
const (
	maxDissolveVertices = 50_000
	onEdgeDeg           = 2e-8
)

type edge struct{ a, b orb.Point }

// dissolve returns the union of polygons that may touch but do not overlap,
// as canonical geometry: every ring is split at the vertices of other rings
// lying on it, edges present in both directions (shared by two polygons)
// cancel, and the remaining edges are chained into rings, turning as far
// left as possible at each vertex and splitting rings where they pass a
// vertex twice, so that rings meeting at a point stay separate. It reports false when the result is not a valid polygonal
// geometry of the same area as the input (overlaps, slivers, too large).
func dissolve(polys []orb.Polygon) (orb.Geometry, bool) {
	if len(polys) == 0 {
		return nil, false
	}
	var inputArea float64
	var edges []edge
	var verts []orb.Point
	for _, p := range polys {
		inputArea += geo.Area(p)
		cp, ok := geo.Canonical(p).(orb.Polygon)
		if !ok {
			return nil, false
		}
		for _, ring := range cp {
			for i := 0; i+1 < len(ring); i++ {
				if ring[i] != ring[i+1] {
					edges = append(edges, edge{ring[i], ring[i+1]})
				}
			}
			verts = append(verts, ring...)
		}
	}
	if len(verts) > maxDissolveVertices {
		return nil, false
	}
	sort.Slice(verts, func(i, j int) bool { return verts[i][0] < verts[j][0] })

	// Node: split each edge at the vertices lying on it.
	var noded []edge
	for _, e := range edges {
		minX, maxX := math.Min(e.a[0], e.b[0])-onEdgeDeg, math.Max(e.a[0], e.b[0])+onEdgeDeg
		minY, maxY := math.Min(e.a[1], e.b[1])-onEdgeDeg, math.Max(e.a[1], e.b[1])+onEdgeDeg
		dx, dy := e.b[0]-e.a[0], e.b[1]-e.a[1]
		l2 := dx*dx + dy*dy
		type cut struct {
			t float64
			p orb.Point
		}
		var cuts []cut
		for i := sort.Search(len(verts), func(i int) bool { return verts[i][0] >= minX }); i < len(verts) && verts[i][0] <= maxX; i++ {
			v := verts[i]
			if v[1] < minY || v[1] > maxY || v == e.a || v == e.b {
				continue
			}
			t := ((v[0]-e.a[0])*dx + (v[1]-e.a[1])*dy) / l2
			if t <= 0 || t >= 1 || math.Abs((v[0]-e.a[0])*dy-(v[1]-e.a[1])*dx)/math.Sqrt(l2) > onEdgeDeg {
				continue
			}
			cuts = append(cuts, cut{t, v})
		}
		sort.Slice(cuts, func(i, j int) bool { return cuts[i].t < cuts[j].t })
		from := e.a
		for _, c := range cuts {
			if c.p != from {
				noded = append(noded, edge{from, c.p})
				from = c.p
			}
		}
		noded = append(noded, edge{from, e.b})
	}

	// Cancel edges shared by two polygons (present in both directions).
	count := map[edge]int{}
	for _, e := range noded {
		if rev := (edge{e.b, e.a}); count[rev] > 0 {
			count[rev]--
		} else {
			count[e]++
		}
	}
	out := map[orb.Point][]orb.Point{}
	left := 0
	for e, n := range count {
		for range n {
			out[e.a] = append(out[e.a], e.b)
			left++
		}
	}
	// Deterministic choice among equal turns.
	for _, ends := range out {
		sort.Slice(ends, func(i, j int) bool { return less(ends[i], ends[j]) })
	}

	// Chain into rings.
	var rings []orb.Ring
	for left > 0 {
		var start orb.Point
		found := false
		for p, ends := range out {
			if len(ends) > 0 && (!found || less(p, start)) {
				start, found = p, true
			}
		}
		ring := orb.Ring{start}
		prev, cur := start, start
		for steps := 0; ; steps++ {
			ends := out[cur]
			if len(ends) == 0 || steps > len(noded) {
				return nil, false
			}
			k := 0
			if cur != start || len(ring) > 1 {
				k = leftmost(prev, cur, ends)
			}
			next := ends[k]
			out[cur] = append(ends[:k:k], ends[k+1:]...)
			left--
			ring = append(ring, next)
			prev, cur = cur, next
			if cur == start {
				break
			}
		}
		for _, r := range splitRing(ring) {
			rings = append(rings, dropStraightVertices(r))
		}
	}

	// Exteriors are counter-clockwise, holes clockwise; each hole goes in the
	// smallest exterior containing it.
	var exteriors []orb.Polygon
	var holes []orb.Ring
	for _, ring := range rings {
		switch a := signedArea(ring); {
		case a > 0:
			exteriors = append(exteriors, orb.Polygon{ring})
		case a < 0:
			holes = append(holes, ring)
		default:
			return nil, false
		}
	}
	for _, h := range holes {
		probe := orb.Point{(h[0][0] + h[1][0]) / 2, (h[0][1] + h[1][1]) / 2}
		best, bestArea := -1, math.Inf(1)
		for i, ext := range exteriors {
			if a := signedArea(ext[0]); a < bestArea && planar.RingContains(ext[0], probe) {
				best, bestArea = i, a
			}
		}
		if best < 0 {
			return nil, false
		}
		exteriors[best] = append(exteriors[best], h)
	}
	g := geo.Canonical(orb.MultiPolygon(exteriors))
	if geo.Validate(g, 0) != nil || math.Abs(geo.Area(g)-inputArea) > 1e-6*inputArea+0.01 {
		return nil, false
	}
	return g, true
}

// splitRing splits a closed ring that passes through a vertex more than
// once (where the union pinches) into rings that do not, dropping
// degenerate pieces.
func splitRing(r orb.Ring) []orb.Ring {
	pts := r[:len(r)-1]
	seen := map[orb.Point]int{}
	for i, p := range pts {
		j, ok := seen[p]
		if !ok {
			seen[p] = i
			continue
		}
		inner := append(orb.Ring{}, pts[j:i+1]...)
		outer := append(append(orb.Ring{}, pts[:j]...), pts[i:]...)
		outer = append(outer, outer[0])
		var out []orb.Ring
		for _, part := range []orb.Ring{inner, outer} {
			if len(part) >= 4 {
				out = append(out, splitRing(part)...)
			}
		}
		return out
	}
	return []orb.Ring{r}
}

// dropStraightVertices removes the vertices of a closed ring where it goes
// exactly straight on (left where a shared edge was dissolved): the same
// point set, fewer vertices.
func dropStraightVertices(r orb.Ring) orb.Ring {
	pts := r[:len(r)-1]
	for changed := true; changed && len(pts) > 3; {
		changed = false
		for i := 0; i < len(pts) && len(pts) > 3; i++ {
			a, b, c := pts[(i+len(pts)-1)%len(pts)], pts[i], pts[(i+1)%len(pts)]
			ux, uy, vx, vy := b[0]-a[0], b[1]-a[1], c[0]-b[0], c[1]-b[1]
			if ux*vy-uy*vx == 0 && ux*vx+uy*vy > 0 {
				pts = append(pts[:i:i], pts[i+1:]...)
				changed = true
			}
		}
	}
	return append(pts, pts[0])
}

// leftmost picks, among the ends of edges leaving cur, the one turning
// furthest left from the direction prev -> cur.
func leftmost(prev, cur orb.Point, ends []orb.Point) int {
	dx, dy := cur[0]-prev[0], cur[1]-prev[1]
	best, bestAngle := 0, math.Inf(-1)
	for i, e := range ends {
		ex, ey := e[0]-cur[0], e[1]-cur[1]
		a := math.Atan2(dx*ey-dy*ex, dx*ex+dy*ey)
		if a == -math.Pi { // a U-turn is the last resort, not the sharpest left
			a = math.Pi
		}
		if a > bestAngle {
			best, bestAngle = i, a
		}
	}
	return best
}

func less(a, b orb.Point) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

// signedArea is the planar shoelace area of a closed ring: positive when
// counter-clockwise.
func signedArea(r orb.Ring) float64 {
	var s float64
	for i := 0; i+1 < len(r); i++ {
		s += r[i][0]*r[i+1][1] - r[i+1][0]*r[i][1]
	}
	return s / 2
}

// representativePoint is a point of g to show it by: a point or the middle
// vertex of a line; for polygons a point inside, the centroid when it is
// inside, else the middle of the widest interior span of a horizontal line
// through it (the largest polygon of a MultiPolygon).
func representativePoint(g orb.Geometry) orb.Point {
	switch g := g.(type) {
	case orb.Point:
		return g
	case orb.MultiPoint:
		if len(g) > 0 {
			return g[0]
		}
	case orb.LineString:
		if len(g) > 0 {
			return g[len(g)/2]
		}
	case orb.MultiLineString:
		for _, l := range g {
			if len(l) > 0 {
				return l[len(l)/2]
			}
		}
	case orb.Polygon:
		return polygonPoint(g)
	case orb.MultiPolygon:
		best, bestArea := -1, -1.0
		for i, p := range g {
			if a := planar.Area(p); a > bestArea {
				best, bestArea = i, a
			}
		}
		if best >= 0 {
			return polygonPoint(g[best])
		}
	}
	if g == nil {
		return orb.Point{}
	}
	return g.Bound().Center()
}

func polygonPoint(p orb.Polygon) orb.Point {
	if len(p) == 0 || len(p[0]) == 0 {
		return orb.Point{}
	}
	c, _ := planar.CentroidArea(p)
	if planar.PolygonContains(p, c) {
		return roundPoint(c)
	}
	for _, y := range []float64{c[1], p.Bound().Center()[1]} {
		var xs []float64
		for _, ring := range p {
			for i := 0; i+1 < len(ring); i++ {
				a, b := ring[i], ring[i+1]
				if (a[1] > y) != (b[1] > y) {
					xs = append(xs, a[0]+(y-a[1])*(b[0]-a[0])/(b[1]-a[1]))
				}
			}
		}
		sort.Float64s(xs)
		best, width := -1, 0.0
		for i := 0; i+1 < len(xs); i += 2 {
			if w := xs[i+1] - xs[i]; w > width {
				best, width = i, w
			}
		}
		if best >= 0 {
			return roundPoint(orb.Point{(xs[best] + xs[best+1]) / 2, y})
		}
	}
	return p[0][0]
}

// roundPoint rounds to the canonical grid (geo.CanonicalDecimals).
func roundPoint(p orb.Point) orb.Point {
	const k = 1e8
	return orb.Point{math.Round(p[0]*k) / k, math.Round(p[1]*k) / k}
}
