package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/engine"
	"siteenv/geo"
	"siteenv/ledger"
	"siteenv/report"
	"siteenv/report/content"
	"siteenv/tiles"
)

// Map images: GET /sites/{site_id}/sections/{section_key}/map-image.
//
// The map shows every layer of the section, searched through the engine
// exactly as a query would be, each to its own radius_max_m capped at
// report.MaxRenderRadiusM. The image is a pure function of the site, the
// section's current releases, the parcels around the site, the renderer
// version and the UTC date printed on it; the ETag hashes exactly those, so
// it is strong, costs no render to check, and changes with a new release.

const (
	// mapParcelMarginM is how far around the site parcels are drawn.
	mapParcelMarginM = 300
	// mapMaxParcels bounds the parcel context read for one map.
	mapMaxParcels = 2000
	// mapLayersPage is the page size reading a section's layers (all are
	// drawn; the legend lists as many as fit and counts the rest).
	mapLayersPage = 100
	// Per-layer engine limits for a map: the feature limit of queries, and
	// byte limits that allow the large polygons a map exists to draw.
	mapMaxBytes        = 128 << 20
	mapMaxFeatureBytes = 64 << 20
)

// mapInput is what a map is drawn from, gathered from the ledger.
type mapInput struct {
	site    ledger.Site
	geom    orb.Geometry // the site's, decoded
	section string       // section name
	layers  []mapLayer
	parcels []ledger.Parcel
}

type mapLayer struct {
	layer    ledger.Layer
	release  *ledger.Release
	radiusM  float64
	coverage orb.Geometry
}

func (s *Server) getMapImage(r *request) error {
	id, err := r.pathUUID("site_id")
	if err != nil {
		return err
	}
	key := r.params["section_key"]
	if !sectionKeyRE.MatchString(key) {
		return invalid("The section key is malformed.", FieldError{Field: "section_key", Message: "must match ^[a-z0-9][a-z0-9_-]*$, 1 to 100 characters"})
	}
	if err := r.query().err(); err != nil {
		return err
	}
	if s.engine == nil {
		return newProblem(CodeFeatureDisabled, "Map images are not available on this server.")
	}
	r.resourceType, r.resourceID = "site", id.String()
	in, err := s.gatherMap(r, id, key)
	if err != nil {
		return err
	}
	date := s.clock.Now().UTC().Truncate(24 * time.Hour)
	etag := mapETag(in, date, s.cfg.Basemap)
	h := &r.http.Response.Header
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, max-age=300")
	if etagMatches(string(r.http.Request.Header.Peek("If-None-Match")), etag) {
		r.http.SetStatusCode(304)
		return nil
	}
	m, err := s.renderInput(r, in, date)
	if err != nil {
		return err
	}
	if err := s.mapSlots.acquire(r.ctx); err != nil {
		return err
	}
	img, err := report.RenderMap(m)
	s.mapSlots.release()
	if err != nil {
		return fmt.Errorf("api: render map of site %s section %s: %w", id, key, err)
	}
	if len(img) > mapMaxBytesOut {
		// Not reachable with a 1280 x 900 JPEG; guarded so the contract's
		// limit can never be broken silently.
		return fmt.Errorf("api: map of site %s section %s is %d bytes, over the 12 MiB limit", id, key, len(img))
	}
	name := in.site.ID.String()
	if in.site.Name != nil && *in.site.Name != "" {
		name = *in.site.Name
	}
	h.Set("Content-Disposition", `inline; filename="`+safeFilename(name, key)+`"`)
	r.http.SetStatusCode(200)
	r.http.SetContentType("image/jpeg")
	r.http.SetBody(img)
	return nil
}

// mapMaxBytesOut is the contract's map image limit (12 MiB).
const mapMaxBytesOut = 12 << 20

