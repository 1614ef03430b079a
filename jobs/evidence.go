package jobs

import (
	"time"

	"siteenv/tiles"
)

// EvidenceVersion names the shape of Evidence; a change to it changes this.
const EvidenceVersion = "evidence-1"

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
}

// EvidenceSite is the site as the report saw it.
type EvidenceSite struct {
	SiteID       string  `json:"site_id"`
	Name         *string `json:"name"`
	Fingerprint  string  `json:"fingerprint"`
	AreaM2       float64 `json:"area_m2"`
	Jurisdiction string  `json:"jurisdiction"`
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
	// Features are those the PDF lists, nearest first.
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
}

// MaxChangeIDs bounds the feature ids an EvidenceChanges names per list.
const MaxChangeIDs = 200
