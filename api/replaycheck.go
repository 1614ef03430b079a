package api

import (
	"encoding/json"
	"slices"

	"siteenv/ledger"
)

// The checks a replayed idempotent response must pass for the caller now
// (Server.idempotent): the ones of each operation that the route's own
// (a live key holding the operation's scopes) do not cover.

// sectionVisible is whether the request's key may see a section: its
// dataset restriction permits one of the section's layers (nil: no
// restriction, every section).
func sectionVisible(r *request) func(section string, layers []string) bool {
	if r.principal.DatasetIDs() == nil {
		return nil
	}
	return func(_ string, layers []string) bool { return slices.ContainsFunc(layers, r.principal.PermitsDataset) }
}

// acquisitionReplayCheck refuses the replay of an acquisition of a section
// the key may not see, as Acquire refuses a fresh one (not_found naming
// the sections).
func (s *Server) acquisitionReplayCheck(r *request, sections []string) func(ledger.IdemResponse) error {
	return func(ledger.IdemResponse) error {
		visible := sectionVisible(r)
		if visible == nil {
			return nil
		}
		layers, err := s.led.SectionLayers(r.ctx, sections)
		if err != nil {
			return err
		}
		var hidden []string
		for _, k := range sections {
			if ls, ok := layers[k]; !ok || !visible(k, ls) {
				hidden = append(hidden, k)
			}
		}
		if len(hidden) == 0 {
			return nil
		}
		return &placedError{err: &ledger.UnknownSectionsError{Keys: hidden}, place: atAcquisition, field: "site_id", items: sections}
	}
}

// storedDatasets reads the dataset_ids a stored report order names (nil:
// none, as in a Problem).
func storedDatasets(rec ledger.IdemResponse) []string {
	var body struct {
		DatasetIDs []string `json:"dataset_ids"`
	}
	if rec.Status >= 300 || json.Unmarshal(rec.Body, &body) != nil {
		return nil
	}
	return body.DatasetIDs
}
