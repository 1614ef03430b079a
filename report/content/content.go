// Package content decides what a site report says: what goes on which
// page, the statistical profile's distance bands, the map keys that tie a
// table row to its mark, the site profile, the tables' fields and labels,
// the data currency table, the limitations, and the report's retained
// text. It knows no ledger, store, engine or HTTP: the job runner gathers
// the site, the layers' matched features and the cadastral context, and
// hands them over; report renders what this package decides.
package content

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"siteenv/geo"
	"siteenv/report"
)

// onSite counts the features at distance 0 (the engine returns them
// nearest first, so they lead).
func onSite(fs []Feature) int {
	n := 0
	for n < len(fs) && fs[n].DistanceM == 0 {
		n++
	}
	return n
}

// appendixFields is how many fields a record beyond the detail distance
// shows in the appendix table (its card would show them all).
const appendixFields = 3

// detailByTheme is the default detail distance per section key: within it
// a layer's records print as full record cards, beyond it as rows of the
// appendix table. Contamination and groundwater records matter farther
// out (migration of a plume, a bore's drawdown) than a heritage item or a
// planning overlay.
var detailByTheme = map[string]float64{"contamination": 500, "water": 500}

// defaultDetailM is the detail distance of the other themes.
const defaultDetailM = 250

// DetailDistance is the distance within which a layer's records print as
// record cards: the layer's own (Layer.DetailM) or its theme's default.
func DetailDistance(l *Layer) float64 {
	if l.DetailM > 0 {
		return l.DetailM
	}
	if d, ok := detailByTheme[l.SectionKey]; ok {
		return d
	}
	return defaultDetailM
}

// Input is everything a report states, as gathered by the job runner.
type Input struct {
	ReportID, RevisionID string
	Revision             int
	ReceiptID            string
	Built                time.Time
	Site                 Site
	// Layers in report order: by section, then layer id.
	Layers []Layer
	// Parcels are the cadastral parcels near the site (map context; those
	// making up the site give its lot/plan and address).
	Parcels []Parcel
	// Held is every layer the service holds (with a current release), of
	// any jurisdiction, in or out of the order: the kinds of register the
	// service keeps, from which Gaps names those it holds none of here.
	// Nil: the order's layers stand in for it.
	Held []Held
	// Basemap goes under every map (nil: none, and the maps say so).
	Basemap report.Basemap
}

// Held is one layer of the service's catalogue, as Gaps reads it.
type Held struct {
	SectionKey, SectionName string
	Jurisdictions           []string
}

// Site is the site as saved.
type Site struct {
	ID           string
	Name         string // the site's name, or its id when it has none
	AreaM2       float64
	Jurisdiction string // "" when unknown
	// JurisdictionNamed: the customer named the jurisdiction in the order
	// (the site's boundary does not determine one: across a border, or
	// offshore).
	JurisdictionNamed bool
	Geometry          orb.Geometry
	// References: the client's external references ("namespace: ref").
	References []string
}

// Parcel is a cadastral parcel of the gazetteer.
type Parcel struct {
	Jurisdiction, CadastreID string
	Address, Postcode        string // "" when it has none
	// LGA is the local government area of the parcel's address, "" when
	// the gazetteer holds none.
	LGA      string
	Geometry orb.Geometry
}

// Source is one source's provenance, as the currency table prints it.
type Source struct {
	Provider, Variant, Licence, Attribution, URL string
	Published, Effective, Retrieved              string
}

// Layer is one layer's search outcome.
type Layer struct {
	ID, Name, SectionKey, SectionName string
	// Jurisdictions the layer's data holds ("AUS" for national data).
	Jurisdictions []string
	// ReleaseID and SchemaVersion are "" when the layer had no release.
	ReleaseID, SchemaVersion string
	RadiusM                  float64
	// Status, Reason and Coverage as in a query result's layer.
	Status, Reason, Coverage string
	// Count is the matched count; nil when unknown.
	Count *int
	// FieldSchema and Units of the release (JSON objects by field name).
	FieldSchema, Units json.RawMessage
	Sources            []Source
	// Features are every matched feature, nearest first (empty unless
	// data is present). Every one gets a map key and a row.
	Features []Feature
	// DetailM is the layer's detail distance from its metadata (0: the
	// theme's default; see DetailDistance).
	DetailM float64
}

