package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrAdmissionCheck: one of AdmitQueryBatch's checks failed (the
// idempotency key was already claimed, the site does not exist and may not
// be created, a section is not granted) and nothing was written or
// counted. The caller takes the step-by-step path (ClaimIdempotency,
// SaveSite, SiteAccess, AdmitQuery), which tells which and answers it.
var ErrAdmissionCheck = newError("ledger: admission check failed")

// AdmitRequest is POST /queries' whole admission: its idempotency claim,
// its site's registration, the sections the site must hold and the query.
type AdmitRequest struct {
	Integration uuid.UUID
	IdemKey     string
	Operation   string
	Fingerprint []byte
	// Site is registered as SaveSite does without an external reference:
	// the account's active site of Site.Fingerprint, created when missing
	// and CreateSite allows.
	Site       Site
	CreateSite bool
	// Sections must all be granted for the site.
	Sections []string
	// Query is admitted as AdmitQuery does (its SiteID and SiteGeometry are
	// the registered site's).
	Query  Query
	Limits AdmitLimits
}

// AdmitBatchResult is what AdmitQueryBatch stored.
type AdmitBatchResult struct {
	// Token is the fresh idempotency claim's: the caller completes or
	// releases it (CompleteIdempotency..., ReleaseIdempotency), whatever
	// the admission's outcome.
	Token uuid.UUID
	// Site as registered (SiteCreated: by this request).
	Site        Site
	SiteCreated bool
	AdmitResult
}

// admitRequireClaimSQL checks the claim just inserted is this request's.
const admitRequireClaimSQL = `SELECT siteenv_require(EXISTS (SELECT 1 FROM idempotency
	WHERE integration_id = $1 AND idem_key = $2 AND claim_token = $3), 'idempotency claim')`

// admitSiteSQL reads the account's active site of the fingerprint (as
// saveSitePipelined) with its granted sections.
const admitSiteSQL = `SELECT ` + siteColumns + `, coalesce((SELECT array_agg(g.section_key) FROM section_grants g
		WHERE g.site_id = s.site_id AND g.account_id = s.account_id), '{}')
	FROM sites s WHERE account_id = $1 AND fingerprint = $2 AND archived_at IS NULL ORDER BY created_at LIMIT 1`

// admitRequireSiteSQL checks the site exists and holds every section of $3.
const admitRequireSiteSQL = `SELECT siteenv_require(coalesce((SELECT $3::text[] <@ coalesce((SELECT array_agg(g.section_key)
		FROM section_grants g WHERE g.site_id = s.site_id AND g.account_id = s.account_id), '{}')
	FROM sites s WHERE account_id = $1 AND fingerprint = $2 AND archived_at IS NULL ORDER BY created_at LIMIT 1), false), 'site')`

// admitBatchSQL is admitQuerySQL of the site registered in the same
// transaction, found by its fingerprint ($4; $5 is true).
var admitBatchSQL = `WITH site AS (SELECT site_id, geometry FROM sites
		WHERE account_id = $2::uuid AND fingerprint = $4::text AND archived_at IS NULL AND $5::boolean ORDER BY created_at LIMIT 1), ` +
	admitQueryCTEs("(SELECT site_id FROM site)", "(SELECT geometry FROM site)")

