package ledger

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Layer is a catalogue entry: the layer's current definition, its section and
// its current release (nil before the first publication).
type Layer struct {
	ID            string
	SectionKey    string
	SectionName   string
	SectionPrice  int64
	Name          string
	Description   *string
	SchemaVersion string
	FieldSchema   json.RawMessage
	Units         json.RawMessage
	RadiusMaxM    float64
	// DetailM is the layer's own detail distance (nil: its theme's
	// default in a report).
	DetailM       *float64
	Sources       json.RawMessage
	Jurisdictions []string
	Coverage      json.RawMessage // nil: unknown (or not read: LayerFilter.WithoutCoverage)
	// HasCoverage: the layer states a coverage polygon.
	HasCoverage      bool
	GeometryTypes    []string
	CurrentReleaseID *string
	UpdatedAt        time.Time
}

// Release is one immutable source release of a layer, with the schema and
// provenance captured when it was published.
type Release struct {
	LayerID       string
	ReleaseID     string
	SchemaVersion string
	FieldSchema   json.RawMessage
	Units         json.RawMessage
	Sources       json.RawMessage
	Coverage      json.RawMessage // nil: unknown
	ManifestKey   string
	FeatureCount  int64
	TileCount     int
	Bytes         int64
	PublishedAt   time.Time
}

// PublishRelease makes a written release visible in one transaction: the
// section is created if new (free until priced with SetSection), the layer's
// definition is updated, the release inserted (once; re-publishing the same
// release is a no-op insert) and the layer's current release moved to it,
// audited in release_events (see PublishReleaseAs).
func (l *Ledger) PublishRelease(ctx context.Context, layer Layer, rel Release) error {
	return l.PublishReleaseAs(ctx, layer, rel, PublishMode{})
}

// nullJSON stores an absent or JSON-null document as SQL NULL.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}

const layerColumns = `l.layer_id, l.section_key, s.name, s.price, l.name, l.description, l.schema_version, l.field_schema, l.units,
	l.radius_max_m, l.sources, l.jurisdictions, l.coverage, l.geometry_types, l.current_release_id, l.updated_at, l.detail_distance_m`

func scanLayer(row pgx.Row) (Layer, error) {
	var y Layer
	err := row.Scan(layerTargets(&y)...)
	y.HasCoverage = isObject(y.Coverage)
	return y, err
}

// layerTargets are the Scan targets of layerColumns. The JSON columns are
// read as raw bytes (*[]byte: pgx copies them) rather than through
// json.Unmarshal into json.RawMessage, which validates every byte of a
// coverage polygon only to keep them as they are.
func layerTargets(y *Layer) []any {
	return []any{&y.ID, &y.SectionKey, &y.SectionName, &y.SectionPrice, &y.Name, &y.Description, &y.SchemaVersion,
		(*[]byte)(&y.FieldSchema), (*[]byte)(&y.Units), &y.RadiusMaxM, (*[]byte)(&y.Sources), &y.Jurisdictions,
		(*[]byte)(&y.Coverage), &y.GeometryTypes, &y.CurrentReleaseID, &y.UpdatedAt, &y.DetailM}
}

// isObject reports whether raw (jsonb's text) is a JSON object.
func isObject(raw []byte) bool { return len(raw) > 0 && raw[0] == '{' }

// layerListColumns are layerColumns without the coverage polygon, which
// only a site-relative answer needs: whether there is one instead.
var layerListColumns = strings.Replace(layerColumns, "l.coverage,", "NULL::jsonb,", 1) + `, jsonb_typeof(l.coverage) = 'object'`

// LayerFilter narrows ListLayers. Zero fields do not filter.
type LayerFilter struct {
	Search       string
	SectionKey   string
	Jurisdiction string // layers naming it, or national (AUS) layers
	// DatasetIDs nil: every layer; otherwise only these.
	DatasetIDs []string
	// WithoutCoverage leaves Layer.Coverage nil (HasCoverage still says
	// whether there is one): a catalogue read without a site needs no
	// polygon.
	WithoutCoverage bool
	AfterID         string
	Limit           int
}

// listLayersFromSQL follows the columns of ListLayers' SELECT (which
// depend on WithoutCoverage).
const listLayersFromSQL = `
		FROM layers l JOIN sections s USING (section_key)
		WHERE ($1 = '' OR l.layer_id ILIKE '%' || $1 || '%' OR l.name ILIKE '%' || $1 || '%' OR coalesce(l.description, '') ILIKE '%' || $1 || '%')
		  AND ($2 = '' OR l.section_key = $2)
		  AND ($3 = '' OR $3 = ANY (l.jurisdictions) OR 'AUS' = ANY (l.jurisdictions))
		  AND ($4::text[] IS NULL OR l.layer_id = ANY ($4))
		  AND l.layer_id > $5
		ORDER BY l.layer_id COLLATE "C"
		LIMIT $6`