// Feature is a matched feature.
type Feature struct {
	ID        string
	DistanceM float64
	Geometry  orb.Geometry
	// Properties reads the feature's fields (called for listed ones only).
	Properties func() map[string]any
}

// Output is what the report says: the document to render and the facts
// the evidence records.
type Output struct {
	Doc report.Report
	// Location is where the site is, as the cover states it.
	Location Location
	// Layers, parallel to Input.Layers.
	Layers []LayerFacts
}

// Location is the site's address, lots and coordinates.
type Location struct {
	Addresses, LotPlans []string
	// LGAs are the local government areas of the site's parcels'
	// addresses (empty: not held).
	LGAs              []string
	Lon, Lat          float64
	MGAZone           int
	Easting, Northing float64
	TimeZone          string
}

// LayerFacts are a layer's profile counts and listed features.
type LayerFacts struct {
	// Bands: counts per content.Bands; nil beyond the search distance,
	// all nil when the count is unknown.
	Bands []*int
	// MapRadiusM is the distance its section map draws; DetailM the
	// distance within which its records are record cards.
	MapRadiusM, DetailM float64
	// Listed: every matched feature, keyed, nearest first.
	Listed []ListedFeature
}

// ListedFeature is a listed feature with its map key.
type ListedFeature struct {
	Key        int
	FeatureID  string
	DistanceM  float64
	BearingDeg float64 // NaN on site
	OnSite     bool
	// Drawn: on its section's map (else listed under "not drawn").
	Drawn bool
	Band  string
	// Card: printed as a record card (within the detail distance), else
	// as a row of the appendix table.
	Card bool
}

