package queries

import (
	"fmt"

	"siteenv/ledger"
)

// LayerError is a layer of the request (LayerIDs[Index]) that does not
// exist or that the key may not use: the two are answered alike, so a
// restricted key learns nothing of layers it may not see. It is
// ledger.ErrNotFound.
type LayerError struct {
	Index int
	ID    string
}

func (e *LayerError) Error() string { return fmt.Sprintf("queries: layer %s: not found", e.ID) }
func (e *LayerError) Unwrap() error { return ledger.ErrNotFound }

// SectionError is a paid section the site lacks, needed by the request's
// LayerIDs[Index].
type SectionError struct {
	Index          int
	Layer, Section string
}

func (e *SectionError) Error() string {
	return fmt.Sprintf("queries: layer %s: section %s not acquired for the site", e.Layer, e.Section)
}

// RadiusError is a radius over the limit of one or more of the request's
// layers.
type RadiusError struct{ Over []RadiusOver }

// RadiusOver is one layer's radius limit that the request exceeds.
type RadiusOver struct {
	Layer string
	MaxM  float64
}

func (e *RadiusError) Error() string { return "queries: radius over a layer's limit" }

// Permitted refuses the first of layerIDs that the principal may not use
// (LayerError), as Freeze does: a replay's check (a stored query's
// layers are its request's, the fingerprint being the same).
func Permitted(p ledger.Principal, layerIDs []string) error {
	for i, id := range layerIDs {
		if !p.PermitsDataset(id) {
			return &LayerError{Index: i, ID: id}
		}
	}
	return nil
}

// Freeze checks the ask's layers against the catalogue, in the order of
// the request, and returns them as the query freezes them: a layer the key
// may not use or that does not exist is a LayerError, a section the site
// lacks a SectionError (granted nil: not checked; the sections that must
// be granted are returned instead), a radius over a layer's limit a
// RadiusError.
func Freeze(p ledger.Principal, ask Ask, catalogue map[string]ledger.LayerRelease, granted func(section string) bool) ([]ledger.FrozenLayer, []string, error) {
	var frozen []ledger.FrozenLayer
	var sections []string
	var over []RadiusOver
	for i, id := range ask.LayerIDs {
		lr, ok := catalogue[id]
		if !ok || !p.PermitsDataset(id) {
			return nil, nil, &LayerError{Index: i, ID: id}
		}
		y := lr.Layer
		if y.SectionPrice > 0 {
			if granted == nil {
				sections = append(sections, y.SectionKey)
			} else if !granted(y.SectionKey) {
				return nil, nil, &SectionError{Index: i, Layer: id, Section: y.SectionKey}
			}
		}
		if ask.RadiusM > y.RadiusMaxM {
			over = append(over, RadiusOver{Layer: id, MaxM: y.RadiusMaxM})
		}
		fl := ledger.FrozenLayer{LayerID: id, SectionKey: y.SectionKey, SchemaVersion: y.SchemaVersion, FieldSchema: y.FieldSchema,
			Sources: y.Sources, Coverage: y.Coverage, ReleaseID: y.CurrentReleaseID}
		if y.CurrentReleaseID != nil {
			// Freeze the release's own captured schema and provenance.
			rel := lr.Release
			if rel == nil {
				return nil, nil, fmt.Errorf("queries: layer %s: current release %s: %w", id, *y.CurrentReleaseID, ledger.ErrNotFound)
			}
			fl.SchemaVersion, fl.FieldSchema, fl.Sources, fl.Coverage = rel.SchemaVersion, rel.FieldSchema, rel.Sources, rel.Coverage
		}
		frozen = append(frozen, fl)
	}
	if len(over) > 0 {
		return nil, nil, &RadiusError{Over: over}
	}
	return frozen, sections, nil
}
