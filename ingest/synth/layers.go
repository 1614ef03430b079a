package synth

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"siteenv/geo/austates"
	"siteenv/tiles"
)

var sections = []Section{
	{Key: "biodiversity", Name: "Biodiversity", Price: 5},
	{Key: "bushfire", Name: "Bushfire", Price: 6},
	{Key: "contamination", Name: "Contamination", Price: 10},
	{Key: "flood", Name: "Flooding", Price: 8},
	{Key: "heritage", Name: "Heritage", Price: 4},
	{Key: "soils", Name: "Soils and geology", Price: 4},
	{Key: "water", Name: "Water", Price: 0},
}

// place says where a layer's features cluster.
type place int

const (
	urban   place = iota // capital-city and town centres
	fringe               // peri-urban fringes
	coastal              // localities near the coast
	mixed                // everywhere, more where people are
	rural                // everywhere alike
)

func (p place) weight(l *locality) float64 {
	n := float64(l.Neighbours)
	switch p {
	case urban:
		return math.Pow(n, 1.3)
	case fringe:
		return n*math.Exp(-n/25) + 0.05
	case coastal:
		if !l.Coastal {
			return 0
		}
		return 1 + math.Sqrt(n)
	case mixed:
		return math.Sqrt(n)
	}
	return 1
}

// geomSpec says how a layer's geometries look. Distances in metres.
type geomSpec struct {
	Kind      string  // point, multipoint, polygon, line
	Spread    float64 // standard deviation of the centre's offset from its locality
	MaxSpread float64 // cap on that offset
	// polygons: radius drawn log-uniformly in [RMin, RMax]
	RMin, RMax float64
	VMin, VMax int     // vertices per ring
	Rough      float64 // 0..1: how irregular the outline is
	HoleP      float64 // share of polygons with a hole
	MultiP     float64 // share of multi-geometries
	// lines: vertex spacing and count; LongP of them are major rivers
	Step       float64
	NMin, NMax int
	LongP      float64
	// multipoints
	PMin, PMax int
}

// layerSpec is one environmental layer.
type layerSpec struct {
	ID, Section, Name, Description, SchemaVersion string
	Prefix                                        string  // feature ids: PREFIX-00000001
	Weight                                        float64 // share of the scale's features
	RadiusMaxM                                    float64
	// Coverage: "AUS", "state:XX", "region:KEY", or "" for unknown.
	Coverage      string
	Jurisdictions []string
	GeomTypes     []string
	Place         place
	Geom          geomSpec
	Fields        []fieldDef
	Sources       []tiles.Source
	Props         func(c *fctx, p map[string]any)
}

// eligible reports whether features may be placed around l. A layer of
// one state takes only localities that lie in it (a few localities' recorded
// positions fall in a neighbouring state).
func (s *layerSpec) eligible(l *locality) bool {
	switch {
	case strings.HasPrefix(s.Coverage, "state:"):
		if l.State != s.Coverage[len("state:"):] {
			return false
		}
	case strings.HasPrefix(s.Coverage, "region:"):
		if !regions[s.Coverage[len("region:"):]].contains(l) {
			return false
		}
	default:
		return true
	}
	at := austates.StateAt(orb.Point{l.Lon, l.Lat})
	return at == "" || at == l.State
}

// state is the one state or territory a layer covers ("state:XX", or the
// state of its region), or "" for a national or unknown coverage.
func (s *layerSpec) state() string {
	switch {
	case strings.HasPrefix(s.Coverage, "state:"):
		return s.Coverage[len("state:"):]
	case strings.HasPrefix(s.Coverage, "region:"):
		return regions[s.Coverage[len("region:"):]].State
	}
	return ""
}

func sp(s string) *string { return &s }

// src is a provenance record; approvals default to true.
type src struct {
	Variant, Scope, Provider, URL            string
	Published, Effective, Retrieved, Licence string
	Attribution                              string
	NotVerified, NotAPI, NotAgent, NotReport bool
}

func (s src) source() tiles.Source {
	return tiles.Source{
		SourceVariantID:   s.Variant,
		Scope:             sp(s.Scope),
		Provider:          s.Provider,
		SourceURL:         sp(s.URL),
		SourcePublishedAt: sp(s.Published),
		SourceEffectiveAt: sp(s.Effective),
		RetrievedAt:       sp(s.Retrieved),
		Licence:           s.Licence,
		Attribution:       s.Attribution,
		CoverageVerified:  !s.NotVerified,
		APIApproved:       !s.NotAPI,
		AgentApproved:     !s.NotAgent,
		ReportApproved:    !s.NotReport,
	}
}

func sources(ss ...src) []tiles.Source {
	out := make([]tiles.Source, len(ss))
	for i, s := range ss {
		out[i] = s.source()
	}
	return out
}

const ccby4 = "CC-BY-4.0"

var (
	points   = []string{"Point"}
	polygons = []string{"Polygon", "MultiPolygon"}
	lines    = []string{"LineString", "MultiLineString"}
)

