package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Errors of site registration.
var (
	// ErrReferenceConflict: an external reference is bound to a different boundary.
	ErrReferenceConflict = newError("ledger: external reference bound to a different boundary")
	// ErrCreateNotPermitted: no active site matches and the caller may not create one.
	ErrCreateNotPermitted = newError("ledger: creating a site needs sites:write")
)

// Site is a saved boundary of an account.
type Site struct {
	ID          uuid.UUID
	AccountID   uuid.UUID
	Name        *string
	PortfolioID *uuid.UUID
	Geometry    json.RawMessage // canonical GeoJSON, CRS84
	Fingerprint string
	AreaM2      float64
	// Bounds [min lon, min lat, max lon, max lat].
	Bounds     [4]float64
	CreatedAt  time.Time
	ArchivedAt *time.Time
}

// siteParams names the parameters of a site INSERT for InputError.Field.
var siteParams = []string{"", "", "name", "", "geometry", "fingerprint"}

const siteColumns = `site_id, account_id, name, portfolio_id, geometry, fingerprint, area_m2, min_lon, min_lat, max_lon, max_lat, created_at, archived_at`

func scanSite(row pgx.Row) (Site, error) {
	var s Site
	err := row.Scan(&s.ID, &s.AccountID, &s.Name, &s.PortfolioID, &s.Geometry, &s.Fingerprint, &s.AreaM2,
		&s.Bounds[0], &s.Bounds[1], &s.Bounds[2], &s.Bounds[3], &s.CreatedAt, &s.ArchivedAt)
	return s, err
}

