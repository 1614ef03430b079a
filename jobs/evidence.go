package jobs

import (
	"time"

	"siteenv/tiles"
)

// EvidenceVersion names the shape of Evidence; a change to it changes this.
const EvidenceVersion = "evidence-3"

// Evidence is a report revision's frozen evidence: what every line of its
// PDF rests on, stored with the revision (ledger.Revision.Evidence) and
// served as data by GET /reports/{id}, so a client can verify or re-plot
// every line of the PDF.
type Evidence struct {
	Version string       `json:"version"`
	BuiltAt time.Time    `json:"built_at"`
	Site    EvidenceSite `json:"site"`
	// PreviousRevisionID is the revision the Changes compare against; nil
	// for a first revision.
	PreviousRevisionID *string         `json:"previous_revision_id"`
	Layers             []EvidenceLayer `json:"layers"`
	// SiteProfile names the listed features on the site itself, whatever
	// their layer (nil in evidence-1).
	SiteProfile []EvidenceKeyed `json:"site_profile,omitempty"`
}

// EvidenceKeyed names a listed feature by its map key.
type EvidenceKeyed struct {
	MapKey    int    `json:"map_key"`
	LayerID   string `json:"layer_id"`
	FeatureID string `json:"feature_id"`
}

// EvidenceLocation is where the site is, as the cover states it.
type EvidenceLocation struct {
	Longitude float64 `json:"longitude"`
	Latitude  float64 `json:"latitude"`
	// MGA2020 zone and grid coordinates of the centroid; nil outside
	// zones 46-59.
	MGAZone  *int     `json:"mga_zone"`
	Easting  *float64 `json:"easting"`
	Northing *float64 `json:"northing"`
	// Addresses and LotPlans of the cadastral parcels making up the site.
	Addresses []string `json:"addresses"`
	LotPlans  []string `json:"lot_plans"`
	// LGAs are the local government areas of those addresses, as the
	// cover's line names them (empty: none held; nil before evidence-3).
	LGAs []string `json:"local_government_areas"`
	// TimeZone the cover's time is given in ("" when unknown: UTC).
	TimeZone string `json:"time_zone"`
}

// EvidenceBand is one distance band of a layer's statistical profile:
// features with min_m < distance <= max_m ("on_site": distance 0). Count
// is nil for a band beyond the layer's search distance (not searched).
type EvidenceBand struct {
	Band  string  `json:"band"`
	MinM  float64 `json:"min_m"`
	MaxM  float64 `json:"max_m"`
	Count *int64  `json:"count"`
}

// EvidenceBandChange is a band whose count changed since the previous
// revision.
type EvidenceBandChange struct {
	Band          string `json:"band"`
	PreviousCount *int64 `json:"previous_count"`
	Count         *int64 `json:"count"`
}

// EvidenceSite is the site as the report saw it.
type EvidenceSite struct {
	SiteID       string  `json:"site_id"`
	Name         *string `json:"name"`
	Fingerprint  string  `json:"fingerprint"`
	AreaM2       float64 `json:"area_m2"`
	Jurisdiction string  `json:"jurisdiction"`
	// Location: nil in evidence-1.
	Location *EvidenceLocation `json:"location,omitempty"`
}

// EvidenceLayer is one layer's frozen evidence.
type EvidenceLayer struct {
	LayerID     string `json:"layer_id"`
	Name        string `json:"name"`
	SectionKey  string `json:"section_key"`
	SectionName string `json:"section_name"`
	// ReleaseID and SchemaVersion are nil when the layer had no release.
	ReleaseID     *string `json:"release_id"`
	SchemaVersion *string `json:"schema_version"`
	RadiusM       float64 `json:"radius_m"`
	// DataStatus, Reason and Coverage as in a query result's layer.
	DataStatus string  `json:"data_status"`
	Reason     *string `json:"reason"`
	Coverage   string  `json:"coverage"`
	// MatchedCount is nil when unknown (the layer was unavailable).
	MatchedCount *int64               `json:"matched_feature_count"`
	Provenance   []EvidenceProvenance `json:"provenance"`
	// Bands are the statistical profile's counts; they sum to
	// MatchedCount. Nil when the count is unknown (and in evidence-1).
	Bands []EvidenceBand `json:"bands,omitempty"`
	// MapRadiusM is the distance the section map draws; NotDrawn the map
	// keys of listed features beyond it.
	MapRadiusM float64 `json:"map_radius_m,omitempty"`
	NotDrawn   []int   `json:"not_drawn_keys,omitempty"`
	// DetailM is the layer's detail distance: its features within it are
	// the PDF's record cards, those beyond rows of its appendix.
	DetailM float64 `json:"detail_m,omitempty"`
	// Features are every matched feature, nearest first, each keyed and
	// listed in the PDF.
	Features []EvidenceFeature `json:"features"`
	// Changes against the previous revision; nil for a first revision.
	Changes *EvidenceChanges `json:"changes"`
}

// EvidenceProvenance is one source of the release used.
type EvidenceProvenance struct {
	ReleaseID string `json:"release_id"`
	tiles.Source
}

// EvidenceFeature is a listed feature: its stored id, its distance from the
// site and its bearing from the site's centre (nil when the site contains it).
type EvidenceFeature struct {
	FeatureID  string   `json:"feature_id"`
	DistanceM  float64  `json:"distance_m"`
	BearingDeg *float64 `json:"bearing_deg"`
	// MapKey is the feature's number on its section map or in its
	// not-drawn list, unique in the report (0 in evidence-1).
	MapKey int    `json:"map_key,omitempty"`
	OnSite bool   `json:"on_site,omitempty"`
	Drawn  bool   `json:"drawn,omitempty"`
	Band   string `json:"band,omitempty"`
	// Listed is where the PDF lists it: "card" or "appendix".
	Listed string `json:"listed,omitempty"`
}

// EvidenceChanges is what changed for a layer since the previous revision.
type EvidenceChanges struct {
	PreviousReleaseID *string `json:"previous_release_id"`
	ReleaseChanged    bool    `json:"release_changed"`
	PreviousStatus    string  `json:"previous_data_status"`
	PreviousCount     *int64  `json:"previous_matched_feature_count"`
	// AddedCount and RemovedCount count matched features (all matches, not
	// only the listed ones) that appeared and disappeared; Added and Removed
	// name them, sorted, at most MaxChangeIDs each, so the evidence stays
	// well inside a 1 MiB response (the counts are always exact).
	AddedCount   int64    `json:"added_count"`
	RemovedCount int64    `json:"removed_count"`
	Added        []string `json:"added_feature_ids"`
	Removed      []string `json:"removed_feature_ids"`
	// BandChanges are the profile bands whose counts changed.
	BandChanges []EvidenceBandChange `json:"band_changes,omitempty"`
	// Moved are listed features of both revisions whose band changed.
	Moved []EvidenceMove `json:"moved,omitempty"`
}

// EvidenceMove is a listed feature that moved between profile bands.
type EvidenceMove struct {
	FeatureID    string `json:"feature_id"`
	PreviousBand string `json:"previous_band"`
	Band         string `json:"band"`
}

// MaxChangeIDs bounds the feature ids an EvidenceChanges names per list.
const MaxChangeIDs = 200
