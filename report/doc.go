package report

import "time"

// Report is everything a site report PDF states. Every number in it comes
// from these fields; the renderer computes nothing the caller cannot check.
// What goes on which page is decided by the caller (report/content).
type Report struct {
	ReportID, RevisionID string
	Revision             int
	// ReceiptID is the purchase that paid for the report.
	ReceiptID string
	// Created is the report's build time (the PDF's dates).
	Created time.Time
	Site    ReportSite
	// Locality is the cover's locality plan (the site at site scale) and
	// SearchArea the map of the search distances; a zero Map (nil Site)
	// is not drawn.
	Locality, SearchArea Map
	// Overview holds one line per section.
	Overview []OverviewLine
	// Profile is the statistical profile: one row per layer.
	Profile []ProfileRow
	// SiteProfile lists the features on the site itself, whatever their
	// layer.
	SiteProfile []Row
	Sections    []ReportSection
	// Changes against the previous revision; nil for a first revision.
	Changes []LayerChange
	// Sources is the data currency table: one row per layer used.
	Sources []SourceRow
	// Limitations are the paragraphs of the limitations and disclaimer.
	Limitations []string
}

// ReportSite describes the site as the cover prints it.
type ReportSite struct {
	Name string
	// Reference: the client's external references, "" if none.
	Reference string
	// Addresses of the parcels that make up the site, with locality,
	// state and postcode; LotPlans their lot/plan identifiers.
	Addresses, LotPlans []string
	// LGAs: the local government areas of those addresses (empty: not
	// held, and the cover says so).
	LGAs []string
	// Lon, Lat: the centroid (GDA2020); MGA its grid coordinates.
	Lon, Lat          float64
	MGAZone           int
	Easting, Northing float64
	AreaM2            float64
	Jurisdiction      string
	// Built is the build time in the site's local time, with its offset.
	Built string
}

// OverviewLine says per section whether anything was found.
type OverviewLine struct {
	Section, Key string
	// Finding: "On site", "Within 250 m", "None found", "Not covered", ...
	Finding string
	Detail  string
}

// ProfileRow is one layer's counts per distance band (see content.Bands);
// a nil count is a band beyond the layer's search distance (printed "–").
type ProfileRow struct {
	Section, Layer string
	Counts         []*int
	// Total is the matched count (nil: unknown); Note replaces the counts
	// when the layer was not searched.
	Total *int
	Note  string
	// NotCovered: the layer's data does not reach the site. Such layers
	// (another state's register, say) get no row of their own: the
	// profile names them once, below its table.
	NotCovered bool
}

// ReportSection is one section: its map, legend and layers.
type ReportSection struct {
	Key, Name string
	Map       Map
	// MapRadiusM is the distance the map draws.
	MapRadiusM float64
	// Detail, when its Site is set, is a larger-scale map of the site's
	// surroundings to DetailRadiusM: the keys of the records within that
	// distance are drawn there rather than on Map, where they would crowd
	// the site.
	Detail        Map
	DetailRadiusM float64
	Legend        []LegendEntry
	// NotCovered names the section's layers whose data does not cover the
	// site (other jurisdictions): stated once, not as empty tables.
	NotCovered []string
	// Warning is printed first, highlighted: e.g. that the service holds
	// no register of this kind for the site's jurisdiction.
	Warning string
	Layers  []ReportLayer
}

// LegendEntry is a layer drawn on a section map.
type LegendEntry struct {
	// Style is the layer's index in Map.Layers (its colour and marker).
	Style int
	Name  string
	// Kind is "point", "line" or "polygon".
	Kind string
	// Features drawn; Marks the point marks they make (a MultiPoint is one
	// feature of several marks); Keyed how many carry a map key.
	Features, Marks, Keyed int
	// ClassField and Classes: a classed polygon layer's field title and
	// its classes, each filled in ClassColour(i).
	ClassField string
	Classes    []string
}

// ReportLayer is one layer's frozen evidence as the detail pages print it.
type ReportLayer struct {
	ID, Name                 string
	ReleaseID, SchemaVersion string
	RadiusM                  float64
	// Status is data_present, no_data or unavailable; Reason the
	// contract's per-layer reason ("" when data is present).
	Status, Reason, Coverage string
	Count                    *int
	// DetailM is the distance within which records are record cards
	// (Cards: every field of the schema, in its order, titled, with units);
	// the records beyond it are rows of the appendix table (Appendix, with
	// the BriefFields). Every matched record is in one of them.
	DetailM     float64
	BriefFields []string
	Cards       []Row
	Appendix    []Row
}

// Row is a listed feature.
type Row struct {
	Key        int
	Layer      string
	ID         string
	DistanceM  float64
	BearingDeg float64 // from the site, clockwise from north; NaN on site
	OnSite     bool
	// Drawn: on its section's map (else beyond the map's frame).
	Drawn  bool
	Fields []Field
}

// Field is one printed field of a listed feature.
type Field struct{ Name, Value string }

// SourceRow is one row of the data currency table.
type SourceRow struct {
	Layer, Provider, Variant, Release   string
	Published, Effective, Retrieved     string
	Licence, Coverage, Attribution, URL string
}

// LayerChange says what changed for a layer since the previous revision.
type LayerChange struct {
	LayerID                string
	OldRelease, NewRelease string
	Added, Removed         []string // feature ids
	// AddedCount and RemovedCount count every feature that appeared or
	// disappeared when Added and Removed name only the first of them.
	AddedCount, RemovedCount int
	OldStatus, NewStatus     string
	OldCount, NewCount       *int
	// Bands that changed: "0–100 m 2 → 3".
	Bands []string
}
