package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Release states, as ListReleases reports them.
const (
	ReleaseCurrent   = "current"   // the layer's current release: what queries, maps and reports use
	ReleaseStaged    = "staged"    // published with --stage and never current
	ReleasePrevious  = "previous"  // was current once, is not now
	ReleaseDiscarded = "discarded" // staged, then discarded in review; never current
)

// ErrNotStaged: DiscardRelease was asked to discard a release that is not
// staged (current, previous or discarded already).
var ErrNotStaged = newError("ledger: the release is not staged")

// PublishMode says how PublishReleaseAs makes a release visible.
type PublishMode struct {
	// Stage inserts the release without moving the layer's current
	// release; the layer's definition is only inserted if new.
	Stage bool
	// Actor is recorded in the release's audit (release_events). Default
	// "siteenv ingest".
	Actor string
}

// ReleaseInfo is one release of a layer with its state.
type ReleaseInfo struct {
	Release
	State string // ReleaseCurrent, ReleaseStaged or ReleasePrevious
}

// ReleaseEvent is one audit record of a layer's releases.
type ReleaseEvent struct {
	ID                int64
	LayerID           string
	ReleaseID         string
	Action            string // published, staged, promoted or discarded
	PreviousReleaseID *string
	Actor             string
	CreatedAt         time.Time
}

// upsertLayerSQL inserts a layer or replaces its definition;
// insertNewLayerSQL (a staged release) leaves an existing layer alone.
const (
	insertLayerSQL = `INSERT INTO layers (layer_id, section_key, name, description, schema_version, field_schema, units,
				radius_max_m, sources, jurisdictions, coverage, geometry_types, updated_at, detail_distance_m)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) `
	upsertLayerSQL = insertLayerSQL + `ON CONFLICT (layer_id) DO UPDATE SET section_key = excluded.section_key, name = excluded.name,
				description = excluded.description, schema_version = excluded.schema_version, field_schema = excluded.field_schema,
				units = excluded.units, radius_max_m = excluded.radius_max_m, sources = excluded.sources,
				jurisdictions = excluded.jurisdictions, coverage = excluded.coverage, geometry_types = excluded.geometry_types,
				updated_at = excluded.updated_at, detail_distance_m = excluded.detail_distance_m`
	insertNewLayerSQL = insertLayerSQL + `ON CONFLICT (layer_id) DO NOTHING`
)

const (
	insertSectionSQL = `INSERT INTO sections (section_key, name, price, updated_at) VALUES ($1, $2, 0, $3)
			ON CONFLICT (section_key) DO NOTHING`
	lockCurrentReleaseSQL = `SELECT current_release_id FROM layers WHERE layer_id = $1 FOR UPDATE`
	insertReleaseSQL      = `INSERT INTO releases (layer_id, release_id, schema_version, field_schema, units, sources, coverage,
				manifest_key, feature_count, tile_count, bytes, published_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING`
	setCurrentReleaseSQL = `UPDATE layers SET current_release_id = $2 WHERE layer_id = $1`
)

