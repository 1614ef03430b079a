package api

import (
	"encoding/json"
	"errors"
	"regexp"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/engine"
	"siteenv/geo"
	"siteenv/ledger"
	"siteenv/tiles"
)

var (
	layerIDRE            = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{0,159}$`)
	sectionKeyRE         = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)
	jurisdictionsWithAUS = []string{"ACT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA", "AUS"}
)

type layerBody struct {
	LayerID       string          `json:"layer_id"`
	SectionKey    string          `json:"section_key"`
	SectionName   string          `json:"section_name"`
	Name          string          `json:"name"`
	Description   *string         `json:"description"`
	SchemaVersion string          `json:"schema_version"`
	FieldSchema   json.RawMessage `json:"field_schema"`
	Units         json.RawMessage `json:"units"`
	RadiusMaxM    float64         `json:"radius_max_m"`
	Access        string          `json:"access"`
	SchemaURL     string          `json:"schema_url"`
	Availability  string          `json:"availability"`
	Coverage      string          `json:"coverage"`
	Jurisdictions []string        `json:"jurisdictions"`
	Sources       json.RawMessage `json:"sources"`
	// PriceCredits is what acquiring the layer's section for one site costs
	// (0: free), so a client sees it before buying.
	PriceCredits int64 `json:"price_credits"`
}

// siteContext is the optional site a catalogue read is evaluated for.
type siteContext struct {
	access   ledger.SiteAccess
	geometry orb.Geometry
}

// layerView renders a layer for this site (nil: no site, and no error:
// only a site's coverage is decoded).
func layerView(y ledger.Layer, site *siteContext) (layerBody, error) {
	b := layerBody{
		LayerID: y.ID, SectionKey: y.SectionKey, SectionName: y.SectionName, Name: y.Name, Description: y.Description,
		SchemaVersion: y.SchemaVersion, FieldSchema: y.FieldSchema, Units: y.Units, RadiusMaxM: y.RadiusMaxM,
		SchemaURL: BasePath + "/layers/" + y.ID + "/schema", Availability: "unavailable", Jurisdictions: y.Jurisdictions,
		Sources: y.Sources, PriceCredits: y.SectionPrice,
	}
	if y.CurrentReleaseID != nil {
		b.Availability = "available"
	}
	switch {
	case site == nil:
		b.Access = "site_required"
		if y.SectionPrice == 0 {
			b.Access = "already_available"
		}
		b.Coverage = string(engine.CoverageUnknown)
		if y.HasCoverage {
			// Without a site, say only whether the layer claims national coverage.
			b.Coverage = string(engine.CoveragePartial)
			for _, j := range y.Jurisdictions {
				if j == "AUS" {
					b.Coverage = string(engine.CoverageComplete)
				}
			}
		}
	default:
		b.Access = "access_required"
		if y.SectionPrice == 0 || site.access.Granted[y.SectionKey] {
			b.Access = "already_available"
		}
		k := geo.CoverageKey{Layer: y.ID}
		if y.CurrentReleaseID != nil {
			k.Release = *y.CurrentReleaseID
		}
		cover, err := geo.DecodeCoverage(k, y.Coverage)
		if err != nil {
			return layerBody{}, err
		}
		b.Coverage = string(engine.CoverageOf(site.geometry, cover))
	}
	return b, nil
}

// loadSite reads the optional site_id a catalogue read is evaluated for.
func (s *Server) loadSite(r *request, id *uuid.UUID) (*siteContext, error) {
	if id == nil {
		return nil, nil
	}
	sa, err := s.led.SiteAccess(r.ctx, r.principal.AccountID, *id)
	if err != nil {
		return nil, err
	}
	g, err := geo.DecodeStored("boundary of site "+id.String(), sa.Geometry)
	if err != nil {
		return nil, err
	}
	return &siteContext{access: sa, geometry: g}, nil
}

type layersBody struct {
	APIVersion string      `json:"api_version"`
	Layers     []layerBody `json:"layers"`
	Page       page        `json:"page"`
}

func (s *Server) listLayers(r *request) error {
	q := r.query("cursor", "limit", "site_id", "search", "section_key", "jurisdiction")
	f := ledger.LayerFilter{
		Search:       q.str("search", 1, 200, nil),
		SectionKey:   q.str("section_key", 1, 100, sectionKeyRE),
		Jurisdiction: q.enum("jurisdiction", jurisdictionsWithAUS...),
		DatasetIDs:   r.principal.DatasetIDs(),
		Limit:        q.limit(listPageDefault, listPageMax),
	}
	siteID := q.uuid("site_id")
	f.WithoutCoverage = siteID == nil // coverage is then only stated or not
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	l := s.list(r, "layers", binding(f.Search, f.SectionKey, f.Jurisdiction, fmtUUID(siteID)))
	if err := l.resume(cur, &f.AfterID); err != nil {
		return err
	}
	if siteID == nil {
		return s.listLayersWithoutSite(r, f, l)
	}
	site, err := s.loadSite(r, siteID)
	if err != nil {
		return err
	}
	rows, err := s.listLayersCached(r, f)
	if err != nil {
		return err
	}
	rows, pg, err := pageOf(l, rows, f.Limit, func(y *ledger.Layer) string { return y.ID })
	if err != nil {
		return err
	}
	body := layersBody{APIVersion: "1", Layers: []layerBody{}, Page: pg}
	for _, y := range rows {
		b, err := layerView(y, site)
		if err != nil {
			return err
		}
		body.Layers = append(body.Layers, b)
	}
	return r.writeJSON(200, body)
}

// layerPage is a GET /layers page without a site, rendered once per
// catalogue version and filter (the key's dataset restriction is part of
// the filter): without a site each layer's object depends on its row
// alone, so the page is the same for every key with that filter until the
// catalogue changes. Only a next cursor (bound to the account) is added per
// request.
type layerPage struct {
	// body is the whole body when !more, else its beginning up to the
	// layers array's closing bracket.
	body   []byte
	more   bool
	lastID string // the page's last layer: the next cursor's position
	etag   string // of the whole body when !more
}

func (s *Server) listLayersWithoutSite(r *request, f ledger.LayerFilter, l list) error {
	version, key := r.principal.Catalogue, "rendered\x00"+layersKey(f)
	var lp layerPage
	if v, ok := s.catalogue.get(version, key); ok {
		lp = v.(layerPage)
	} else {
		// The rows themselves are not cached: only this rendering of
		// them is read again.
		rows, err := s.led.ListLayers(r.ctx, f)
		if err != nil {
			return err
		}
		if lp, err = s.renderLayerPage(rows, f.Limit); err != nil {
			return err
		}
		s.catalogue.put(version, key, lp, len(key)+len(lp.body))
	}
	if !lp.more {
		r.etag = lp.etag
	}
	return r.writeEncoded(200, func() ([]byte, error) {
		if !lp.more {
			return lp.body, nil
		}
		pg, err := l.next(lp.lastID)
		if err != nil {
			return nil, err
		}
		pj, err := marshalNoEscape(pg)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(lp.body)+len(pj)+16)
		return append(append(append(out, lp.body...), `,"page":`...), append(pj, '}')...), nil
	})
}

// renderLayerPage renders rows (up to limit, and one more when there is a
// next page) as writeJSON would write the body.
func (s *Server) renderLayerPage(rows []ledger.Layer, limit int) (layerPage, error) {
	lp := layerPage{body: append(make([]byte, 0, 4096), `{"api_version":"1","layers":[`...)}
	for i, y := range rows {
		if i == limit {
			lp.more, lp.lastID = true, rows[i-1].ID
			break
		}
		if i > 0 {
			lp.body = append(lp.body, ',')
		}
		b, err := layerView(y, nil)
		if err != nil {
			return layerPage{}, err
		}
		j, err := marshalNoEscape(b)
		if err != nil {
			return layerPage{}, err
		}
		lp.body = append(lp.body, j...)
	}
	lp.body = append(lp.body, ']')
	if lp.more {
		return lp, nil
	}
	pj, err := marshalNoEscape(page{})
	if err != nil {
		return layerPage{}, err
	}
	lp.body = append(append(append(lp.body, `,"page":`...), pj...), '}')
	lp.etag = etagOf(lp.body)
	return lp, nil
}

// readLayer loads the path's layer if this key may see it; a layer outside
// the key's dataset restriction is indistinguishable from a missing one.
func (s *Server) readLayer(r *request) (ledger.Layer, *siteContext, error) {
	id := r.params["layer_id"]
	q := r.query("site_id")
	siteID := q.uuid("site_id")
	if !layerIDRE.MatchString(id) {
		q.add("layer_id", "must match ^[a-z0-9][a-z0-9._:-]{0,159}$")
	}
	if err := q.err(); err != nil {
		return ledger.Layer{}, nil, err
	}
	r.resourceType, r.resourceID = "layer", id
	if !r.principal.PermitsDataset(id) {
		return ledger.Layer{}, nil, ledger.ErrNotFound
	}
	y, err := s.led.Layer(r.ctx, id)
	if err != nil {
		return ledger.Layer{}, nil, err
	}
	site, err := s.loadSite(r, siteID)
	return y, site, err
}

type layerResponse struct {
	APIVersion string    `json:"api_version"`
	Layer      layerBody `json:"layer"`
}

func (s *Server) getLayer(r *request) error {
	y, site, err := s.readLayer(r)
	if err != nil {
		return err
	}
	b, err := layerView(y, site)
	if err != nil {
		return err
	}
	return r.writeJSON(200, layerResponse{APIVersion: "1", Layer: b})
}

func (s *Server) getLayerSchema(r *request) error {
	y, _, err := s.readLayer(r)
	if err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(y.FieldSchema, &raw); err != nil {
		return err
	}
	fs, err := tiles.ParseFieldSchema(raw)
	if err != nil {
		return errors.Join(errors.New("api: stored field schema"), err)
	}
	schema := fs.JSONSchema()
	schema["$id"] = BasePath + "/layers/" + y.ID + "/schema"
	schema["title"] = y.Name
	schema["description"] = "Fields of layer " + y.ID + ", schema_version " + y.SchemaVersion + "."
	schema["x-schema-version"] = y.SchemaVersion
	return r.writeJSON(200, schema)
}
