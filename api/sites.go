package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/ledger"
)

type siteBody struct {
	SiteID      string          `json:"site_id"`
	Name        *string         `json:"name"`
	PortfolioID *string         `json:"portfolio_id"`
	CRS         string          `json:"crs"`
	AxisOrder   []string        `json:"axis_order"`
	Geometry    json.RawMessage `json:"geometry"`
	Fingerprint string          `json:"fingerprint"`
	CreatedAt   time.Time       `json:"created_at"`
	AreaM2      float64         `json:"area_m2"`
}

type siteResponse struct {
	APIVersion string   `json:"api_version"`
	Site       siteBody `json:"site"`
}

func siteView(s ledger.Site) siteBody {
	b := siteBody{SiteID: s.ID.String(), Name: s.Name, CRS: "OGC:CRS84", AxisOrder: []string{"longitude", "latitude"},
		Geometry: s.Geometry, Fingerprint: s.Fingerprint, CreatedAt: s.CreatedAt.UTC(), AreaM2: s.AreaM2}
	if s.PortfolioID != nil {
		id := s.PortfolioID.String()
		b.PortfolioID = &id
	}
	return b
}

// logicalSite is what identifies POST /sites under its Idempotency-Key.
type logicalSite struct {
	Site json.RawMessage
	Name *string
	Ref  *ledger.ExternalRef
}

type createSiteRequest struct {
	Site              json.RawMessage     `json:"site"`
	Name              *string             `json:"name"`
	ExternalReference *ledger.ExternalRef `json:"-"`
	RawRef            json.RawMessage     `json:"external_reference"`
}

// boundary resolves a site selector to the canonical geometry it names.
// Saved sites and registered references return the stored site instead.
func (s *Server) boundary(r *request, sel selector, field string) (orb.Geometry, *ledger.Site, error) {
	switch sel.Kind {
	case kindSavedSite:
		site, err := s.led.Site(r.ctx, r.principal.AccountID, sel.SiteID)
		return nil, &site, err
	case kindExternalReference:
		site, err := s.led.SiteByReference(r.ctx, r.principal.AccountID, sel.Namespace, sel.Reference)
		return nil, &site, at(err, atSiteReference, field)
	case kindPoint, kindProjectedPoint:
		return sel.Point, nil, nil
	case kindGeometry:
		return sel.Geometry, nil, nil
	case kindCadastre:
		found, err := s.led.ParcelGeometries(r.ctx, sel.Jurisdiction, sel.CadastreIDs)
		if err != nil {
			return nil, nil, err
		}
		var parts []orb.Geometry
		var fe []FieldError
		for i, id := range sel.CadastreIDs {
			raw, ok := found[id]
			if !ok {
				fe = append(fe, FieldError{Field: fmt.Sprintf("%s.cadastre_ids[%d]", field, i), Message: "no such parcel in " + sel.Jurisdiction})
				continue
			}
			g, err := geo.DecodeStored("parcel "+sel.Jurisdiction+" "+id, raw)
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, g)
		}
		if len(fe) > 0 {
			return nil, nil, &Problem{Code: CodeCadastreIncomplete, Detail: fmt.Sprintf("%d of the %d parcels were not found; check the identifiers and the jurisdiction.", len(fe), len(sel.CadastreIDs)), FieldErrors: fe}
		}
		// The same union as the resolve preview, so the saved site matches it.
		return geo.ParcelBoundary(parts), nil, nil
	}
	return nil, nil, invalid("Unsupported selector kind.", FieldError{Field: field + ".kind", Message: "not accepted here"})
}