// PublishReleaseAs is PublishRelease with a mode: staged (not current) or
// published (current), audited in release_events with mode.Actor.
// Publishing a release that exists already is idempotent: it only moves
// the current release (audited) when it is not current yet and the mode
// is not Stage.
func (l *Ledger) PublishReleaseAs(ctx context.Context, layer Layer, rel Release, mode PublishMode) error {
	if layer.ID != rel.LayerID {
		return fmt.Errorf("%w: release %s is not of layer %s", ErrInvalid, rel.ReleaseID, layer.ID)
	}
	actor := mode.Actor
	if actor == "" {
		actor = "siteenv ingest"
	}
	now := l.now()
	sectionName := layer.SectionName
	if sectionName == "" {
		sectionName = strings.ReplaceAll(layer.SectionKey, "_", " ")
	}
	err := l.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertSectionSQL, layer.SectionKey, sectionName, now); err != nil {
			return err
		}
		// A staged release leaves an existing layer's definition alone: the
		// catalogue describes the current release until a promotion.
		insertLayer := upsertLayerSQL
		if mode.Stage {
			insertLayer = insertNewLayerSQL
		}
		if _, err := tx.Exec(ctx, insertLayer,
			layer.ID, layer.SectionKey, layer.Name, layer.Description, layer.SchemaVersion, layer.FieldSchema, layer.Units,
			layer.RadiusMaxM, layer.Sources, layer.Jurisdictions, nullJSON(layer.Coverage), layer.GeometryTypes, now, layer.DetailM); err != nil {
			return err
		}
		var current *string
		if err := tx.QueryRow(ctx, lockCurrentReleaseSQL, layer.ID).Scan(&current); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, insertReleaseSQL,
			rel.LayerID, rel.ReleaseID, rel.SchemaVersion, rel.FieldSchema, rel.Units, rel.Sources, nullJSON(rel.Coverage),
			rel.ManifestKey, rel.FeatureCount, rel.TileCount, rel.Bytes, now)
		if err != nil {
			return err
		}
		inserted := tag.RowsAffected() == 1
		isCurrent := current != nil && *current == rel.ReleaseID
		switch {
		case mode.Stage && inserted:
			return releaseEvent(ctx, tx, rel.LayerID, rel.ReleaseID, "staged", current, actor, now)
		case mode.Stage, isCurrent:
			return nil
		}
		if _, err := tx.Exec(ctx, setCurrentReleaseSQL, layer.ID, rel.ReleaseID); err != nil {
			return err
		}
		return releaseEvent(ctx, tx, rel.LayerID, rel.ReleaseID, "published", current, actor, now)
	})
	return translate(err)
}

const insertReleaseEventSQL = `INSERT INTO release_events (layer_id, release_id, action, previous_release_id, actor, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`

func releaseEvent(ctx context.Context, tx pgx.Tx, layerID, releaseID, action string, previous *string, actor string, at time.Time) error {
	_, err := tx.Exec(ctx, insertReleaseEventSQL, layerID, releaseID, action, previous, actor, at)
	return err
}

const promoteReleaseSQL = `UPDATE layers l SET current_release_id = r.release_id, schema_version = r.schema_version,
				field_schema = r.field_schema, units = r.units, sources = r.sources, coverage = r.coverage, updated_at = $3
			FROM releases r WHERE l.layer_id = $1 AND r.layer_id = l.layer_id AND r.release_id = $2`

// PromoteRelease makes a release of a layer its current release, in one
// transaction: the layer's schema, units, provenance and coverage become
// the release's (as captured when it was published), the current release
// pointer moves, and the change is audited (release_events, action
// "promoted", with actor). A staged release is promoted this way, and an
// earlier one promoted back (the rollback). Queries and reports created
// before keep the release they froze. Promoting the current release changes
// nothing and returns changed false. An unknown layer or release is
// ErrNotFound. previous is the release current before (nil: none).
func (l *Ledger) PromoteRelease(ctx context.Context, layerID, releaseID, actor string) (previous *string, changed bool, err error) {
	if actor == "" {
		actor = "siteenv release promote"
	}
	now := l.now()
	err = l.tx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, lockCurrentReleaseSQL, layerID).Scan(&previous); err != nil {
			return err
		}
		if previous != nil && *previous == releaseID {
			return nil
		}
		tag, err := tx.Exec(ctx, promoteReleaseSQL, layerID, releaseID, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return pgx.ErrNoRows
		}
		changed = true
		return releaseEvent(ctx, tx, layerID, releaseID, "promoted", previous, actor, now)
	})
	return previous, changed, translate(err)
}

const (
	currentReleaseSQL = `SELECT current_release_id FROM layers WHERE layer_id = $1`
	listReleasesSQL   = `SELECT r.layer_id, r.release_id, r.schema_version, r.field_schema, r.units, r.sources, r.coverage,
			r.manifest_key, r.feature_count, r.tile_count, r.bytes, r.published_at,
			EXISTS (SELECT 1 FROM release_events e WHERE e.layer_id = r.layer_id AND e.release_id = r.release_id
				AND e.action IN ('published', 'promoted')),
			EXISTS (SELECT 1 FROM release_events e WHERE e.layer_id = r.layer_id AND e.release_id = r.release_id
				AND e.action = 'discarded')
		FROM releases r WHERE r.layer_id = $1 ORDER BY r.published_at DESC, r.release_id`
)