// AdmitQueryBatch admits a query in one round trip: one pipelined relaxed
// transaction claims the idempotency key, registers the site, checks its
// sections and admits the query (AdmitQuery: the admission counted, the
// query stored running or queued). Each check is a siteenv_require
// statement (migration 0013), so a failed check undoes the whole
// transaction before the admission is counted: ErrAdmissionCheck. Past the
// checks, ErrRateLimited and ErrCapacity come with the fresh claim's Token
// (the claim and the site stay committed, as on the step-by-step path).
func (l *Ledger) AdmitQueryBatch(ctx context.Context, ar AdmitRequest) (AdmitBatchResult, error) {
	now := l.now()
	token := uuid.New()
	l.leases.add(token)
	fresh := false
	defer func() {
		if !fresh {
			l.leases.remove(token)
		}
	}()
	q, s := ar.Query, ar.Site
	q.ID, q.Status, q.CreatedAt = newID(), QueryQueued, now
	frozen, err := json.Marshal(q.Frozen)
	if err != nil {
		return AdmitBatchResult{}, err
	}
	siteID := newID()
	sections := ar.Sections
	if sections == nil {
		sections = []string{}
	}
	cur := windowIndex(now, time.Minute)
	lim := ar.Limits
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(`INSERT INTO idempotency (integration_id, idem_key, operation, fingerprint, state, created_at, updated_at, claim_token, lease_until)
		VALUES ($1, $2, $3, $4, 'running', $5, $5, $6, $7) ON CONFLICT DO NOTHING`, ar.Integration, ar.IdemKey, ar.Operation, ar.Fingerprint, now, token, now.Add(l.lease))
	b.Queue(admitRequireClaimSQL, ar.Integration, ar.IdemKey, token)
	b.Queue(lockAccountSQL, q.AccountID)
	if ar.CreateSite {
		b.Queue(saveSiteSQL, siteID, q.AccountID, s.Name, s.PortfolioID, s.Geometry, s.Fingerprint, s.AreaM2,
			s.Bounds[0], s.Bounds[1], s.Bounds[2], s.Bounds[3], now)
	}
	b.Queue(admitSiteSQL, q.AccountID, s.Fingerprint)
	b.Queue(admitRequireSiteSQL, q.AccountID, s.Fingerprint, sections)
	b.Queue(admitBatchSQL, admitArgs(q, frozen, s.Fingerprint, true, cur, lim, now)...)
	b.Queue("COMMIT")
	br := l.pool.SendBatch(ctx, b)
	var (
		res     AdmitBatchResult
		locked  bool
		v       int64
		status  *string
		granted []string
	)
	err = func() error {
		for range 4 { // BEGIN, SET, the claim, its check
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		var id uuid.UUID
		switch err := br.QueryRow().Scan(&id); {
		case err == nil:
			locked = true
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if ar.CreateSite {
			switch err := br.QueryRow().Scan(&id); {
			case err == nil:
				res.SiteCreated = true
			case !errors.Is(err, pgx.ErrNoRows):
				return nameParams(err, siteParams...)
			}
		}
		st := &res.Site
		if err := br.QueryRow().Scan(&st.ID, &st.AccountID, &st.Name, &st.PortfolioID, &st.Geometry, &st.Fingerprint, &st.AreaM2,
			&st.Bounds[0], &st.Bounds[1], &st.Bounds[2], &st.Bounds[3], &st.CreatedAt, &st.ArchivedAt, &granted); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if _, err := br.Exec(); err != nil { // the site's check
			return err
		}
		if err := br.QueryRow().Scan(&v, &status); err != nil {
			return err
		}
		_, err := br.Exec()
		return err
	}()
	// On an error (a failed check too) the transaction is left aborted and
	// pgxpool discards the connection instead of reusing it.
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "SEA01":
		return AdmitBatchResult{}, ErrAdmissionCheck
	case err != nil:
		return AdmitBatchResult{}, translate(err)
	case !locked:
		// Not reached: a claim of a key whose account is gone.
		return AdmitBatchResult{}, ErrNotFound
	}
	fresh = true
	res.Token = token
	if res.SiteCreated {
		// As given (not as jsonb re-renders its geometry), like SaveSite.
		s.ID, s.CreatedAt, s.AccountID = siteID, now, q.AccountID
		res.Site = s
	}
	q.SiteID, q.SiteGeometry = res.Site.ID, res.Site.Geometry
	res.AdmitResult, err = admitted(q, v, status, lim, now, cur)
	return res, err
}