// gatherMap authorises the map and reads its inputs: the site (active,
// the account's), the section's layers (every one permitted to the key,
// the section unlocked) and their current releases, and nearby parcels.
func (s *Server) gatherMap(r *request, id uuid.UUID, key string) (mapInput, error) {
	sa, err := s.led.SiteAccess(r.ctx, r.principal.AccountID, id)
	if err != nil {
		return mapInput{}, err
	}
	site, err := s.led.Site(r.ctx, r.principal.AccountID, id)
	if err != nil {
		return mapInput{}, err
	}
	var layers []ledger.Layer
	for after := ""; ; {
		page, err := s.led.ListLayers(r.ctx, ledger.LayerFilter{SectionKey: key, AfterID: after, Limit: mapLayersPage})
		if err != nil {
			return mapInput{}, err
		}
		more := len(page) > mapLayersPage
		if more {
			page = page[:mapLayersPage]
		}
		layers = append(layers, page...)
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	if len(layers) == 0 {
		return mapInput{}, &Problem{Code: CodeNotFound, Detail: "No section " + key + " exists.",
			FieldErrors: []FieldError{{Field: "section_key", Message: "no such section"}}}
	}
	for _, y := range layers {
		if !r.principal.PermitsDataset(y.ID) {
			// Never a map with layers silently missing.
			return mapInput{}, &Problem{Code: CodeSourceRightsRestricted,
				Detail:      "This key's dataset restriction does not permit every dataset the " + key + " map draws; use a key without that restriction.",
				FieldErrors: []FieldError{{Field: "section_key", Message: "the key may not see every dataset of this section"}}}
		}
	}
	if layers[0].SectionPrice > 0 && !sa.Granted[key] {
		return mapInput{}, &Problem{Code: CodeAccessRequired,
			Detail:      fmt.Sprintf("Section %s must be acquired for this site before its map can be downloaded (POST /access/acquisitions with section_keys [%q]).", key, key),
			FieldErrors: []FieldError{{Field: "section_key", Message: "section " + key + " not acquired for this site"}}}
	}
	g, err := geo.DecodeStored("boundary of site "+site.ID.String(), site.Geometry)
	if err != nil {
		return mapInput{}, err
	}
	in := mapInput{site: site, geom: g, section: layers[0].SectionName}
	if in.section == "" {
		in.section = key
	}
	for _, y := range layers {
		ml := mapLayer{layer: y, radiusM: math.Min(y.RadiusMaxM, report.MaxRenderRadiusM)}
		if y.CurrentReleaseID != nil {
			rel, err := s.led.Release(r.ctx, y.ID, *y.CurrentReleaseID)
			if err != nil {
				return mapInput{}, err
			}
			ml.release = &rel
			if ml.coverage, err = geo.DecodeCoverage(geo.CoverageKey{Layer: y.ID, Release: rel.ReleaseID}, rel.Coverage); err != nil {
				return mapInput{}, err
			}
		}
		in.layers = append(in.layers, ml)
	}
	// Parcels around the site: its bounds widened by a margin.
	sb := in.geom.Bound()
	b := [4]float64{sb.Min[0], sb.Min[1], sb.Max[0], sb.Max[1]}
	dLat := mapParcelMarginM / 111_320.0
	dLon := dLat / math.Max(math.Cos((b[1]+b[3])/2*math.Pi/180), 0.1)
	in.parcels, err = s.led.ParcelsNear(r.ctx, [4]float64{b[0] - dLon, b[1] - dLat, b[2] + dLon, b[3] + dLat}, mapMaxParcels)
	if err != nil {
		return mapInput{}, err
	}
	return in, nil
}

// mapETag is a strong validator over everything the image depends on.
func mapETag(in mapInput, date time.Time, bm report.Basemap) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	type layerKey struct {
		ID, Name, Release string
		RadiusM           float64
	}
	v := struct {
		Renderer, Date, Fingerprint, Section, Basemap string
		Name                                          *string
		Layers                                        []layerKey
		Parcels                                       []string
	}{Renderer: report.MapVersion, Date: date.Format(time.DateOnly), Fingerprint: in.site.Fingerprint, Section: in.section, Name: in.site.Name}
	if bm != nil {
		v.Basemap = bm.Version()
	}
	for _, l := range in.layers {
		k := layerKey{ID: l.layer.ID, Name: l.layer.Name, RadiusM: l.radiusM}
		if l.release != nil {
			k.Release = l.release.ReleaseID
		}
		v.Layers = append(v.Layers, k)
	}
	for _, p := range in.parcels {
		ph := sha256.Sum256(p.Geometry)
		v.Parcels = append(v.Parcels, p.Jurisdiction+"/"+p.CadastreID+"/"+base64.RawURLEncoding.EncodeToString(ph[:12]))
	}
	_ = enc.Encode(v) // a hash.Hash never fails to write
	return `"` + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18]) + `"`
}