// ListLayers returns layers ordered by layer id, at most f.Limit+1.
func (l *Ledger) ListLayers(ctx context.Context, f LayerFilter) ([]Layer, error) {
	cols := layerColumns + `, NULL::boolean`
	if f.WithoutCoverage {
		cols = layerListColumns
	}
	rows, err := l.pool.Query(ctx, `SELECT `+cols+listLayersFromSQL, escapeLike(f.Search), f.SectionKey, f.Jurisdiction, f.DatasetIDs, f.AfterID, f.Limit+1)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []Layer
	for rows.Next() {
		var y Layer
		var has *bool
		if err := rows.Scan(append(layerTargets(&y), &has)...); err != nil {
			return nil, translate(err)
		}
		y.HasCoverage = isObject(y.Coverage) || (has != nil && *has)
		out = append(out, y)
	}
	return out, translate(rows.Err())
}

// escapeLike makes user text literal inside an ILIKE pattern.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

const layerSQL = `SELECT ` + layerColumns + ` FROM layers l JOIN sections s USING (section_key) WHERE l.layer_id = $1`

// Layer reads one catalogue layer.
func (l *Ledger) Layer(ctx context.Context, id string) (Layer, error) {
	y, err := scanLayer(l.pool.QueryRow(ctx, layerSQL, id))
	return y, translate(err)
}

const releaseSQL = `SELECT layer_id, release_id, schema_version, field_schema, units, sources, coverage, manifest_key,
			feature_count, tile_count, bytes, published_at FROM releases WHERE layer_id = $1 AND release_id = $2`

// Release reads one release.
func (l *Ledger) Release(ctx context.Context, layerID, releaseID string) (Release, error) {
	var r Release
	err := l.pool.QueryRow(ctx, releaseSQL, layerID, releaseID).
		Scan(&r.LayerID, &r.ReleaseID, &r.SchemaVersion, &r.FieldSchema, &r.Units, &r.Sources, &r.Coverage, &r.ManifestKey,
			&r.FeatureCount, &r.TileCount, &r.Bytes, &r.PublishedAt)
	return r, translate(err)
}

// SiteAccess is what an account holds for one of its active sites.
type SiteAccess struct {
	Geometry json.RawMessage
	// Granted section keys acquired for the site.
	Granted map[string]bool
}

const siteAccessSQL = `SELECT s.geometry, coalesce(array_agg(g.section_key) FILTER (WHERE g.section_key IS NOT NULL), '{}')
		FROM sites s LEFT JOIN section_grants g ON g.site_id = s.site_id AND g.account_id = s.account_id
		WHERE s.site_id = $1 AND s.account_id = $2 AND s.archived_at IS NULL
		GROUP BY s.site_id`

// SiteAccess reads an active site of account and the sections acquired for
// it. Another account's site, an archived site and a missing one are all ErrNotFound.
func (l *Ledger) SiteAccess(ctx context.Context, account, site uuid.UUID) (SiteAccess, error) {
	var sa SiteAccess
	var granted []string
	// One round trip: the site and its grants.
	err := l.pool.QueryRow(ctx, siteAccessSQL, site, account).Scan(&sa.Geometry, &granted)
	if err != nil {
		return sa, translate(err)
	}
	sa.Granted = make(map[string]bool, len(granted))
	for _, k := range granted {
		sa.Granted[k] = true
	}
	return sa, nil
}

// LayerRelease is a layer with its current release (nil: none published).
type LayerRelease struct {
	Layer   Layer
	Release *Release
}

const layersForQuerySQL = `SELECT ` + layerColumns + `, r.release_id, r.schema_version, r.field_schema, r.units, r.sources, r.coverage,
			r.manifest_key, r.feature_count, r.tile_count, r.bytes, r.published_at
		FROM layers l JOIN sections s USING (section_key)
		LEFT JOIN releases r ON r.layer_id = l.layer_id AND r.release_id = l.current_release_id
		WHERE l.layer_id = ANY ($1)`

// LayersForQuery reads the named layers and their current releases in one
// round trip (POST /queries freezes both). Unknown ids are absent from the map.
func (l *Ledger) LayersForQuery(ctx context.Context, ids []string) (map[string]LayerRelease, error) {
	rows, err := l.pool.Query(ctx, layersForQuerySQL, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[string]LayerRelease, len(ids))
	for rows.Next() {
		var (
			y                       Layer
			relID, schema, manifest *string
			fieldSchema, units      json.RawMessage
			sources, coverage       json.RawMessage
			features, bytes         *int64
			tileCount               *int
			published               *time.Time
		)
		if err := rows.Scan(append(layerTargets(&y), &relID, &schema, (*[]byte)(&fieldSchema), (*[]byte)(&units), (*[]byte)(&sources),
			(*[]byte)(&coverage), &manifest, &features, &tileCount, &bytes, &published)...); err != nil {
			return nil, translate(err)
		}
		y.HasCoverage = isObject(y.Coverage)
		lr := LayerRelease{Layer: y}
		if relID != nil {
			lr.Release = &Release{LayerID: y.ID, ReleaseID: *relID, SchemaVersion: *schema, FieldSchema: fieldSchema, Units: units,
				Sources: sources, Coverage: coverage, ManifestKey: *manifest, FeatureCount: *features, TileCount: *tileCount,
				Bytes: *bytes, PublishedAt: *published}
		}
		out[y.ID] = lr
	}
	return out, translate(rows.Err())
}