// Build decides the report's content.
func Build(in Input) Output {
	out := Output{Layers: make([]LayerFacts, len(in.Layers))}
	centre := centroid(in.Site.Geometry)
	local := geo.NewLocal(centre)
	loc := locate(in, centre)
	out.Location = loc
	doc := report.Report{ReportID: in.ReportID, RevisionID: in.RevisionID, Revision: in.Revision, ReceiptID: in.ReceiptID, Created: in.Built}
	doc.Site = report.ReportSite{Name: in.Site.Name, Reference: strings.Join(in.Site.References, "; "), Addresses: loc.Addresses,
		LGAs: loc.LGAs, LotPlans: loc.LotPlans, Lon: loc.Lon, Lat: loc.Lat, MGAZone: loc.MGAZone, Easting: loc.Easting, Northing: loc.Northing,
		AreaM2: in.Site.AreaM2, Jurisdiction: in.Site.Jurisdiction, Built: localTime(in.Built, loc.TimeZone)}
	if in.Site.JurisdictionNamed && in.Site.Jurisdiction != "" {
		doc.Site.Jurisdiction += " (named by the customer in the order: the site's boundary does not determine it)"
	}

	var parcels []orb.Geometry
	for _, p := range in.Parcels {
		parcels = append(parcels, p.Geometry)
	}
	key := 0
	maxMap := 0.0
	for _, sec := range sections(in.Layers) {
		rs := report.ReportSection{Key: in.Layers[sec[0]].SectionKey, Name: sectionName(&in.Layers[sec[0]])}
		// The section map draws to its widest search distance, at most
		// report.MaxRenderRadiusM.
		for _, i := range sec {
			l := &in.Layers[i]
			if searchedHere(l) {
				rs.MapRadiusM = math.Max(rs.MapRadiusM, math.Min(l.RadiusM, report.MaxRenderRadiusM))
			}
		}
		maxMap = math.Max(maxMap, rs.MapRadiusM)
		rs.Map = report.Map{Title: in.Site.Name, Section: rs.Name, Date: in.Built, Site: in.Site.Geometry, Parcels: parcels, Print: true,
			Basemap: in.Basemap}
		var drawnAt [][]float64 // per map layer, each drawn feature's distance
		for _, i := range sec {
			l := &in.Layers[i]
			f := &out.Layers[i]
			f.MapRadiusM = rs.MapRadiusM
			// Not searched (outside coverage) or unknown: every band a dash.
			known := l.Count != nil && l.Status != "unavailable" && l.Reason != "outside_coverage"
			dists := make([]float64, 0, len(l.Features))
			for _, ft := range l.Features {
				dists = append(dists, ft.DistanceM)
			}
			f.Bands = BandCounts(dists, l.RadiusM, known)
			rl := report.ReportLayer{ID: l.ID, Name: l.Name, ReleaseID: l.ReleaseID, SchemaVersion: l.SchemaVersion, RadiusM: l.RadiusM,
				Status: l.Status, Reason: l.Reason, Coverage: l.Coverage, Count: l.Count}
			drawTo := math.Min(l.RadiusM, report.MaxRenderRadiusM)
			if l.Reason == "outside_coverage" {
				rs.NotCovered = append(rs.NotCovered, l.Name)
			}
			var ml *report.Layer
			if searchedHere(l) {
				rs.Map.Layers = append(rs.Map.Layers, report.Layer{ID: l.ID, Name: l.Name, RadiusM: l.RadiusM, Coverage: l.Coverage})
				ml = &rs.Map.Layers[len(rs.Map.Layers)-1]
				drawnAt = append(drawnAt, nil)
			}
			n := 0
			if l.Status == "data_present" {
				n = len(l.Features)
			}
			fields := NewFields(l.FieldSchema, l.Units)
			names := fields.Names()
			brief := briefFieldNames(names, appendixFields)
			detail := DetailDistance(l)
			f.DetailM, rl.DetailM = detail, detail
			for _, name := range brief {
				rl.BriefFields = append(rl.BriefFields, fields.Label(name))
			}
			classField, classNames := fields.ClassField()
			classOf := map[string]int{}
			for j := range n {
				ft := &l.Features[j]
				key++
				lf := ListedFeature{Key: key, FeatureID: ft.ID, DistanceM: ft.DistanceM, BearingDeg: bearing(local, ft),
					OnSite: ft.DistanceM == 0, Drawn: ml != nil && ft.Geometry != nil && ft.DistanceM <= drawTo, Band: Bands[BandOf(ft.DistanceM)].Key,
					Card: ft.DistanceM <= detail}
				f.Listed = append(f.Listed, lf)
				var props map[string]any
				if ft.Properties != nil {
					props = ft.Properties()
				}
				row := report.Row{Key: key, Layer: l.Name, ID: ft.ID, DistanceM: ft.DistanceM, BearingDeg: lf.BearingDeg, OnSite: lf.OnSite, Drawn: lf.Drawn}
				if lf.Card {
					for _, name := range names {
						row.Fields = append(row.Fields, report.Field{Name: fields.Label(name), Value: Value(props[name])})
					}
					rl.Cards = append(rl.Cards, row)
				} else {
					for _, name := range brief {
						row.Fields = append(row.Fields, report.Field{Name: fields.Label(name), Value: Value(props[name])})
					}
					rl.Appendix = append(rl.Appendix, row)
				}
				if lf.OnSite {
					doc.SiteProfile = append(doc.SiteProfile, row)
				}
				if classField != "" {
					classOf[ft.ID] = slices.Index(classNames, fmt.Sprint(props[classField]))
				}
			}
			if ml != nil && l.Status == "data_present" {
				keys := map[string]int{}
				for _, lf := range f.Listed {
					keys[lf.FeatureID] = lf.Key
				}
				entry := report.LegendEntry{Style: len(rs.Map.Layers) - 1, Name: l.Name}
				for j := range l.Features {
					ft := &l.Features[j]
					if ft.DistanceM > drawTo || ft.Geometry == nil {
						continue
					}
					ml.Features = append(ml.Features, ft.Geometry)
					if classField != "" {
						switch ft.Geometry.(type) {
						case orb.Polygon, orb.MultiPolygon:
							ml.ClassNames = classNames
						}
						c, ok := classOf[ft.ID]
						if !ok {
							c = -1
						}
						ml.Classes = append(ml.Classes, c)
					}
					ml.Keys = append(ml.Keys, keys[ft.ID])
					ml.Minor = append(ml.Minor, ft.DistanceM > detail)
					drawnAt[len(drawnAt)-1] = append(drawnAt[len(drawnAt)-1], ft.DistanceM)
					entry.Features++
					if keys[ft.ID] > 0 {
						entry.Keyed++
					}
					switch g := ft.Geometry.(type) {
					case orb.Point:
						entry.Marks++
						entry.Kind = "point"
					case orb.MultiPoint:
						entry.Marks += len(g)
						entry.Kind = "point"
					case orb.LineString, orb.MultiLineString:
						entry.Kind = "line"
					default:
						entry.Kind = "polygon"
					}
				}
				if ml.ClassNames == nil {
					ml.Classes = nil
				} else if entry.Kind == "polygon" {
					entry.ClassField, entry.Classes = fields.Label(classField), classNames
				}
				if entry.Features > 0 {
					rs.Legend = append(rs.Legend, entry)
				}
			}
			rs.Layers = append(rs.Layers, rl)
			doc.Profile = append(doc.Profile, profileRow(rs.Name, l, f.Bands))
		}
		detailMap(&rs, drawnAt)
		doc.Overview = append(doc.Overview, overviewLine(rs, in.Layers, sec))
		doc.Sections = append(doc.Sections, rs)
	}
	for _, g := range Gaps(in) {
		note := "the service holds no " + in.Site.Jurisdiction + " register of this kind (its " + strings.ToLower(g.Section) +
			" registers cover " + strings.Join(g.Others, ", ") + " only): no records here is not a clean result"
		found := false
		for i := range doc.Overview {
			if doc.Overview[i].Key == g.Key {
				doc.Overview[i].Detail = strings.TrimPrefix(doc.Overview[i].Detail+"; ", "; ") + note
				found = true
			}
		}
		if !found {
			// A theme none of the order's layers is of: the overview still
			// names it, so that its absence is never read as a clean page.
			doc.Overview = append(doc.Overview, report.OverviewLine{Section: g.Section, Key: g.Key, Finding: "Not held",
				Detail: "no " + in.Site.Jurisdiction + " register: " + note})
		}
		for i := range doc.Sections {
			if doc.Sections[i].Key == g.Key {
				doc.Sections[i].Warning = "No " + in.Site.Jurisdiction + " register: " + note + "."
			}
		}
	}
	if in.Site.Geometry != nil {
		doc.Locality = report.Map{Title: in.Site.Name, Section: "Locality plan", Date: in.Built, Site: in.Site.Geometry, Parcels: parcels, Print: true,
			Basemap: in.Basemap}
		var rings []float64
		for _, b := range Bands[1:] {
			if b.MaxM <= math.Max(maxMap, 100) {
				rings = append(rings, b.MaxM)
			}
		}
		doc.SearchArea = report.Map{Title: in.Site.Name, Section: "Search area", Date: in.Built, Site: in.Site.Geometry, Parcels: parcels,
			Print: true, Rings: rings, Basemap: in.Basemap}
	}
	for _, l := range in.Layers {
		for _, s := range l.Sources {
			doc.Sources = append(doc.Sources, report.SourceRow{Layer: l.Name, Provider: s.Provider, Variant: s.Variant, Release: l.ReleaseID,
				Published: s.Published, Effective: s.Effective, Retrieved: s.Retrieved, Licence: s.Licence, Coverage: coverageText(&l),
				Attribution: s.Attribution, URL: s.URL})
		}
		if len(l.Sources) == 0 {
			doc.Sources = append(doc.Sources, report.SourceRow{Layer: l.Name, Coverage: coverageText(&l)})
		}
	}
	doc.Limitations = limitations(in)
	out.Doc = doc
	return out
}