// ListReleases returns every release of a layer, newest published first,
// with its state. An unknown layer is ErrNotFound.
func (l *Ledger) ListReleases(ctx context.Context, layerID string) ([]ReleaseInfo, error) {
	var current *string
	if err := l.pool.QueryRow(ctx, currentReleaseSQL, layerID).Scan(&current); err != nil {
		return nil, translate(err)
	}
	rows, err := l.pool.Query(ctx, listReleasesSQL, layerID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []ReleaseInfo
	for rows.Next() {
		var ri ReleaseInfo
		var wasCurrent, discarded bool
		if err := rows.Scan(&ri.LayerID, &ri.ReleaseID, &ri.SchemaVersion, (*[]byte)(&ri.FieldSchema), (*[]byte)(&ri.Units),
			(*[]byte)(&ri.Sources), (*[]byte)(&ri.Coverage), &ri.ManifestKey, &ri.FeatureCount, &ri.TileCount, &ri.Bytes,
			&ri.PublishedAt, &wasCurrent, &discarded); err != nil {
			return nil, translate(err)
		}
		switch {
		case current != nil && *current == ri.ReleaseID:
			ri.State = ReleaseCurrent
		case wasCurrent:
			ri.State = ReleasePrevious
		case discarded:
			ri.State = ReleaseDiscarded
		default:
			ri.State = ReleaseStaged
		}
		out = append(out, ri)
	}
	return out, translate(rows.Err())
}

const releaseReviewStateSQL = `SELECT l.current_release_id IS NOT DISTINCT FROM r.release_id,
			EXISTS (SELECT 1 FROM release_events e WHERE e.layer_id = r.layer_id AND e.release_id = r.release_id
				AND e.action IN ('published', 'promoted', 'discarded'))
		FROM layers l JOIN releases r ON r.layer_id = l.layer_id WHERE l.layer_id = $1 AND r.release_id = $2 FOR UPDATE OF l`

// DiscardRelease marks a staged release discarded after review, audited
// (release_events, action "discarded", with actor): it is no longer
// staged (ListReleases says discarded) and stays immutable in the
// catalogue and the store; it may still be promoted later. An unknown
// layer or release is ErrNotFound; a release that is not staged is
// ErrNotStaged.
func (l *Ledger) DiscardRelease(ctx context.Context, layerID, releaseID, actor string) error {
	if actor == "" {
		actor = "siteenv release discard"
	}
	now := l.now()
	err := l.tx(ctx, func(tx pgx.Tx) error {
		var current, decided bool
		if err := tx.QueryRow(ctx, releaseReviewStateSQL, layerID, releaseID).Scan(&current, &decided); err != nil {
			return err
		}
		if current || decided {
			return ErrNotStaged
		}
		return releaseEvent(ctx, tx, layerID, releaseID, "discarded", nil, actor, now)
	})
	return translate(err)
}

const listReleaseEventsSQL = `SELECT event_id, layer_id, release_id, action, previous_release_id, actor, created_at
		FROM release_events WHERE layer_id = $1 ORDER BY event_id`

// ReleaseEvents returns the audit of a layer's releases, oldest first.
func (l *Ledger) ReleaseEvents(ctx context.Context, layerID string) ([]ReleaseEvent, error) {
	rows, err := l.pool.Query(ctx, listReleaseEventsSQL, layerID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []ReleaseEvent
	for rows.Next() {
		var e ReleaseEvent
		if err := rows.Scan(&e.ID, &e.LayerID, &e.ReleaseID, &e.Action, &e.PreviousReleaseID, &e.Actor, &e.CreatedAt); err != nil {
			return nil, translate(err)
		}
		out = append(out, e)
	}
	return out, translate(rows.Err())
}