// layerSpecs returns the layers, ordered by id.
func layerSpecs() []*layerSpec {
	ls := []*layerSpec{
		// ---- contamination ----
		{
			ID: "nsw-epa-contaminated-land", Section: "contamination",
			Name:          "NSW contaminated land notified to the EPA",
			Description:   "Sites notified to the NSW Environment Protection Authority under section 60 of the Contaminated Land Management Act 1997, with the EPA's regulatory status. A site on this list is not necessarily contaminated enough to need regulation.",
			SchemaVersion: "2024-03", Prefix: "NSWEPA", Weight: 3, RadiusMaxM: 2000,
			Coverage: "state:NSW", Jurisdictions: []string{"NSW"}, GeomTypes: points, Place: urban,
			Geom: geomSpec{Kind: "point", Spread: 1500, MaxSpread: 4000},
			Fields: []fieldDef{
				str("site_name", "Name of the notified site"),
				str("address", "Street address of the site").null(),
				str("suburb", "Suburb or town"),
				str("lga", "Local government area").null(),
				enum("contamination_activity", "Activity that caused the contamination", contaminationActivities...),
				enum("management_class", "EPA regulatory status",
					"Regulation under CLM Act not required", "Regulation being finalised",
					"Contamination currently regulated under CLM Act", "Contamination formerly regulated under CLM Act",
					"Under assessment", "Ongoing maintenance required"),
				date("notified_date", "Date the site was notified to the EPA"),
				boolean("regulated", "Whether the site is currently regulated under the CLM Act"),
				number("site_area_ha", "Approximate site area").null().min(0).unit("ha"),
				dateTime("record_updated_at", "When the EPA last updated the record"),
			},
			Sources: sources(src{
				Variant: "nsw-epa-clm-notified-2024-03", Scope: "New South Wales",
				Provider:  "NSW Environment Protection Authority",
				URL:       "https://www.epa.nsw.gov.au/your-environment/contaminated-land/notified-and-regulated-contaminated-land",
				Published: "2024-03-18", Effective: "2024-03-01", Retrieved: "2024-04-02T03:15:00Z", Licence: ccby4,
				Attribution: "© State of New South Wales (Environment Protection Authority) 2024",
			}),
			Props: func(c *fctx, p map[string]any) {
				act := oneOf(c.r, contaminationActivities)
				p["site_name"] = siteName(c, act)
				p["address"] = nil
				if c.chance(0.9) {
					p["address"] = c.street()
				}
				p["suburb"] = c.loc.Name
				p["lga"] = c.lga()
				p["contamination_activity"] = act
				cls := weighted(c.r, []string{"Regulation under CLM Act not required", "Regulation being finalised",
					"Contamination currently regulated under CLM Act", "Contamination formerly regulated under CLM Act",
					"Under assessment", "Ongoing maintenance required"}, []float64{45, 5, 12, 18, 15, 5})
				p["management_class"] = cls
				p["notified_date"] = c.date("2001-01-01", "2024-02-28")
				p["regulated"] = cls == "Contamination currently regulated under CLM Act" || cls == "Ongoing maintenance required"
				p["site_area_ha"] = nil
				if c.chance(0.8) {
					p["site_area_ha"] = c.logNum(-0.7, 1.1, 2)
				}
				p["record_updated_at"] = c.dateTime("2020-01-01", "2024-03-01")
			},
		},
		{
			ID: "qld-environmental-management-register", Section: "contamination",
			Name:          "Queensland Environmental Management Register and Contaminated Land Register",
			Description:   "Land parcels recorded on the Queensland Environmental Management Register (EMR) because a notifiable activity was carried out on them, or on the Contaminated Land Register (CLR) because contamination is causing or may cause serious environmental harm.",
			SchemaVersion: "1.4", Prefix: "QLDEMR", Weight: 4, RadiusMaxM: 2000,
			Coverage: "state:QLD", Jurisdictions: []string{"QLD"}, GeomTypes: points, Place: urban,
			Geom: geomSpec{Kind: "point", Spread: 2500, MaxSpread: 6000},
			Fields: []fieldDef{
				str("lot_plan", "Lot on plan of the recorded parcel, e.g. 2RP1234"),
				enum("register", "Register the parcel is on", "EMR", "CLR"),
				enum("notifiable_activity", "Schedule 3 notifiable activity", qldActivities...),
				enum("status", "Current status of the record", "Notified", "Site investigation", "Remediation", "Site management plan", "Removed"),
				date("listed_date", "Date the parcel was recorded"),
				date("removed_date", "Date the parcel was removed from the register").null(),
				str("suburb", "Suburb or town"),
				str("postcode", "Postcode"),
				number("parcel_area_m2", "Area of the recorded parcel").min(0).unit("m2"),
			},
			Sources: sources(src{
				Variant: "qld-des-emr-clr-2024-02", Scope: "Queensland",
				Provider:  "Queensland Government, Department of Environment, Tourism, Science and Innovation",
				URL:       "https://www.qld.gov.au/environment/management/environmental/contaminated-land/registers",
				Published: "2024-02-12", Effective: "2024-02-01", Retrieved: "2024-03-05T22:40:11Z", Licence: ccby4,
				Attribution: "© State of Queensland (Department of Environment, Tourism, Science and Innovation) 2024",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["lot_plan"] = strconv.Itoa(intBetween(c.r, 1, 120)) + c.pick("RP", "SP", "RP", "SP", "CP", "SL") + strconv.Itoa(intBetween(c.r, 1000, 330000))
				reg := weighted(c.r, []string{"EMR", "CLR"}, []float64{92, 8})
				p["register"] = reg
				p["notifiable_activity"] = oneOf(c.r, qldActivities)
				st := weighted(c.r, []string{"Notified", "Site investigation", "Remediation", "Site management plan", "Removed"}, []float64{55, 12, 5, 18, 10})
				p["status"] = st
				listed := dayBetween(c.r, "1992-01-01", "2023-12-31")
				p["listed_date"] = listed.Format("2006-01-02")
				p["removed_date"] = nil
				if st == "Removed" {
					p["removed_date"] = listed.AddDate(0, 0, intBetween(c.r, 90, 3000)).Format("2006-01-02")
				}
				p["suburb"] = c.loc.Name
				p["postcode"] = c.loc.Postcode
				p["parcel_area_m2"] = c.logNum(7.2, 1.3, 1)
			},
		},
		{
			ID: "vic-epa-priority-sites", Section: "contamination",
			Name:          "Victoria EPA Priority Sites Register",
			Description:   "Sites for which EPA Victoria has issued a clean up notice, pollution abatement notice or site management order because of pollution or contamination that must be managed.",
			SchemaVersion: "2023-11", Prefix: "VICEPA", Weight: 1, RadiusMaxM: 2000,
			Coverage: "state:VIC", Jurisdictions: []string{"VIC"}, GeomTypes: points, Place: urban,
			Geom: geomSpec{Kind: "point", Spread: 1500, MaxSpread: 4000},
			Fields: []fieldDef{
				str("site_name", "Name of the site"),
				str("address", "Street address"),
				str("suburb", "Suburb or town"),
				enum("issue", "Principal issue", "Groundwater contamination", "Soil contamination", "Landfill gas", "Asbestos", "PFAS", "Hydrocarbons"),
				enum("notice_type", "Notice issued", "Clean up notice", "Pollution abatement notice", "Site management order", "Environmental action notice"),
				date("notice_issued", "Date the notice was issued"),
				date("notice_revoked", "Date the notice was revoked").null(),
				boolean("auditor_appointed", "Whether an environmental auditor has been appointed"),
			},
			Sources: sources(src{
				Variant: "vic-epa-psr-2023-11", Scope: "Victoria",
				Provider:  "Environment Protection Authority Victoria",
				URL:       "https://www.epa.vic.gov.au/for-community/environmental-information/land-groundwater-pollution/priority-sites-register",
				Published: "2023-11-20", Effective: "2023-11-20", Retrieved: "2024-01-09T01:02:03Z", Licence: ccby4,
				Attribution: "© State of Victoria (EPA Victoria) 2023",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["site_name"] = siteName(c, oneOf(c.r, contaminationActivities))
				p["address"] = c.street()
				p["suburb"] = c.loc.Name
				p["issue"] = c.pick("Groundwater contamination", "Soil contamination", "Landfill gas", "Asbestos", "PFAS", "Hydrocarbons")
				p["notice_type"] = c.pick("Clean up notice", "Pollution abatement notice", "Site management order", "Environmental action notice")
				issued := dayBetween(c.r, "2005-01-01", "2023-10-31")
				p["notice_issued"] = issued.Format("2006-01-02")
				p["notice_revoked"] = nil
				if c.chance(0.15) {
					p["notice_revoked"] = issued.AddDate(0, 0, intBetween(c.r, 200, 2500)).Format("2006-01-02")
				}
				p["auditor_appointed"] = c.chance(0.6)
			},
		},
		{
			ID: "au-pfas-investigation-sampling", Section: "contamination",
			Name:          "PFAS investigation sampling locations",
			Description:   "Groups of sampling locations from per- and poly-fluoroalkyl substance (PFAS) investigations around defence bases, airports and fire training grounds, with the highest concentrations found. Coverage is unknown: absence of a feature says nothing about PFAS at a site.",
			SchemaVersion: "0.9", Prefix: "PFAS", Weight: 0.5, RadiusMaxM: 10000,
			Coverage: "", Jurisdictions: []string{"AUS"}, GeomTypes: []string{"MultiPoint"}, Place: mixed,
			Geom: geomSpec{Kind: "multipoint", Spread: 4000, MaxSpread: 10000, PMin: 3, PMax: 24},
			Fields: []fieldDef{
				str("investigation_area", "Name of the investigation area"),
				enum("sample_media", "What was sampled", "Groundwater", "Surface water", "Soil", "Sediment", "Biota"),
				integer("samples", "Number of sampling locations").min(1).unit("-"),
				number("max_pfos_pfhxs_ug_l", "Highest PFOS + PFHxS concentration found").null().min(0).unit("µg/L"),
				number("max_pfoa_ug_l", "Highest PFOA concentration found").null().min(0).unit("µg/L"),
				boolean("exceeds_drinking_water_guideline", "Whether any sample exceeded the drinking water guideline value"),
				date("sampled_from", "First sampling date"),
				date("sampled_to", "Last sampling date"),
			},
			Sources: sources(src{
				Variant: "defence-pfas-sampling-2023", Scope: "Australia (investigation areas only)",
				Provider:  "Department of Defence",
				URL:       "https://www.defence.gov.au/about/locations-property/pfas/investigation-management",
				Published: "2023-06-30", Effective: "2023-06-30", Retrieved: "2023-09-14T05:30:00Z", Licence: ccby4,
				Attribution: "© Commonwealth of Australia (Department of Defence) 2023",
				NotVerified: true, NotAgent: true,
			}),
			Props: func(c *fctx, p map[string]any) {
				p["investigation_area"] = c.loc.Title + " " + c.pick("PFAS Investigation Area", "Airport PFAS Investigation", "Fire Training Ground Investigation", "Defence Base Management Area")
				p["sample_media"] = weighted(c.r, []string{"Groundwater", "Surface water", "Soil", "Sediment", "Biota"}, []float64{40, 25, 20, 10, 5})
				p["samples"] = int64(c.parts)
				p["max_pfos_pfhxs_ug_l"], p["max_pfoa_ug_l"] = nil, nil
				pfos := 0.0
				if c.chance(0.85) {
					pfos = c.logNum(-2.5, 2, 4)
					p["max_pfos_pfhxs_ug_l"] = pfos
				}
				if c.chance(0.8) {
					p["max_pfoa_ug_l"] = c.logNum(-3.5, 1.8, 4)
				}
				p["exceeds_drinking_water_guideline"] = pfos > 0.07
				from := dayBetween(c.r, "2016-01-01", "2022-06-30")
				p["sampled_from"] = from.Format("2006-01-02")
				p["sampled_to"] = from.AddDate(0, 0, intBetween(c.r, 0, 400)).Format("2006-01-02")
			},
		},
		// ---- flood ----
		{
			ID: "nsw-flood-planning-area", Section: "flood",
			Name:          "Greater Sydney flood planning areas",
			Description:   "Land below the flood planning level (the 1% annual exceedance probability flood plus freeboard) and other flood extents adopted by Greater Sydney councils in their floodplain risk management studies. Covers Greater Sydney only.",
			SchemaVersion: "2.1", Prefix: "SYDFPA", Weight: 3, RadiusMaxM: 1000,
			Coverage: "region:greater-sydney", Jurisdictions: []string{"NSW"}, GeomTypes: polygons, Place: urban,
			Geom: geomSpec{Kind: "polygon", Spread: 1200, MaxSpread: 3000, RMin: 60, RMax: 900, VMin: 16, VMax: 48, Rough: 0.9, HoleP: 0.12, MultiP: 0.15},
			Fields: []fieldDef{
				enum("flood_event", "Flood event the extent represents", "1% AEP", "0.5% AEP", "0.2% AEP", "PMF"),
				number("planning_level_m_ahd", "Flood planning level").null().unit("m AHD"),
				number("freeboard_m", "Freeboard added to the 1% AEP level").min(0).unit("m"),
				enum("hazard_category", "Flood hazard vulnerability category (AIDR 2017)", "H1", "H2", "H3", "H4", "H5", "H6"),
				str("study_name", "Floodplain risk management study the extent comes from"),
				str("lga", "Council that adopted the study"),
				date("adopted_date", "Date the council adopted the study"),
				number("area_ha", "Area of the extent").min(0).unit("ha"),
			},
			Sources: sources(src{
				Variant: "nsw-dphi-fpa-sydney-2024-05", Scope: "Greater Sydney local government areas",
				Provider:  "NSW Department of Planning, Housing and Infrastructure",
				URL:       "https://www.planningportal.nsw.gov.au/opendata/dataset/flood-planning",
				Published: "2024-05-06", Effective: "2024-04-26", Retrieved: "2024-05-20T00:12:45Z", Licence: ccby4,
				Attribution: "© State of New South Wales (Department of Planning, Housing and Infrastructure) 2024",
			}, src{
				Variant: "nsw-dcceew-floodplain-studies-2024", Scope: "Council floodplain risk management studies, Greater Sydney",
				Provider:  "NSW Department of Climate Change, Energy, the Environment and Water",
				URL:       "https://flooddata.ses.nsw.gov.au/flood-projects",
				Published: "2024-02-01", Effective: "2024-02-01", Retrieved: "2024-05-20T00:20:00Z", Licence: ccby4,
				Attribution: "© State of New South Wales (DCCEEW) and contributing councils 2024",
			}),
			Props: func(c *fctx, p map[string]any) {
				ev := weighted(c.r, []string{"1% AEP", "0.5% AEP", "0.2% AEP", "PMF"}, []float64{55, 10, 10, 25})
				p["flood_event"] = ev
				p["planning_level_m_ahd"] = nil
				if ev == "1% AEP" {
					p["planning_level_m_ahd"] = c.num(1.2, 45, 2)
				}
				p["freeboard_m"] = weighted(c.r, []float64{0.5, 0.3, 0.0}, []float64{85, 10, 5})
				p["hazard_category"] = weighted(c.r, []string{"H1", "H2", "H3", "H4", "H5", "H6"}, []float64{30, 20, 18, 14, 10, 8})
				p["study_name"] = c.waterway() + " Floodplain Risk Management Study"
				p["lga"] = c.lgaName()
				p["adopted_date"] = c.date("2008-01-01", "2024-03-31")
				p["area_ha"] = c.area()
			},
		},
		{
			ID: "qld-floodplain-assessment-overlay", Section: "flood",
			Name:          "Queensland Floodplain Assessment Overlay",
			Description:   "Broad-scale floodplain extents for Queensland drainage sub-basins, mapped from terrain, historical flood records and satellite imagery, for councils without a local flood study.",
			SchemaVersion: "2013.2", Prefix: "QFAO", Weight: 4, RadiusMaxM: 1000,
			Coverage: "state:QLD", Jurisdictions: []string{"QLD"}, GeomTypes: polygons, Place: mixed,
			Geom: geomSpec{Kind: "polygon", Spread: 4000, MaxSpread: 8000, RMin: 300, RMax: 3500, VMin: 24, VMax: 64, Rough: 1, HoleP: 0.3, MultiP: 0.25},
			Fields: []fieldDef{
				str("basin_name", "Drainage basin"),
				str("sub_basin", "Drainage sub-basin").null(),
				enum("mapping_method", "How the extent was mapped", "Floodplain assessment overlay", "Detailed flood study", "Historical flood extent"),
				integer("edition_year", "Edition of the overlay").min(2010).max(2030).unit("-"),
				number("area_ha", "Area of the extent").min(0).unit("ha"),
				date("last_reviewed", "Date the extent was last reviewed").null(),
			},
			Sources: sources(src{
				Variant: "qld-qrfa-fao-2013-r2", Scope: "Queensland",
				Provider:  "Queensland Reconstruction Authority",
				URL:       "https://www.qld.gov.au/environment/water/floods/floodplain-assessment-overlay",
				Published: "2013-07-01", Effective: "2013-07-01", Retrieved: "2024-02-19T04:00:00Z", Licence: ccby4,
				Attribution: "© State of Queensland (Queensland Reconstruction Authority) 2013",
			}),
			Props: func(c *fctx, p map[string]any) {
				basin := oneOf(c.r, qldBasins)
				p["basin_name"] = basin
				p["sub_basin"] = nil
				if c.chance(0.7) {
					p["sub_basin"] = c.waterway()
				}
				p["mapping_method"] = weighted(c.r, []string{"Floodplain assessment overlay", "Detailed flood study", "Historical flood extent"}, []float64{80, 12, 8})
				p["edition_year"] = weighted(c.r, []int64{2013, 2017, 2021}, []float64{70, 20, 10})
				p["area_ha"] = c.area()
				p["last_reviewed"] = nil
				if c.chance(0.4) {
					p["last_reviewed"] = c.date("2014-01-01", "2023-12-31")
				}
			},
		},
		{
			ID: "bom-flood-warning-gauges", Section: "flood",
			Name:          "Flood warning river gauges",
			Description:   "River level gauges of the Bureau of Meteorology flood warning network, with the minor, moderate and major flood classification levels.",
			SchemaVersion: "2024.1", Prefix: "BOMFW", Weight: 0.3, RadiusMaxM: 10000,
			Coverage: "AUS", Jurisdictions: []string{"AUS"}, GeomTypes: points, Place: mixed,
			Geom: geomSpec{Kind: "point", Spread: 3000, MaxSpread: 8000},
			Fields: []fieldDef{
				str("station_number", "Bureau station number"),
				str("station_name", "Station name"),
				str("river", "River or creek gauged"),
				number("minor_flood_m", "Minor flood level").null().unit("m"),
				number("moderate_flood_m", "Moderate flood level").null().unit("m"),
				number("major_flood_m", "Major flood level").null().unit("m"),
				enum("gauge_datum", "Datum of the levels", "Local gauge height", "AHD"),
				boolean("telemetered", "Whether the gauge reports automatically"),
				date("commissioned", "Date the gauge was commissioned").null(),
			},
			Sources: sources(src{
				Variant: "bom-fwn-gauges-2024-01", Scope: "Australia",
				Provider:  "Bureau of Meteorology",
				URL:       "https://www.bom.gov.au/water/floods/floodWarningServices.shtml",
				Published: "2024-01-15", Effective: "2024-01-15", Retrieved: "2024-01-22T10:11:12Z", Licence: ccby4,
				Attribution: "© Commonwealth of Australia (Bureau of Meteorology) 2024",
			}),
			Props: func(c *fctx, p map[string]any) {
				river := c.waterway()
				p["station_number"] = fmt.Sprintf("%06d", 40_000+c.index*13)
				p["station_name"] = river + " at " + c.loc.Title
				p["river"] = river
				p["minor_flood_m"], p["moderate_flood_m"], p["major_flood_m"] = nil, nil, nil
				if c.chance(0.85) {
					minor := c.num(1, 8, 2)
					p["minor_flood_m"] = minor
					p["moderate_flood_m"] = round(minor+between(c.r, 0.5, 3), 2)
					p["major_flood_m"] = round(minor+between(c.r, 3.2, 8), 2)
				}
				p["gauge_datum"] = weighted(c.r, []string{"Local gauge height", "AHD"}, []float64{70, 30})
				p["telemetered"] = c.chance(0.8)
				p["commissioned"] = nil
				if c.chance(0.7) {
					p["commissioned"] = c.date("1950-01-01", "2022-12-31")
				}
			},
		},
		// ---- bushfire ----
		{
			ID: "nsw-bushfire-prone-land", Section: "bushfire",
			Name:          "NSW bush fire prone land",
			Description:   "Land certified by the Commissioner of the NSW Rural Fire Service as bush fire prone: vegetation categories 1 to 3 and the buffer around them. Development on this land must meet Planning for Bush Fire Protection.",
			SchemaVersion: "2024-01", Prefix: "NSWBFPL", Weight: 6, RadiusMaxM: 1000,
			Coverage: "state:NSW", Jurisdictions: []string{"NSW"}, GeomTypes: polygons, Place: fringe,
			Geom: geomSpec{Kind: "polygon", Spread: 3500, MaxSpread: 8000, RMin: 150, RMax: 2500, VMin: 20, VMax: 56, Rough: 1, HoleP: 0.2, MultiP: 0.2},
			Fields: []fieldDef{
				enum("category", "Bush fire prone land category", "Vegetation Category 1", "Vegetation Category 2", "Vegetation Category 3", "Vegetation Buffer"),
				str("vegetation_formation", "Dominant vegetation formation (Keith 2004)").null(),
				str("lga", "Local government area").null(),
				date("certified_date", "Date the map was certified"),
				number("area_ha", "Area").min(0).unit("ha"),
			},
			Sources: sources(src{
				Variant: "nsw-rfs-bfpl-2024-01", Scope: "New South Wales",
				Provider:  "NSW Rural Fire Service",
				URL:       "https://www.rfs.nsw.gov.au/plan-and-prepare/building-in-a-bush-fire-area/planning-for-bush-fire-protection/bush-fire-prone-land",
				Published: "2024-01-29", Effective: "2024-01-29", Retrieved: "2024-02-03T07:45:00Z", Licence: ccby4,
				Attribution: "© State of New South Wales (NSW Rural Fire Service) 2024",
			}),
			Props: func(c *fctx, p map[string]any) {
				cat := weighted(c.r, []string{"Vegetation Category 1", "Vegetation Category 2", "Vegetation Category 3", "Vegetation Buffer"}, []float64{35, 15, 20, 30})
				p["category"] = cat
				p["vegetation_formation"] = nil
				if cat != "Vegetation Buffer" {
					p["vegetation_formation"] = oneOf(c.r, vegetationFormations)
				}
				p["lga"] = c.lga()
				p["certified_date"] = c.date("2009-01-01", "2024-01-29")
				p["area_ha"] = c.area()
			},
		},
		{
			ID: "vic-bushfire-management-overlay", Section: "bushfire",
			Name:          "Victoria Bushfire Management Overlay",
			Description:   "Areas where the Bushfire Management Overlay of a Victorian planning scheme applies because of extreme bushfire hazard, with the bushfire attack level a new dwelling must be built to.",
			SchemaVersion: "2023-09", Prefix: "VICBMO", Weight: 3, RadiusMaxM: 1000,
			Coverage: "state:VIC", Jurisdictions: []string{"VIC"}, GeomTypes: []string{"Polygon"}, Place: fringe,
			Geom: geomSpec{Kind: "polygon", Spread: 3500, MaxSpread: 8000, RMin: 200, RMax: 3000, VMin: 20, VMax: 56, Rough: 1, HoleP: 0.15},
			Fields: []fieldDef{
				enum("zone_code", "Overlay code", "BMO", "BMO1", "BMO2"),
				str("planning_scheme", "Planning scheme the overlay is part of"),
				date("gazettal_date", "Date the overlay was gazetted"),
				enum("bal_rating", "Bushfire attack level for new dwellings", "BAL-12.5", "BAL-19", "BAL-29", "BAL-40", "BAL-FZ").null(),
				integer("defendable_space_m", "Defendable space required around a dwelling").null().min(0).unit("m"),
				number("area_ha", "Area").min(0).unit("ha"),
			},
			Sources: sources(src{
				Variant: "vic-dtp-bmo-2023-09", Scope: "Victoria",
				Provider:  "Victorian Department of Transport and Planning",
				URL:       "https://discover.data.vic.gov.au/dataset/vicmap-planning-planning-scheme-overlay-polygon",
				Published: "2023-09-11", Effective: "2023-09-07", Retrieved: "2023-10-02T23:59:59Z", Licence: ccby4,
				Attribution: "© State of Victoria (Department of Transport and Planning) 2023",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["zone_code"] = weighted(c.r, []string{"BMO", "BMO1", "BMO2"}, []float64{80, 15, 5})
				p["planning_scheme"] = c.lgaName() + " Planning Scheme"
				p["gazettal_date"] = c.date("2011-11-18", "2023-09-07")
				p["bal_rating"], p["defendable_space_m"] = nil, nil
				if c.chance(0.75) {
					p["bal_rating"] = weighted(c.r, []string{"BAL-12.5", "BAL-19", "BAL-29", "BAL-40", "BAL-FZ"}, []float64{25, 30, 25, 12, 8})
					p["defendable_space_m"] = weighted(c.r, []int64{10, 19, 30, 41, 50, 150}, []float64{10, 20, 30, 20, 15, 5})
				}
				p["area_ha"] = c.area()
			},
		},
		// ---- soils ----
		{
			ID: "au-atlas-acid-sulfate-soils", Section: "soils",
			Name:          "Atlas of Australian Acid Sulfate Soils",
			Description:   "Probability of acid sulfate soils occurring, mapped for the coastal zone and inland wetlands of Australia. Disturbing these soils releases sulfuric acid and metals.",
			SchemaVersion: "2.3", Prefix: "ASRIS", Weight: 4, RadiusMaxM: 2000,
			Coverage: "AUS", Jurisdictions: []string{"AUS"}, GeomTypes: polygons, Place: coastal,
			Geom: geomSpec{Kind: "polygon", Spread: 4000, MaxSpread: 9000, RMin: 200, RMax: 4000, VMin: 20, VMax: 64, Rough: 1, HoleP: 0.35, MultiP: 0.2},
			Fields: []fieldDef{
				enum("probability_class", "Probability of occurrence", "High probability of occurrence", "Low probability of occurrence", "Extremely low probability of occurrence"),
				str("map_unit", "Atlas map unit code"),
				enum("landform", "Landform", "Coastal floodplain", "Estuarine", "Tidal flat", "Coastal swamp", "Dune swale", "Inland lake", "Wetland"),
				number("depth_to_ass_m", "Depth to acid sulfate soil below the surface").null().min(0).unit("m"),
				integer("confidence", "Mapping confidence, 1 (high) to 4 (low)").min(1).max(4).unit("-"),
				number("area_ha", "Area").min(0).unit("ha"),
				date("mapped_date", "Date the unit was mapped"),
			},
			Sources: sources(src{
				Variant: "csiro-asris-ass-atlas-2.3", Scope: "Australia (coastal zone and inland wetlands)",
				Provider:  "CSIRO, Australian Soil Resource Information System",
				URL:       "https://www.asris.csiro.au/themes/AcidSulfateSoils.html",
				Published: "2022-08-01", Effective: "2022-08-01", Retrieved: "2024-03-11T02:30:00Z", Licence: ccby4,
				Attribution: "© CSIRO Australia 2022",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["probability_class"] = weighted(c.r, []string{"High probability of occurrence", "Low probability of occurrence", "Extremely low probability of occurrence"}, []float64{45, 35, 20})
				p["map_unit"] = c.pick("A", "B", "C") + strconv.Itoa(intBetween(c.r, 1, 4)) + c.pick("", "a", "b", "(p)", "(s)")
				p["landform"] = c.pick("Coastal floodplain", "Estuarine", "Tidal flat", "Coastal swamp", "Dune swale", "Inland lake", "Wetland")
				p["depth_to_ass_m"] = nil
				if c.chance(0.7) {
					p["depth_to_ass_m"] = c.num(0, 5, 1)
				}
				p["confidence"] = c.int(1, 4)
				p["area_ha"] = c.area()
				p["mapped_date"] = c.date("1998-01-01", "2021-12-31")
			},
		},
		{
			ID: "wa-acid-sulfate-soil-risk", Section: "soils",
			Name:          "Acid sulfate soil risk map, Swan Coastal Plain",
			Description:   "Risk of acid sulfate soils within 3 m of the natural soil surface on the Swan Coastal Plain (Perth and Peel). Covers the Swan Coastal Plain only.",
			SchemaVersion: "2017-1", Prefix: "WAASS", Weight: 1.5, RadiusMaxM: 2000,
			Coverage: "region:perth-peel", Jurisdictions: []string{"WA"}, GeomTypes: []string{"Polygon"}, Place: mixed,
			Geom: geomSpec{Kind: "polygon", Spread: 2500, MaxSpread: 6000, RMin: 100, RMax: 1500, VMin: 16, VMax: 48, Rough: 0.8, HoleP: 0.1},
			Fields: []fieldDef{
				enum("risk_class", "Risk class",
					"Class 1 - High to moderate risk of ASS occurring within 3m of natural soil surface",
					"Class 2 - Moderate to low risk of ASS occurring within 3m of natural soil surface"),
				number("risk_depth_m", "Depth the risk class applies to").min(0).unit("m"),
				str("soil_landscape", "Soil-landscape system").null(),
				number("area_ha", "Area").min(0).unit("ha"),
				date("published_date", "Date the map was published"),
			},
			Sources: sources(src{
				Variant: "wa-dwer-ass-risk-scp-2017", Scope: "Swan Coastal Plain, Western Australia",
				Provider:  "Western Australian Department of Water and Environmental Regulation",
				URL:       "https://catalogue.data.wa.gov.au/dataset/acid-sulfate-soil-risk-map-swan-coastal-plain",
				Published: "2017-04-12", Effective: "2017-04-12", Retrieved: "2024-02-27T08:08:08Z", Licence: ccby4,
				Attribution: "© Government of Western Australia (Department of Water and Environmental Regulation) 2017",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["risk_class"] = c.pick("Class 1 - High to moderate risk of ASS occurring within 3m of natural soil surface",
					"Class 2 - Moderate to low risk of ASS occurring within 3m of natural soil surface")
				p["risk_depth_m"] = 3.0
				p["soil_landscape"] = nil
				if c.chance(0.8) {
					p["soil_landscape"] = c.pick("Bassendean", "Spearwood", "Quindalup", "Pinjarra", "Swan Estuary", "Vasse")
				}
				p["area_ha"] = c.area()
				p["published_date"] = "2017-04-12"
			},
		},
		// ---- heritage ----
		{
			ID: "nsw-state-heritage-register", Section: "heritage",
			Name:          "NSW State Heritage Register curtilages",
			Description:   "Curtilages of items listed on the NSW State Heritage Register under the Heritage Act 1977: places and objects of state heritage significance.",
			SchemaVersion: "1.2", Prefix: "NSWSHR", Weight: 1, RadiusMaxM: 1000,
			Coverage: "state:NSW", Jurisdictions: []string{"NSW"}, GeomTypes: polygons, Place: urban,
			Geom: geomSpec{Kind: "polygon", Spread: 1500, MaxSpread: 4000, RMin: 20, RMax: 250, VMin: 6, VMax: 14, Rough: 0.4, MultiP: 0.05},
			Fields: []fieldDef{
				str("shr_number", "State Heritage Register listing number"),
				str("item_name", "Name of the item"),
				enum("item_type", "Type of item", "Built", "Landscape", "Archaeological-Terrestrial", "Complex / Group", "Movable / Collection"),
				enum("listing_status", "Listing status", "Listed", "Interim heritage order"),
				date("gazette_date", "Date the listing was gazetted"),
				str("address", "Street address").null(),
				str("suburb", "Suburb or town"),
				str("lga", "Local government area").null(),
				number("curtilage_area_m2", "Area of the curtilage").min(0).unit("m2"),
			},
			Sources: sources(src{
				Variant: "nsw-heritage-shr-2024-02", Scope: "New South Wales",
				Provider:  "Heritage NSW",
				URL:       "https://www.hms.heritage.nsw.gov.au/App/Item/SearchHeritageItems",
				Published: "2024-02-22", Effective: "2024-02-16", Retrieved: "2024-03-01T00:00:01Z", Licence: ccby4,
				Attribution: "© State of New South Wales (Heritage NSW) 2024",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["shr_number"] = fmt.Sprintf("%05d", c.index)
				p["item_name"] = c.loc.Title + " " + oneOf(c.r, heritageItems)
				p["item_type"] = weighted(c.r, []string{"Built", "Landscape", "Archaeological-Terrestrial", "Complex / Group", "Movable / Collection"}, []float64{60, 10, 8, 20, 2})
				p["listing_status"] = weighted(c.r, []string{"Listed", "Interim heritage order"}, []float64{97, 3})
				p["gazette_date"] = c.date("1999-04-02", "2024-02-16")
				p["address"] = nil
				if c.chance(0.85) {
					p["address"] = c.street()
				}
				p["suburb"] = c.loc.Name
				p["lga"] = c.lga()
				p["curtilage_area_m2"] = c.sqm()
			},
		},
		{
			ID: "vic-heritage-register", Section: "heritage",
			Name:          "Victorian Heritage Register",
			Description:   "Places and archaeological places in the Victorian Heritage Register under the Heritage Act 2017, with their registered extents.",
			SchemaVersion: "2024-02", Prefix: "VHR", Weight: 1, RadiusMaxM: 1000,
			Coverage: "state:VIC", Jurisdictions: []string{"VIC"}, GeomTypes: polygons, Place: urban,
			Geom: geomSpec{Kind: "polygon", Spread: 1500, MaxSpread: 4000, RMin: 20, RMax: 300, VMin: 6, VMax: 16, Rough: 0.5, MultiP: 0.1},
			Fields: []fieldDef{
				str("vhr_number", "Victorian Heritage Register number, e.g. H1234"),
				str("place_name", "Name of the place"),
				enum("category", "Category", "Heritage Place", "Archaeological Place", "Heritage Object"),
				date("registered_date", "Date the place was registered"),
				integer("hermes_id", "Heritage Victoria database record").min(1).unit("-"),
				str("municipality", "Municipality"),
				number("area_m2", "Registered extent").min(0).unit("m2"),
			},
			Sources: sources(src{
				Variant: "vic-heritage-vhr-2024-02", Scope: "Victoria",
				Provider:  "Heritage Victoria",
				URL:       "https://vhd.heritagecouncil.vic.gov.au/",
				Published: "2024-02-05", Effective: "2024-02-05", Retrieved: "2024-02-12T12:00:00Z", Licence: ccby4,
				Attribution: "© State of Victoria (Heritage Victoria) 2024",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["vhr_number"] = "H" + strconv.FormatInt(c.index, 10)
				p["place_name"] = c.loc.Title + " " + oneOf(c.r, heritageItems)
				p["category"] = weighted(c.r, []string{"Heritage Place", "Archaeological Place", "Heritage Object"}, []float64{85, 13, 2})
				p["registered_date"] = c.date("1974-01-01", "2024-01-31")
				p["hermes_id"] = c.int(1000, 210000)
				p["municipality"] = c.lgaName()
				p["area_m2"] = c.sqm()
			},
		},
		{
			ID: "au-national-heritage-list", Section: "heritage",
			Name:          "National and Commonwealth Heritage Lists",
			Description:   "Places on the National Heritage List and the Commonwealth Heritage List under the Environment Protection and Biodiversity Conservation Act 1999.",
			SchemaVersion: "2023-12", Prefix: "NHL", Weight: 0.2, RadiusMaxM: 5000,
			Coverage: "AUS", Jurisdictions: []string{"AUS"}, GeomTypes: []string{"MultiPolygon"}, Place: mixed,
			Geom: geomSpec{Kind: "polygon", Spread: 5000, MaxSpread: 12000, RMin: 100, RMax: 5000, VMin: 12, VMax: 40, Rough: 0.8, HoleP: 0.1, MultiP: 1},
			Fields: []fieldDef{
				integer("place_id", "Australian Heritage Database place id").min(1).unit("-"),
				str("place_name", "Name of the place"),
				enum("list", "List", "National Heritage List", "Commonwealth Heritage List"),
				enum("class", "Heritage class", "Historic", "Natural", "Indigenous"),
				enum("legal_status", "Legal status", "Listed place", "Within listed place", "Nominated place"),
				date("listed_date", "Date the place was listed"),
				enum("state", "State or territory", "ACT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA"),
				number("area_ha", "Area").min(0).unit("ha"),
			},
			Sources: sources(src{
				Variant: "dcceew-ahd-nhl-chl-2023-12", Scope: "Australia",
				Provider:  "Department of Climate Change, Energy, the Environment and Water",
				URL:       "https://www.dcceew.gov.au/parks-heritage/heritage/places/national-heritage-list",
				Published: "2023-12-08", Effective: "2023-12-01", Retrieved: "2024-01-16T03:33:33Z", Licence: "CC-BY-3.0-AU",
				Attribution: "© Commonwealth of Australia (Department of Climate Change, Energy, the Environment and Water) 2023",
				NotReport:   true,
			}),
			Props: func(c *fctx, p map[string]any) {
				p["place_id"] = 100000 + c.index*7
				p["place_name"] = c.loc.Title + " " + c.pick("Historic Precinct", "Cultural Landscape", "Wetlands", "Conservation Area", "Rock Art Sites", "Defence Precinct", "Goldfields")
				p["list"] = c.pick("National Heritage List", "Commonwealth Heritage List")
				p["class"] = weighted(c.r, []string{"Historic", "Natural", "Indigenous"}, []float64{60, 25, 15})
				p["legal_status"] = weighted(c.r, []string{"Listed place", "Within listed place", "Nominated place"}, []float64{80, 12, 8})
				p["listed_date"] = c.date("2004-05-20", "2023-11-30")
				p["state"] = c.loc.State
				p["area_ha"] = c.area()
			},
		},
		// ---- water ----
		{
			ID: "au-groundwater-bores", Section: "water",
			Name:          "Groundwater bores (National Groundwater Information System)",
			Description:   "Registered water bores from the state and territory bore databases, compiled in the Bureau of Meteorology's National Groundwater Information System.",
			SchemaVersion: "1.3", Prefix: "NGIS", Weight: 30, RadiusMaxM: 5000,
			Coverage: "AUS", Jurisdictions: []string{"AUS"}, GeomTypes: points, Place: mixed,
			Geom: geomSpec{Kind: "point", Spread: 5000, MaxSpread: 15000},
			Fields: []fieldDef{
				str("bore_id", "Bore identifier in the state's register"),
				enum("state", "State or territory", "ACT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA"),
				date("drilled_date", "Date drilling finished").null(),
				number("bore_depth_m", "Drilled depth").null().min(0).unit("m"),
				number("standing_water_level_m", "Depth to water below ground").null().min(0).unit("m"),
				number("salinity_tds_mg_l", "Total dissolved solids").null().min(0).unit("mg/L"),
				number("yield_l_s", "Tested yield").null().min(0).unit("L/s"),
				enum("purpose", "Purpose", "Stock and domestic", "Irrigation", "Monitoring", "Town water supply", "Industrial", "Exploration", "Unknown"),
				enum("status", "Status", "Functional", "Abandoned", "Decommissioned", "Unknown"),
				enum("aquifer_type", "Aquifer type", "Unconfined", "Confined", "Semi-confined", "Fractured rock").null(),
				dateTime("last_measured_at", "When the water level was last measured").null(),
			},
			Sources: sources(src{
				Variant: "bom-ngis-bores-2024-02", Scope: "Australia",
				Provider:  "Bureau of Meteorology",
				URL:       "https://www.bom.gov.au/water/groundwater/ngis/",
				Published: "2024-02-26", Effective: "2024-01-31", Retrieved: "2024-03-04T06:00:00Z", Licence: ccby4,
				Attribution: "© Commonwealth of Australia (Bureau of Meteorology) 2024, with data from state and territory water agencies",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["bore_id"] = boreID(c)
				p["state"] = c.loc.State
				p["drilled_date"] = nil
				if c.chance(0.75) {
					p["drilled_date"] = c.date("1900-01-01", "2023-12-31")
				}
				depth := 0.0
				p["bore_depth_m"] = nil
				if c.chance(0.9) {
					depth = c.logNum(3.7, 0.8, 1)
					p["bore_depth_m"] = depth
				}
				p["standing_water_level_m"] = nil
				if c.chance(0.6) {
					swl := c.logNum(2.3, 0.9, 2)
					if depth > 0 && swl > depth {
						swl = round(depth*between(c.r, 0.1, 0.9), 2)
					}
					p["standing_water_level_m"] = swl
				}
				p["salinity_tds_mg_l"] = nil
				if c.chance(0.35) {
					p["salinity_tds_mg_l"] = c.logNum(7.3, 1.1, 0)
				}
				p["yield_l_s"] = nil
				if c.chance(0.4) {
					p["yield_l_s"] = c.logNum(0, 1.2, 2)
				}
				p["purpose"] = weighted(c.r, []string{"Stock and domestic", "Irrigation", "Monitoring", "Town water supply", "Industrial", "Exploration", "Unknown"}, []float64{45, 10, 20, 2, 3, 8, 12})
				p["status"] = weighted(c.r, []string{"Functional", "Abandoned", "Decommissioned", "Unknown"}, []float64{55, 15, 10, 20})
				p["aquifer_type"] = nil
				if c.chance(0.55) {
					p["aquifer_type"] = c.pick("Unconfined", "Confined", "Semi-confined", "Fractured rock")
				}
				p["last_measured_at"] = nil
				if c.chance(0.3) {
					p["last_measured_at"] = c.dateTime("2010-01-01", "2024-01-31")
				}
			},
		},
		{
			ID: "au-surface-hydrology-lines", Section: "water",
			Name:          "Surface hydrology lines (national)",
			Description:   "Watercourses, canals and drains of Australia from the national surface hydrology dataset, with perenniality and Strahler stream order.",
			SchemaVersion: "3.0", Prefix: "AHGF", Weight: 25, RadiusMaxM: 2000,
			Coverage: "AUS", Jurisdictions: []string{"AUS"}, GeomTypes: lines, Place: rural,
			Geom: geomSpec{Kind: "line", Spread: 8000, MaxSpread: 20000, Step: 150, NMin: 8, NMax: 60, LongP: 0.01, MultiP: 0.1},
			Fields: []fieldDef{
				str("name", "Name of the watercourse").null(),
				enum("feature_type", "Feature type", "Watercourse", "Canal", "Drain", "Connector"),
				enum("perenniality", "Perenniality", "Perennial", "Non Perennial"),
				enum("hierarchy", "Hierarchy", "Major", "Minor"),
				integer("stream_order", "Strahler stream order").min(1).max(12).unit("-"),
				number("length_km", "Length").min(0).unit("km"),
				number("upstream_area_km2", "Catchment area upstream of the outlet").null().min(0).unit("km2"),
				date("source_date", "Date of the source capture").null(),
			},
			Sources: sources(src{
				Variant: "ga-surface-hydrology-lines-2015-r3", Scope: "Australia",
				Provider:  "Geoscience Australia",
				URL:       "https://ecat.ga.gov.au/geonetwork/srv/eng/catalog.search#/metadata/83130",
				Published: "2015-10-16", Effective: "2015-10-16", Retrieved: "2024-01-30T01:00:00Z", Licence: ccby4,
				Attribution: "© Commonwealth of Australia (Geoscience Australia) 2015",
			}),
			Props: func(c *fctx, p map[string]any) {
				long := c.lengthKm > 100
				p["name"] = nil
				if long || c.chance(0.55) {
					p["name"] = c.waterway()
				}
				p["feature_type"] = weighted(c.r, []string{"Watercourse", "Canal", "Drain", "Connector"}, []float64{88, 3, 6, 3})
				p["perenniality"] = weighted(c.r, []string{"Perennial", "Non Perennial"}, []float64{25, 75})
				order := int64(1 + math.Min(5, math.Floor(logNormal(c.r, 0, 0.7))))
				if long {
					order = c.int(6, 9)
				}
				p["hierarchy"] = "Minor"
				if order >= 5 {
					p["hierarchy"] = "Major"
				}
				p["stream_order"] = order
				p["length_km"] = math.Max(0.001, round(c.lengthKm, 3))
				p["upstream_area_km2"] = nil
				if c.chance(0.6) {
					p["upstream_area_km2"] = round(c.lengthKm*between(c.r, 0.5, 4)*float64(order), 2)
				}
				p["source_date"] = nil
				if c.chance(0.5) {
					p["source_date"] = c.date("1985-01-01", "2014-12-31")
				}
			},
		},
		// ---- biodiversity ----
		{
			ID: "seq-koala-habitat-areas", Section: "biodiversity",
			Name:          "South East Queensland koala habitat areas",
			Description:   "Koala habitat areas and koala priority areas mapped under the South East Queensland Koala Conservation Strategy. Covers South East Queensland only.",
			SchemaVersion: "2020-2", Prefix: "SEQKHA", Weight: 2, RadiusMaxM: 1000,
			Coverage: "region:seq", Jurisdictions: []string{"QLD"}, GeomTypes: polygons, Place: fringe,
			Geom: geomSpec{Kind: "polygon", Spread: 3000, MaxSpread: 7000, RMin: 80, RMax: 1500, VMin: 16, VMax: 48, Rough: 0.9, HoleP: 0.15, MultiP: 0.1},
			Fields: []fieldDef{
				enum("habitat_category", "Habitat category", "Core koala habitat area", "Locally refined koala habitat area", "Koala habitat restoration area"),
				boolean("koala_priority_area", "Whether the area is within a koala priority area"),
				str("regional_ecosystem", "Dominant regional ecosystem").null(),
				str("lga", "Local government area").null(),
				number("area_ha", "Area").min(0).unit("ha"),
				date("effective_date", "Date the mapping took effect"),
			},
			Sources: sources(src{
				Variant: "qld-des-seq-koala-2020-v2", Scope: "South East Queensland",
				Provider:  "Queensland Government",
				URL:       "https://www.qld.gov.au/environment/plants-animals/animals/koalas/mapping",
				Published: "2020-02-07", Effective: "2020-02-07", Retrieved: "2024-02-20T21:15:00Z", Licence: ccby4,
				Attribution: "© State of Queensland (Department of Environment and Science) 2020",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["habitat_category"] = weighted(c.r, []string{"Core koala habitat area", "Locally refined koala habitat area", "Koala habitat restoration area"}, []float64{70, 10, 20})
				p["koala_priority_area"] = c.chance(0.45)
				p["regional_ecosystem"] = nil
				if c.chance(0.8) {
					p["regional_ecosystem"] = "12." + strconv.Itoa(intBetween(c.r, 1, 12)) + "." + strconv.Itoa(intBetween(c.r, 1, 20))
				}
				p["lga"] = c.lga()
				p["area_ha"] = c.area()
				p["effective_date"] = "2020-02-07"
			},
		},
		{
			ID: "au-threatened-ecological-communities", Section: "biodiversity",
			Name:          "Threatened ecological communities (EPBC Act)",
			Description:   "Modelled distribution of ecological communities listed as threatened under the Environment Protection and Biodiversity Conservation Act 1999.",
			SchemaVersion: "2024-01", Prefix: "TEC", Weight: 2, RadiusMaxM: 5000,
			Coverage: "AUS", Jurisdictions: []string{"AUS"}, GeomTypes: polygons, Place: fringe,
			Geom: geomSpec{Kind: "polygon", Spread: 6000, MaxSpread: 15000, RMin: 300, RMax: 6000, VMin: 16, VMax: 56, Rough: 1, HoleP: 0.2, MultiP: 0.4},
			Fields: []fieldDef{
				enum("community_name", "Ecological community", threatenedCommunityNames()...),
				enum("epbc_status", "EPBC Act status", "Critically Endangered", "Endangered", "Vulnerable"),
				enum("presence", "Likelihood of presence", "Community known to occur", "Community likely to occur", "Community may occur"),
				date("listed_date", "Date the community was listed"),
				number("area_ha", "Area").min(0).unit("ha"),
				enum("condition_class", "Condition class where surveyed", "A", "B", "C").null(),
			},
			Sources: sources(src{
				Variant: "dcceew-tec-snes-2024-01", Scope: "Australia",
				Provider:  "Department of Climate Change, Energy, the Environment and Water",
				URL:       "https://www.dcceew.gov.au/environment/environment-information-australia/national-environmental-information-assets/species-of-national-environmental-significance",
				Published: "2024-01-19", Effective: "2024-01-01", Retrieved: "2024-02-01T04:20:00Z", Licence: ccby4,
				Attribution: "© Commonwealth of Australia (Department of Climate Change, Energy, the Environment and Water) 2024",
			}),
			Props: func(c *fctx, p map[string]any) {
				p["community_name"] = oneOf(c.r, threatenedCommunitiesIn(c.loc.State))
				p["epbc_status"] = weighted(c.r, []string{"Critically Endangered", "Endangered", "Vulnerable"}, []float64{40, 50, 10})
				p["presence"] = weighted(c.r, []string{"Community known to occur", "Community likely to occur", "Community may occur"}, []float64{30, 40, 30})
				p["listed_date"] = c.date("2000-07-16", "2023-12-31")
				p["area_ha"] = c.area()
				p["condition_class"] = nil
				if c.chance(0.3) {
					p["condition_class"] = c.pick("A", "B", "C")
				}
			},
		},
	}
	sortSpecs(ls)
	return ls
}

var qldActivities = []string{
	"Petroleum product or oil storage", "Landfill", "Chemical storage", "Mine wastes",
	"Waste storage, treatment or disposal", "Service station", "Livestock dip or spray race operations",
	"Metal treatment or coating", "Asbestos manufacture or disposal", "Explosives production or storage",
}

func sortSpecs(ls []*layerSpec) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].ID < ls[j-1].ID; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// siteName names a contaminated site after its activity and locality.
func siteName(c *fctx, activity string) string {
	switch activity {
	case "Service Station":
		return c.pick("Former ", "", "") + c.pick("Caltex", "BP", "Shell", "Ampol", "Mobil", "7-Eleven", "United") + " Service Station " + c.loc.Title
	case "Gasworks":
		return "Former " + c.loc.Title + " Gasworks"
	case "Landfill":
		return c.loc.Title + " " + c.pick("Landfill", "Waste Management Facility", "Former Tip")
	case "Dry Cleaning":
		return c.loc.Title + " Dry Cleaners"
	}
	return c.pick("Former ", "") + c.loc.Title + " " + c.pick("Industrial Site", "Works", "Depot", "Factory", "Timber Yard", "Railway Yard")
}

// boreID is a bore number in the style of the bore's state register.
func boreID(c *fctx) string {
	n := c.index
	switch c.loc.State {
	case "NSW":
		return fmt.Sprintf("GW%06d", n)
	case "QLD":
		return fmt.Sprintf("RN%08d", 10_000_000+n)
	case "VIC":
		return fmt.Sprintf("WRK%06d", n)
	case "SA":
		return fmt.Sprintf("%04d-%05d", 5000+n/100_000, n%100_000)
	case "WA":
		return fmt.Sprintf("%08d", 60_000_000+n)
	case "NT":
		return fmt.Sprintf("RN%06d", n)
	case "TAS":
		return fmt.Sprintf("TAS%06d", n)
	}
	return fmt.Sprintf("ACT%06d", n)
}
