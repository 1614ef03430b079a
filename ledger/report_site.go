package ledger

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

const (
	reportSiteSQL     = `SELECT ` + siteColumns + ` FROM sites WHERE site_id = $1 AND account_id = $2`
	siteReferencesSQL = `SELECT namespace, reference FROM site_references
		WHERE account_id = $1 AND site_id = $2 ORDER BY created_at, namespace, reference`
)

// ReportSite reads the site a report is built for, archived or not (an
// order paid before the site was archived is still built; contract: an
// archived site's reports remain readable), with the external references
// bound to it, oldest first. Another account's site is ErrNotFound.
func (l *Ledger) ReportSite(ctx context.Context, account, id uuid.UUID) (Site, []ExternalRef, error) {
	s, err := scanSite(l.pool.QueryRow(ctx, reportSiteSQL, id, account))
	if err != nil {
		return Site{}, nil, translate(err)
	}
	rows, err := l.pool.Query(ctx, siteReferencesSQL, account, id)
	if err != nil {
		return Site{}, nil, translate(err)
	}
	refs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ExternalRef, error) {
		var r ExternalRef
		err := row.Scan(&r.Namespace, &r.Reference)
		return r, err
	})
	if err != nil {
		return Site{}, nil, translate(err)
	}
	return s, refs, nil
}