func (s *Server) createSite(r *request) error {
	var req createSiteRequest
	if err := decodeBody(string(r.http.Request.Header.ContentType()), r.http.Request.Body(), &req); err != nil {
		return err
	}
	sel, err := decodeSelector(req.Site, "site", false)
	if err != nil {
		return err
	}
	var fe []FieldError
	if req.Name != nil && (len(*req.Name) == 0 || len(*req.Name) > 200) {
		fe = append(fe, FieldError{Field: "name", Message: "must be 1 to 200 characters, or null"})
	}
	if len(req.RawRef) > 0 && string(req.RawRef) != "null" {
		var ref ledger.ExternalRef
		var raw struct {
			Namespace *string `json:"namespace"`
			Reference *string `json:"reference"`
		}
		if err := json.Unmarshal(req.RawRef, &raw); err != nil || raw.Namespace == nil || raw.Reference == nil {
			fe = append(fe, FieldError{Field: "external_reference", Message: "must be an object {namespace, reference}"})
		} else {
			ref = ledger.ExternalRef{Namespace: *raw.Namespace, Reference: *raw.Reference}
			if ref.Namespace == "" || len(ref.Namespace) > 100 {
				fe = append(fe, FieldError{Field: "external_reference.namespace", Message: "must be 1 to 100 characters"})
			}
			if ref.Reference == "" || len(ref.Reference) > 256 {
				fe = append(fe, FieldError{Field: "external_reference.reference", Message: "must be 1 to 256 characters"})
			}
			req.ExternalReference = &ref
		}
	}
	if len(fe) > 0 {
		return invalid("Some fields are invalid.", fe...)
	}
	fp, err := siteFingerprint(r.op.ID, logicalSite{req.Site, req.Name, req.ExternalReference}, req.Site, struct {
		Name *string
		Ref  *ledger.ExternalRef
	}{req.Name, req.ExternalReference})
	if err != nil {
		return err
	}
	// A replay needs no check beyond the route's (a live key with the
	// scopes): a site reveals no dataset, and a site the first request
	// created is found, not created, by a fresh one.
	return s.idempotentAs(r, fp, nil, func() error {
		g, existing, err := s.boundary(r, sel, "site")
		if err != nil {
			return err
		}
		var site ledger.Site
		if existing != nil {
			site = *existing
		} else if site, err = s.newSite(r, g); err != nil {
			return err
		}
		if existing == nil {
			site.Name = req.Name
		}
		if existing == nil && site.AreaM2 > maxSiteAreaM2 {
			return &Problem{Code: CodeSiteIneligible, Detail: fmt.Sprintf("The site covers %.1f ha; new sites are limited to %d ha before buffering.", site.AreaM2/10_000, maxSiteAreaHa),
				FieldErrors: []FieldError{{Field: "site", Message: fmt.Sprintf("larger than %d hectares", maxSiteAreaHa)}}}
		}
		saved, _, err := s.led.SaveSite(r.ctx, site, req.ExternalReference, r.principal.HasScope(ledger.ScopeSitesWrite))
		if err != nil {
			return at(err, atSiteRegistration, "")
		}
		r.resourceType, r.resourceID = "site", saved.ID.String()
		return r.writeJSON(200, siteResponse{APIVersion: "1", Site: siteView(saved)})
	})
}

// newSite describes a new site of the caller's account for canonical
// geometry g. Its stored geometry is the bytes json.Marshal(
// geojson.NewGeometry(g)) writes (geo.AppendGeoJSON, a fifth of the time).
func (s *Server) newSite(r *request, g orb.Geometry) (ledger.Site, error) {
	raw, err := geo.AppendGeoJSON(nil, g)
	if err != nil {
		return ledger.Site{}, err
	}
	b := g.Bound()
	return ledger.Site{AccountID: r.principal.AccountID, Geometry: raw, Fingerprint: geo.Fingerprint(g), AreaM2: geo.Area(g),
		Bounds: [4]float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}}, nil
}

// pathUUID reads a uuid path parameter; a malformed one names the parameter.
func (r *request) pathUUID(name string) (uuid.UUID, error) {
	id, err := parseUUID(r.params[name])
	if err != nil {
		return uuid.Nil, invalid("The path has a malformed identifier.", FieldError{Field: name, Message: "must be a UUID"})
	}
	return id, nil
}

func (s *Server) getSite(r *request) error {
	id, err := r.pathUUID("site_id")
	if err != nil {
		return err
	}
	if err := r.query().err(); err != nil {
		return err
	}
	r.resourceType, r.resourceID = "site", id.String()
	site, err := s.led.Site(r.ctx, r.principal.AccountID, id)
	if err != nil {
		return err
	}
	return r.writeJSON(200, siteResponse{APIVersion: "1", Site: siteView(site)})
}

type siteSummary struct {
	SiteID      string     `json:"site_id"`
	Name        *string    `json:"name"`
	PortfolioID *string    `json:"portfolio_id"`
	Fingerprint string     `json:"fingerprint"`
	CreatedAt   time.Time  `json:"created_at"`
	AreaM2      float64    `json:"area_m2"`
	BBox        [4]float64 `json:"bbox"`
}

type sitesBody struct {
	APIVersion string        `json:"api_version"`
	Sites      []siteSummary `json:"sites"`
	Page       page          `json:"page"`
}

func (s *Server) listSites(r *request) error {
	q := r.query("cursor", "limit", "search", "portfolio_id")
	f := ledger.SiteFilter{Search: q.str("search", 1, 200, nil), PortfolioID: q.uuid("portfolio_id"), Limit: q.limit(listPageDefault, listPageMax)}
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	l := s.list(r, "sites", binding(f.Search, fmtUUID(f.PortfolioID)))
	var pos timeIDPosition
	if err := l.resume(cur, &pos); err != nil {
		return err
	}
	f.AfterTime, f.AfterID = pos.after()
	if f.PortfolioID != nil {
		if _, err := s.led.Portfolio(r.ctx, r.principal.AccountID, *f.PortfolioID); err != nil {
			return err
		}
	}
	rows, err := s.led.ListSites(r.ctx, r.principal.AccountID, f)
	if err != nil {
		return err
	}
	rows, pg, err := pageOf(l, rows, f.Limit, func(st *ledger.Site) timeIDPosition { return timeIDPosition{T: st.CreatedAt, ID: st.ID} })
	if err != nil {
		return err
	}
	body := sitesBody{APIVersion: "1", Sites: []siteSummary{}, Page: pg}
	for _, st := range rows {
		v := siteView(st)
		body.Sites = append(body.Sites, siteSummary{SiteID: v.SiteID, Name: v.Name, PortfolioID: v.PortfolioID,
			Fingerprint: v.Fingerprint, CreatedAt: v.CreatedAt, AreaM2: v.AreaM2, BBox: st.Bounds})
	}
	return r.writeJSON(200, body)
}