// searchedHere: the layer was searched here (its features, or their
// absence, can be drawn).
func searchedHere(l *Layer) bool {
	return l.ReleaseID != "" && l.Reason != "outside_coverage" && l.Status != "unavailable"
}

func sectionName(l *Layer) string {
	switch {
	case l.SectionName != "":
		return l.SectionName
	case l.SectionKey != "":
		return l.SectionKey
	}
	return "Other"
}

// sections groups layer indexes (sorted by section) into sections.
func sections(layers []Layer) [][]int {
	var out [][]int
	for i := range layers {
		if i == 0 || layers[i].SectionKey != layers[i-1].SectionKey {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], i)
	}
	return out
}

// StatusText is what a layer's outcome reads as: "no records", "not
// covered" and "source unavailable" must never read alike.
func StatusText(status, reason string) string {
	switch {
	case status == "data_present":
		return "Records found"
	case status == "no_data" && reason == "outside_coverage":
		return "Not covered"
	case status == "no_data":
		return "No records"
	case reason == "source_unavailable":
		return "Source unavailable"
	case reason == "result_limit_exceeded", reason == "output_too_large", reason == "feature_too_large":
		return "Too many to list"
	case reason == "source_rights_restricted":
		return "Not licensed for reports"
	}
	return "Unavailable"
}