const insertSiteSQL = `INSERT INTO sites (site_id, account_id, name, portfolio_id, geometry, fingerprint, area_m2,
			min_lon, min_lat, max_lon, max_lat, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// CreateSite stores a new site as given (no de-duplication; see SaveSite).
func (l *Ledger) CreateSite(ctx context.Context, s Site) (Site, error) {
	s.ID = newID()
	s.CreatedAt = l.now()
	_, err := l.pool.Exec(ctx, insertSiteSQL,
		s.ID, s.AccountID, s.Name, s.PortfolioID, s.Geometry, s.Fingerprint, s.AreaM2,
		s.Bounds[0], s.Bounds[1], s.Bounds[2], s.Bounds[3], s.CreatedAt)
	return s, nameParams(err, siteParams...)
}

const siteSQL = `SELECT ` + siteColumns + ` FROM sites WHERE site_id = $1 AND account_id = $2 AND archived_at IS NULL`

// Site reads an active site of account; another account's, archived or
// missing sites are all ErrNotFound.
func (l *Ledger) Site(ctx context.Context, account, id uuid.UUID) (Site, error) {
	s, err := scanSite(l.pool.QueryRow(ctx, siteSQL, id, account))
	return s, translate(err)
}

const siteByReferenceSQL = `SELECT ` + siteColumnsQualified + ` FROM site_references r JOIN sites s USING (site_id)
		WHERE r.account_id = $1 AND r.namespace = $2 AND r.reference = $3 AND s.archived_at IS NULL`

// SiteByReference reads the active site an external reference names.
func (l *Ledger) SiteByReference(ctx context.Context, account uuid.UUID, namespace, reference string) (Site, error) {
	s, err := scanSite(l.pool.QueryRow(ctx, siteByReferenceSQL, account, namespace, reference))
	return s, translate(err)
}

const siteColumnsQualified = `s.site_id, s.account_id, s.name, s.portfolio_id, s.geometry, s.fingerprint, s.area_m2, s.min_lon, s.min_lat, s.max_lon, s.max_lat, s.created_at, s.archived_at`

// ExternalRef is a client's own identifier for a site.
type ExternalRef struct{ Namespace, Reference string }

const (
	referenceFingerprintSQL = `SELECT fingerprint FROM site_references WHERE account_id = $1 AND namespace = $2 AND reference = $3`
	siteByFingerprintSQL    = `SELECT ` + siteColumns + ` FROM sites
			WHERE account_id = $1 AND fingerprint = $2 AND archived_at IS NULL ORDER BY created_at LIMIT 1`
	upsertSiteReferenceSQL = `INSERT INTO site_references (account_id, namespace, reference, site_id, fingerprint, created_at)
				VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (account_id, namespace, reference) DO UPDATE SET site_id = excluded.site_id`
)

// SaveSite registers a boundary for an account: it reuses the account's
// active site with the same fingerprint or, when create is true, stores a new
// one (else ErrCreateNotPermitted). A given external reference is bound to the
// boundary; a reference already bound to a different boundary is
// ErrReferenceConflict and nothing is written.
//
// The commit is relaxed (see relaxed.go): both callers (POST /sites and POST
// /queries) run under an idempotency claim whose durable completion follows.
func (l *Ledger) SaveSite(ctx context.Context, s Site, ref *ExternalRef, create bool) (saved Site, created bool, err error) {
	if ref == nil {
		return l.saveSitePipelined(ctx, s, create)
	}
	err = l.relaxedTx(ctx, func(tx pgx.Tx) error {
		// One registration at a time per account keeps fingerprints unique among active sites.
		if err := lockAccount(ctx, tx, s.AccountID); err != nil {
			return err
		}
		if ref != nil {
			var fp string
			err := tx.QueryRow(ctx, referenceFingerprintSQL,
				s.AccountID, ref.Namespace, ref.Reference).Scan(&fp)
			if err == nil && fp != s.Fingerprint {
				return ErrReferenceConflict
			}
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return nameParams(err, "", "external_reference.namespace", "external_reference.reference")
			}
		}
		existing, err := scanSite(tx.QueryRow(ctx, siteByFingerprintSQL, s.AccountID, s.Fingerprint))
		switch {
		case err == nil:
			saved = existing
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		case !create:
			return ErrCreateNotPermitted
		default:
			s.ID, s.CreatedAt, created = newID(), l.now(), true
			if _, err := tx.Exec(ctx, insertSiteSQL,
				s.ID, s.AccountID, s.Name, s.PortfolioID, s.Geometry, s.Fingerprint, s.AreaM2,
				s.Bounds[0], s.Bounds[1], s.Bounds[2], s.Bounds[3], s.CreatedAt); err != nil {
				return nameParams(err, siteParams...)
			}
			saved = s
		}
		if ref != nil {
			_, err := tx.Exec(ctx, upsertSiteReferenceSQL,
				s.AccountID, ref.Namespace, ref.Reference, saved.ID, saved.Fingerprint, l.now())
			return nameParams(err, "", "external_reference.namespace", "external_reference.reference")
		}
		return nil
	})
	if errors.Is(err, ErrReferenceConflict) || errors.Is(err, ErrCreateNotPermitted) {
		return Site{}, false, err
	}
	return saved, created, translate(err)
}

// SiteFilter narrows ListSites.
type SiteFilter struct {
	Search      string
	PortfolioID *uuid.UUID
	AfterTime   *time.Time
	AfterID     uuid.UUID
	Limit       int
}

const listSitesSQL = `SELECT ` + siteColumns + ` FROM sites
		WHERE account_id = $1 AND archived_at IS NULL
		  AND ($2 = '' OR name ILIKE '%' || $2 || '%')
		  AND ($3::uuid IS NULL OR portfolio_id = $3)
		  AND ($4::timestamptz IS NULL OR (created_at, site_id) > ($4, $5))
		ORDER BY created_at, site_id LIMIT $6`

// ListSites returns an account's active sites, oldest first, at most Limit+1.
func (l *Ledger) ListSites(ctx context.Context, account uuid.UUID, f SiteFilter) ([]Site, error) {
	rows, err := l.pool.Query(ctx, listSitesSQL,
		account, escapeLike(f.Search), f.PortfolioID, f.AfterTime, f.AfterID, f.Limit+1)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []Site
	for rows.Next() {
		s, err := scanSite(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, s)
	}
	return out, translate(rows.Err())
}

// SiteUpdate changes a site's name and portfolio; nil fields stay as they are.
type SiteUpdate struct {
	SetName      bool
	Name         *string
	SetPortfolio bool
	PortfolioID  *uuid.UUID
}

const (
	portfolioOwnerSQL = `SELECT account_id FROM portfolios WHERE portfolio_id = $1`
	updateSiteSQL     = `UPDATE sites SET
				name = CASE WHEN $3 THEN $4 ELSE name END,
				portfolio_id = CASE WHEN $5 THEN $6 ELSE portfolio_id END
			WHERE site_id = $1 AND account_id = $2 AND archived_at IS NULL
			RETURNING ` + siteColumns
)

// UpdateSite renames a site or moves it between the account's portfolios.
// Another account's portfolio is ErrNotFound. The boundary never changes.
func (l *Ledger) UpdateSite(ctx context.Context, account, id uuid.UUID, u SiteUpdate) (Site, error) {
	var s Site
	err := l.tx(ctx, func(tx pgx.Tx) error {
		if u.SetPortfolio && u.PortfolioID != nil {
			var owner uuid.UUID
			err := tx.QueryRow(ctx, portfolioOwnerSQL, *u.PortfolioID).Scan(&owner)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err // an outage is not "no such portfolio"
			}
			if err != nil || owner != account {
				return fmt.Errorf("portfolio: %w", ErrNotFound)
			}
		}
		var err error
		s, err = scanSite(tx.QueryRow(ctx, updateSiteSQL, id, account, u.SetName, u.Name, u.SetPortfolio, u.PortfolioID))
		return nameParams(err, "", "", "", "name")
	})
	if errors.Is(err, ErrNotFound) {
		return Site{}, err
	}
	return s, translate(err)
}

const archiveSiteSQL = `UPDATE sites SET archived_at = coalesce(archived_at, $3) WHERE site_id = $1 AND account_id = $2`

// ArchiveSite archives an account's site; archiving again is a no-op.
func (l *Ledger) ArchiveSite(ctx context.Context, account, id uuid.UUID) error {
	tag, err := l.pool.Exec(ctx, archiveSiteSQL, id, account, l.now())
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// PortfolioSummary is a portfolio with its count of active sites.
type PortfolioSummary struct {
	ID        uuid.UUID
	Name      string
	CreatedAt time.Time
	SiteCount int64
}

const listPortfoliosSQL = `SELECT p.portfolio_id, p.name, p.created_at,
			(SELECT count(*) FROM sites s WHERE s.portfolio_id = p.portfolio_id AND s.archived_at IS NULL)
		FROM portfolios p
		WHERE p.account_id = $1 AND ($2::timestamptz IS NULL OR (p.created_at, p.portfolio_id) > ($2, $3))
		ORDER BY p.created_at, p.portfolio_id LIMIT $4`

// ListPortfolios returns an account's portfolios, oldest first, at most Limit+1.
func (l *Ledger) ListPortfolios(ctx context.Context, account uuid.UUID, afterTime *time.Time, afterID uuid.UUID, limit int) ([]PortfolioSummary, error) {
	rows, err := l.pool.Query(ctx, listPortfoliosSQL, account, afterTime, afterID, limit+1)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []PortfolioSummary
	for rows.Next() {
		var p PortfolioSummary
		if err := rows.Scan(&p.ID, &p.Name, &p.CreatedAt, &p.SiteCount); err != nil {
			return nil, translate(err)
		}
		out = append(out, p)
	}
	return out, translate(rows.Err())
}

const portfolioNameSQL = `SELECT name FROM portfolios WHERE portfolio_id = $1 AND account_id = $2`

// Portfolio reads one of an account's portfolios.
func (l *Ledger) Portfolio(ctx context.Context, account, id uuid.UUID) (Portfolio, error) {
	p := Portfolio{ID: id, AccountID: account}
	err := l.pool.QueryRow(ctx, portfolioNameSQL, id, account).Scan(&p.Name)
	return p, translate(err)
}

const parcelGeometriesSQL = `SELECT cadastre_id, geometry FROM parcels WHERE jurisdiction = $1 AND cadastre_id = ANY ($2)`

// ParcelGeometries reads the GeoJSON polygons of the listed parcels of a
// jurisdiction; ids not in the gazetteer are absent from the map.
func (l *Ledger) ParcelGeometries(ctx context.Context, jurisdiction string, ids []string) (map[string]json.RawMessage, error) {
	rows, err := l.pool.Query(ctx, parcelGeometriesSQL, jurisdiction, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var id string
		var g json.RawMessage
		if err := rows.Scan(&id, &g); err != nil {
			return nil, translate(err)
		}
		out[id] = g
	}
	return out, translate(rows.Err())
}

// saveSiteSQL inserts the site unless the account (locked by the statement
// before it, so this snapshot sees every site committed before) already
// has an active site with the fingerprint. The
// parameters keep SaveSite's insert positions, for nameParams.
const saveSiteSQL = `INSERT INTO sites (site_id, account_id, name, portfolio_id, geometry, fingerprint, area_m2,
		min_lon, min_lat, max_lon, max_lat, created_at)
	SELECT $1::uuid, $2::uuid, $3::text, $4::uuid, $5::jsonb, $6::text, $7::double precision,
		$8::double precision, $9::double precision, $10::double precision, $11::double precision, $12::timestamptz
	WHERE EXISTS (SELECT 1 FROM accounts WHERE account_id = $2::uuid)
		AND NOT EXISTS (SELECT 1 FROM sites WHERE account_id = $2::uuid AND fingerprint = $6::text AND archived_at IS NULL)
	RETURNING site_id`

// saveSitePipelined is SaveSite without an external reference in one round
// trip: a pipelined relaxed transaction that locks the account, inserts the
// site if it may and must, and reads the account's active site with the
// fingerprint (the new one, or the oldest existing).
func (l *Ledger) saveSitePipelined(ctx context.Context, s Site, create bool) (saved Site, created bool, err error) {
	id, now := newID(), l.now()
	var found bool
	locked, err := l.lockedRelaxed(ctx, s.AccountID, func(b *pgx.Batch) {
		if create {
			// Only when it may insert: the site's values are not even sent
			// otherwise (a value PostgreSQL refuses fails only a creation).
			b.Queue(saveSiteSQL, id, s.AccountID, s.Name, s.PortfolioID, s.Geometry, s.Fingerprint, s.AreaM2,
				s.Bounds[0], s.Bounds[1], s.Bounds[2], s.Bounds[3], now)
		}
		b.Queue(siteByFingerprintSQL, s.AccountID, s.Fingerprint)
	}, func(br pgx.BatchResults) error {
		if create {
			var got uuid.UUID
			var err error
			if created, err = scanOptional(br.QueryRow(), &got); err != nil {
				return nameParams(err, siteParams...)
			}
		}
		switch got, err := scanSite(br.QueryRow()); {
		case err == nil:
			saved, found = got, true
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		return nil
	})
	switch {
	case err != nil:
		return Site{}, false, err
	case !locked:
		return Site{}, false, ErrNotFound
	case created:
		// As given (not as jsonb re-renders its geometry), like SaveSite.
		s.ID, s.CreatedAt = id, now
		return s, true, nil
	case !found:
		return Site{}, false, ErrCreateNotPermitted
	}
	return saved, false, nil
}