func (s *Server) updateSite(r *request) error {
	id, err := r.pathUUID("site_id")
	if err != nil {
		return err
	}
	// RawMessage keeps a JSON null as "null", so presence and null differ.
	var body struct {
		Name        json.RawMessage `json:"name"`
		PortfolioID json.RawMessage `json:"portfolio_id"`
		Geometry    json.RawMessage `json:"geometry"`
		Site        json.RawMessage `json:"site"`
	}
	if err := decodeBody(string(r.http.Request.Header.ContentType()), r.http.Request.Body(), &body); err != nil {
		return err
	}
	r.resourceType, r.resourceID = "site", id.String()
	if body.Geometry != nil {
		return boundaryImmutable("geometry")
	}
	if body.Site != nil {
		return boundaryImmutable("site")
	}
	var u ledger.SiteUpdate
	var fe []FieldError
	if v := body.Name; v != nil {
		u.SetName = true
		if string(v) != "null" {
			var name string
			if json.Unmarshal(v, &name) != nil || name == "" || len(name) > 200 {
				fe = append(fe, FieldError{Field: "name", Message: "must be 1 to 200 characters, or null"})
			}
			u.Name = &name
		}
	}
	if v := body.PortfolioID; v != nil {
		u.SetPortfolio = true
		if string(v) != "null" {
			var sid string
			pid, err := uuid.Nil, json.Unmarshal(v, &sid)
			if err == nil {
				pid, err = parseUUID(sid)
			}
			if err != nil {
				fe = append(fe, FieldError{Field: "portfolio_id", Message: "must be a UUID or null"})
			}
			u.PortfolioID = &pid
		}
	}
	if !u.SetName && !u.SetPortfolio {
		fe = append(fe, FieldError{Field: "body", Message: "give name and/or portfolio_id"})
	}
	if len(fe) > 0 {
		return invalid("Some fields are invalid.", fe...)
	}
	site, err := s.led.UpdateSite(r.ctx, r.principal.AccountID, id, u)
	if err != nil {
		return err
	}
	return r.writeJSON(200, siteResponse{APIVersion: "1", Site: siteView(site)})
}

func boundaryImmutable(field string) error {
	return &Problem{Code: CodePaidSiteImmutable, Detail: "A site's boundary never changes; save a changed boundary as a new site with POST /sites (it does not inherit paid access).",
		FieldErrors: []FieldError{{Field: field, Message: "the boundary cannot be changed"}}}
}

type archivedBody struct {
	APIVersion string `json:"api_version"`
	SiteID     string `json:"site_id"`
	Archived   bool   `json:"archived"`
}

func (s *Server) archiveSite(r *request) error {
	id, err := r.pathUUID("site_id")
	if err != nil {
		return err
	}
	if err := r.query().err(); err != nil {
		return err
	}
	r.resourceType, r.resourceID = "site", id.String()
	if err := s.led.ArchiveSite(r.ctx, r.principal.AccountID, id); err != nil {
		return err
	}
	return r.writeJSON(200, archivedBody{APIVersion: "1", SiteID: id.String(), Archived: true})
}

type portfolioBody struct {
	PortfolioID string    `json:"portfolio_id"`
	Name        string    `json:"name"`
	CreatedAt   time.Time `json:"created_at"`
	SiteCount   int64     `json:"site_count"`
}

type portfoliosBody struct {
	APIVersion string          `json:"api_version"`
	Portfolios []portfolioBody `json:"portfolios"`
	Page       page            `json:"page"`
}

func (s *Server) listPortfolios(r *request) error {
	q := r.query("cursor", "limit")
	limit := q.limit(listPageDefault, listPageMax)
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	l := s.list(r, "portfolios", "")
	var pos timeIDPosition
	if err := l.resume(cur, &pos); err != nil {
		return err
	}
	after, afterID := pos.after()
	rows, err := s.led.ListPortfolios(r.ctx, r.principal.AccountID, after, afterID, limit)
	if err != nil {
		return err
	}
	rows, pg, err := pageOf(l, rows, limit, func(p *ledger.PortfolioSummary) timeIDPosition { return timeIDPosition{T: p.CreatedAt, ID: p.ID} })
	if err != nil {
		return err
	}
	body := portfoliosBody{APIVersion: "1", Portfolios: []portfolioBody{}, Page: pg}
	for _, p := range rows {
		body.Portfolios = append(body.Portfolios, portfolioBody{PortfolioID: p.ID.String(), Name: p.Name, CreatedAt: p.CreatedAt.UTC(), SiteCount: p.SiteCount})
	}
	return r.writeJSON(200, body)
}