// etagMatches applies If-None-Match (RFC 9110 13.1.2: weak comparison).
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// renderInput runs the section's layers through the engine and builds the
// renderer's input. Layers are grouped by radius so each is searched to
// its own distance with the same exact membership as a query.
func (s *Server) renderInput(r *request, in mapInput, date time.Time) (report.Map, error) {
	title := in.site.ID.String()
	if in.site.Name != nil && *in.site.Name != "" {
		title = *in.site.Name
	}
	m := report.Map{Title: title, Section: in.section, Date: date, Site: in.geom, Basemap: s.cfg.Basemap}
	results := map[string]engine.LayerResult{}
	var radii []float64
	for _, l := range in.layers {
		if l.release != nil && !slices.Contains(radii, l.radiusM) {
			radii = append(radii, l.radiusM)
		}
	}
	for _, radius := range radii {
		req := engine.Request{Site: m.Site, RadiusM: radius}
		for _, l := range in.layers {
			if l.release == nil || l.radiusM != radius {
				continue
			}
			req.Layers = append(req.Layers, engine.LayerRequest{LayerID: l.layer.ID, ReleaseID: l.release.ReleaseID, Coverage: l.coverage,
				IncludeGeometry: true, MaxBytes: mapMaxBytes, MaxFeatureBytes: mapMaxFeatureBytes})
		}
		res, err := s.engine.Query(r.ctx, req)
		if err != nil {
			return report.Map{}, fmt.Errorf("api: map query: %w", err)
		}
		for _, lr := range res {
			results[lr.LayerID] = lr
		}
	}
	for _, l := range in.layers {
		ml := report.Layer{ID: l.layer.ID, Name: l.layer.Name, RadiusM: l.layer.RadiusMaxM, Coverage: "unknown"}
		if l.release == nil {
			ml.Outcome = report.NoRelease
			m.Layers = append(m.Layers, ml)
			continue
		}
		ml.Attribution = attributions(l.release.Sources)
		lr := results[l.layer.ID]
		ml.Coverage = lr.Coverage
		switch {
		case lr.Reason == engine.ReasonSourceUnavailable:
			// A store fault is transient: answering with a map missing a
			// layer would be cached under an ETag the full map should have.
			s.log.WarnContext(r.ctx, "map layer source unavailable", "layer", l.layer.ID, "release", l.release.ReleaseID)
			return report.Map{}, &Problem{Code: CodeSourceUnavailable, RetryAfter: 5,
				Detail: "The data of layer " + l.layer.ID + " is temporarily unavailable; retry shortly."}
		case lr.Reason == engine.ReasonOutsideCoverage:
			ml.Outcome = report.OutsideCoverage
		case lr.Status == engine.StatusUnavailable:
			ml.Outcome = report.TooMany
		default:
			ml.Features = make([]orb.Geometry, len(lr.Features))
			for i := range lr.Features {
				ml.Features[i] = lr.Features[i].Geometry
			}
			// Classed polygons are filled by class, as on the report's maps.
			content.MapClasses(&ml, l.release.FieldSchema, l.release.Units, func(i int) map[string]any { return lr.Features[i].Properties() })
		}
		m.Layers = append(m.Layers, ml)
	}
	for _, p := range in.parcels {
		g, err := geo.DecodeStored("parcel "+p.Jurisdiction+" "+p.CadastreID, p.Geometry)
		if err != nil {
			return report.Map{}, err
		}
		m.Parcels = append(m.Parcels, g)
	}
	return m, nil
}

// attributions renders a release's sources for the map's credit line.
func attributions(raw json.RawMessage) []string {
	var sources []tiles.Source
	if err := json.Unmarshal(raw, &sources); err != nil {
		return nil
	}
	var out []string
	for _, src := range sources {
		a := src.Attribution
		if a == "" {
			a = src.Provider
		}
		if src.Licence != "" {
			a += " (" + src.Licence + ")"
		}
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// safeFilename is "<name>-<section>.jpg" in safe ASCII: letters, digits,
// dot, underscore and hyphen; anything else becomes one hyphen.
func safeFilename(name, section string) string {
	var b strings.Builder
	dash := false
	for _, c := range name + "-" + section {
		ok := c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
		if !ok || c == '-' {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(c)
		dash = false
	}
	out := strings.Trim(b.String(), "-.")
	if len(out) > 120 {
		out = strings.TrimRight(out[:120], "-.")
	}
	if out == "" {
		out = "map"
	}
	return out + ".jpg"
}

// slots bounds concurrent renders: a map takes a core for tens to hundreds
// of milliseconds, and more renders than cores only queue inside the CPU.
type slots chan struct{}

func (s slots) acquire(ctx interface {
	Done() <-chan struct{}
	Err() error
}) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return errors.Join(ctx.Err(), errMapBusy)
	}
}

func (s slots) release() { <-s }

var errMapBusy = errors.New("api: map renderer busy")
