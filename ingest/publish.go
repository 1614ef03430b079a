package ingest

import (
	"context"
	"encoding/json"

	"siteenv/ledger"
	"siteenv/tiles"
)

// LedgerPublisher publishes releases into the ledger catalogue: one
// transaction inserts the release and moves the layer's current release
// (or, with Stage, only inserts it: see ledger.PublishReleaseAs).
type LedgerPublisher struct {
	Ledger *ledger.Ledger
	// Stage publishes the release without making it current.
	Stage bool
	// Actor is recorded in the release audit. Default "siteenv ingest".
	Actor string
}

// Publish implements Publisher.
func (p LedgerPublisher) Publish(ctx context.Context, def *LayerDef, m *tiles.Manifest) error {
	fs, err := json.Marshal(def.FieldSchema)
	if err != nil {
		return err
	}
	units := def.Units
	if units == nil {
		units = map[string]*string{}
	}
	uj, err := json.Marshal(units)
	if err != nil {
		return err
	}
	sources, err := json.Marshal(def.Sources)
	if err != nil {
		return err
	}
	var coverage json.RawMessage
	if def.Coverage != nil {
		if coverage, err = json.Marshal(def.Coverage); err != nil {
			return err
		}
	}
	var bytes int64
	for _, t := range m.Tiles {
		bytes += t.Bytes
	}
	y := ledger.Layer{
		ID: def.LayerID, SectionKey: def.SectionKey, SectionName: def.SectionName, Name: def.Name, Description: def.Description,
		SchemaVersion: def.SchemaVersion, FieldSchema: fs, Units: uj, RadiusMaxM: def.RadiusMaxM, Sources: sources,
		Jurisdictions: def.Jurisdictions, Coverage: coverage, GeometryTypes: def.GeometryTypes, DetailM: def.DetailDistanceM,
	}
	rel := ledger.Release{
		LayerID: m.LayerID, ReleaseID: m.ReleaseID, SchemaVersion: m.SchemaVersion, FieldSchema: fs, Units: uj,
		Sources: sources, Coverage: coverage, ManifestKey: tiles.ManifestKey(m.LayerID, m.ReleaseID),
		FeatureCount: m.FeatureCount, TileCount: len(m.Tiles), Bytes: bytes,
	}
	return p.Ledger.PublishReleaseAs(ctx, y, rel, ledger.PublishMode{Stage: p.Stage, Actor: p.Actor})
}
