package ledger

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// reportScopeSQL selects the layers a report in jurisdiction $1 covers:
// those whose jurisdictions include it or AUS, that have a current release,
// and whose sources, in the catalogue entry and in the current release
// alike, are a non-empty list every item of which has report_approved true
// (a missing or non-boolean flag is not approval). $2 narrows to a key's
// dataset restriction (NULL: none).
const reportScopeSQL = `SELECT l.layer_id FROM layers l
	JOIN releases r ON r.layer_id = l.layer_id AND r.release_id = l.current_release_id
	WHERE l.jurisdictions && ARRAY[$1::text, 'AUS']
	  AND ($2::text[] IS NULL OR l.layer_id = ANY($2))
	  AND ` + reportApprovedSQL + `
	ORDER BY l.layer_id`

// reportApprovedSQL is the approval half of reportScopeSQL's condition,
// over layers l and their current releases r.
const reportApprovedSQL = `jsonb_typeof(l.sources) = 'array' AND jsonb_array_length(l.sources) > 0
	  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(l.sources) s WHERE s->'report_approved' IS DISTINCT FROM 'true'::jsonb)
	  AND jsonb_typeof(r.sources) = 'array' AND jsonb_array_length(r.sources) > 0
	  AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(r.sources) s WHERE s->'report_approved' IS DISTINCT FROM 'true'::jsonb)`

// ReportScope returns, sorted, the ids of the layers a report for
// jurisdiction (ACT, NSW, ...) would cover: layers of that jurisdiction or of
// AUS with a current release all of whose sources are approved for reports.
// datasets is the key's effective dataset restriction (nil: none; empty:
// nothing is permitted, so the scope is empty). An empty scope means no
// report can be built (the API answers report_unavailable, without a debit).
func (l *Ledger) ReportScope(ctx context.Context, jurisdiction string, datasets []string) ([]string, error) {
	if datasets != nil && len(datasets) == 0 {
		return []string{}, nil
	}
	return l.layerIDs(ctx, reportScopeSQL, jurisdiction, datasets)
}

const reportApprovedLayerIDsSQL = `SELECT l.layer_id FROM layers l
		JOIN releases r ON r.layer_id = l.layer_id AND r.release_id = l.current_release_id
		WHERE ` + reportApprovedSQL + ` ORDER BY l.layer_id`

// ReportLayers returns, sorted, the ids of the layers some report could
// cover, whatever its jurisdiction: those with a current release all of
// whose sources are approved for reports. With none that a key may use, no
// report can be ordered with it (GET /context lists create_report as
// report_unavailable).
func (l *Ledger) ReportLayers(ctx context.Context) ([]string, error) {
	return l.layerIDs(ctx, reportApprovedLayerIDsSQL)
}

// layerIDs collects the one text column of sql's rows (never nil).
func (l *Ledger) layerIDs(ctx context.Context, sql string, args ...any) ([]string, error) {
	rows, err := l.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, translate(err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

const reportByIdemKeySQL = `SELECT ` + reportColumns + ` FROM reports rp WHERE rp.integration_id = $1 AND rp.idem_key = $2`

// ReportByOrderKey reads the report an integration ordered with an
// Idempotency-Key (ErrNotFound: none), so that a retried order finds its
// first order before re-checking a site or scope that may have changed since.
func (l *Ledger) ReportByOrderKey(ctx context.Context, integration uuid.UUID, key string) (Report, error) {
	r, err := scanReport(l.pool.QueryRow(ctx, reportByIdemKeySQL,
		integration, key))
	return r, translate(err)
}
