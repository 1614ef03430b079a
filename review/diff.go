package review

import (
	"context"
	"net/http"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/ingest"
)

// diffJSON is what the page draws: the counts, the changed features (up
// to MaxFeatures) for the table, and the features for the map: the current
// release's (up to MaxFeatures, for context) and the changes' geometries,
// each with a "role" property (current, added, removed, old, new).
type diffJSON struct {
	LayerID     string             `json:"layer_id"`
	FromRelease string             `json:"from_release"`
	ToRelease   string             `json:"to_release"`
	Summary     ingest.DiffSummary `json:"summary"`
	Changes     []changeJSON       `json:"changes"`
	// Truncated: more changes than the table and map show.
	Truncated bool `json:"truncated"`
	// CurrentTruncated: the current release has more features than drawn.
	CurrentTruncated bool                       `json:"current_truncated"`
	Map              *geojson.FeatureCollection `json:"map"`
	BBox             []float64                  `json:"bbox"` // west, south, east, north of the map's features
}

type changeJSON struct {
	Change     string         `json:"change"`
	ID         string         `json:"id"`
	What       string         `json:"what"`
	MovedM     *float64       `json:"moved_m,omitempty"`
	Properties []propertyJSON `json:"properties,omitempty"`
}

type propertyJSON struct {
	Name string `json:"name"`
	From any    `json:"from"`
	To   any    `json:"to"`
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	layer, rel := r.PathValue("layer"), r.PathValue("release")
	info, err := s.release(r.Context(), layer, rel)
	if err != nil {
		s.fail(w, err)
		return
	}
	out, err := s.buildDiff(r.Context(), layer, info.current, rel, info.features)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// buildDiff compares release to (of features features) with from, the
// current release ("" for none).
func (s *Server) buildDiff(ctx context.Context, layer, from, to string, features int64) (*diffJSON, error) {
	out := &diffJSON{LayerID: layer, FromRelease: from, ToRelease: to, Changes: []changeJSON{}, Map: geojson.NewFeatureCollection()}
	bound := orb.Bound{Min: orb.Point{180, 90}, Max: orb.Point{-180, -90}}
	add := func(g orb.Geometry, id, role string) {
		if g == nil {
			return
		}
		f := geojson.NewFeature(g)
		f.ID = id
		f.Properties["role"] = role
		out.Map.Append(f)
		bound = bound.Union(g.Bound())
	}
	max := s.opt.MaxFeatures
	if from == "" || from == to {
		// No current release: everything is added (or this is the current one).
		feats, more, err := ingest.ReleaseFeatures(ctx, s.opt.Store, layer, to, max)
		if err != nil {
			return nil, err
		}
		for _, f := range feats {
			role := "added"
			if from == to {
				role = "current"
			} else {
				out.Changes = append(out.Changes, changeJSON{Change: "added", ID: f.ID, What: "added"})
			}
			add(f.Geometry, f.ID, role)
		}
		out.Truncated = more
		out.Summary = ingest.DiffSummary{LayerID: layer, ToRelease: to, To: features}
		if from != to {
			out.Summary.Added = features
		} else {
			out.Summary.Unchanged = features
		}
	} else {
		cur, more, err := ingest.ReleaseFeatures(ctx, s.opt.Store, layer, from, max)
		if err != nil {
			return nil, err
		}
		out.CurrentTruncated = more
		for _, f := range cur {
			add(f.Geometry, f.ID, "current")
		}
		n := 0
		sum, err := ingest.DiffReleasesWith(ctx, s.opt.Store, layer, from, to, ingest.DiffOptions{Tolerance: s.opt.Tolerance,
			OnChange: func(fc ingest.FeatureChange) error {
				if n >= max {
					out.Truncated = true
					return nil
				}
				n++
				c := changeJSON{Change: fc.Change, ID: fc.ID, What: fc.What()}
				if fc.GeometryChanged && fc.MovedM >= 0 {
					m := fc.MovedM
					c.MovedM = &m
				}
				for _, p := range fc.Properties {
					c.Properties = append(c.Properties, propertyJSON{p.Name, p.From, p.To})
				}
				out.Changes = append(out.Changes, c)
				switch fc.Change {
				case "added":
					add(fc.NewGeometry, fc.ID, "added")
				case "removed":
					add(fc.OldGeometry, fc.ID, "removed")
				default:
					if fc.GeometryChanged {
						add(fc.OldGeometry, fc.ID, "old")
					}
					add(fc.NewGeometry, fc.ID, "new")
				}
				return nil
			}})
		if err != nil {
			return nil, err
		}
		out.Summary = sum
	}
	if len(out.Map.Features) > 0 {
		out.BBox = []float64{bound.Min[0], bound.Min[1], bound.Max[0], bound.Max[1]}
	}
	return out, nil
}