func profileRow(section string, l *Layer, bands []*int) report.ProfileRow {
	row := report.ProfileRow{Section: section, Layer: l.Name, Counts: bands, Total: l.Count}
	switch {
	case l.Reason == "outside_coverage":
		row.Note, row.NotCovered = "Not covered: the data does not reach the site", true
	case l.Count == nil || l.Status == "unavailable":
		row.Note = StatusText(l.Status, l.Reason) + ": count unknown"
	}
	return row
}

// overviewLine: on site / within X / none found / not covered, per section.
func overviewLine(rs report.ReportSection, layers []Layer, sec []int) report.OverviewLine {
	line := report.OverviewLine{Section: rs.Name, Key: rs.Key}
	nearest, searched, unknown, found := math.Inf(1), 0, 0, 0
	var onSite []string
	var nearestKind string
	nearestBearing := math.NaN()
	for _, i := range sec {
		l := &layers[i]
		switch {
		case l.Reason == "outside_coverage":
			continue
		case l.Count == nil || l.Status == "unavailable":
			unknown++
			continue
		}
		searched++
		if l.Status == "data_present" && len(l.Features) > 0 {
			found += *l.Count
			if l.Features[0].DistanceM < nearest {
				nearest, nearestKind = l.Features[0].DistanceM, l.Name
				nearestBearing = bearingOf(rs, l.ID, l.Features[0].ID)
			}
			if l.Features[0].DistanceM == 0 {
				onSite = append(onSite, l.Name)
			}
		}
	}
	switch {
	case len(onSite) > 0:
		line.Finding = "On site"
		line.Detail = strings.Join(onSite, "; ")
	case found > 0:
		line.Finding = "Within " + report.Distance(Bands[BandOf(nearest)].MaxM)
		line.Detail = "nearest: a record of " + nearestKind + ", " + report.Distance(nearest)
		if !math.IsNaN(nearestBearing) {
			line.Detail += " " + Direction(nearestBearing)
		}
	case searched > 0:
		line.Finding = "None found"
	case unknown > 0:
		line.Finding = "Unknown"
		line.Detail = "source unavailable: an absence is not shown"
	default:
		line.Finding = "Not covered"
		line.Detail = "no data of this section covers the site"
	}
	if found > 0 {
		line.Detail = strings.TrimPrefix(line.Detail+"; ", "; ") + plural(found, "record", "records") + " within the search distances"
	}
	if unknown > 0 && line.Finding != "Unknown" {
		line.Detail += "; " + plural(unknown, "layer", "layers") + " unavailable"
	}
	return line
}

// bearingOf is the bearing of a feature as the section's rows give it
// (NaN when not found or on site).
func bearingOf(rs report.ReportSection, layerID, featureID string) float64 {
	for _, l := range rs.Layers {
		if l.ID != layerID {
			continue
		}
		for _, r := range append(slices.Clone(l.Cards), l.Appendix...) {
			if r.ID == featureID {
				return r.BearingDeg
			}
		}
	}
	return math.NaN()
}

func coverageText(l *Layer) string {
	switch {
	case l.ReleaseID == "":
		return "no release"
	case l.Reason == "outside_coverage":
		return "not covered"
	}
	return l.Coverage
}

// centroid of the site: the area centroid of a polygon, else the
// bound's centre.
func centroid(g orb.Geometry) orb.Point {
	if g == nil {
		return orb.Point{}
	}
	switch g.(type) {
	case orb.Polygon, orb.MultiPolygon:
		if c, a := planar.CentroidArea(g); a > 0 {
			return c
		}
	case orb.Point:
		return g.(orb.Point)
	}
	return g.Bound().Center()
}

// ofSite: the parcels making up the site (inside it, up to a small
// tolerance), or for a point or line site those containing its centre.
func ofSite(site orb.Geometry, centre orb.Point, ps []Parcel) []Parcel {
	var out []Parcel
	sb := site.Bound().Pad(2e-6)
	for _, p := range ps {
		if p.Geometry == nil {
			continue
		}
		pb := p.Geometry.Bound()
		switch site.(type) {
		case orb.Polygon, orb.MultiPolygon:
			c, _ := planar.CentroidArea(p.Geometry)
			if sb.Contains(pb.Min) && sb.Contains(pb.Max) && geo.PolygonalContains(site, c) {
				out = append(out, p)
			}
		default:
			if geo.PolygonalContains(p.Geometry, centre) {
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b Parcel) int { return strings.Compare(a.CadastreID, b.CadastreID) })
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return formatInt(n) + " " + many
}
