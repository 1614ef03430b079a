package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrAdmissionCheck: one of Admit's checks failed (the
// idempotency key was already claimed, the site does not exist and may not
// be created, a section is not granted) and nothing was written or
// counted. The caller takes the step-by-step path (ClaimIdempotency,
// SaveSite, SiteAccess, then Admit without IdemKey), which tells which and
// answers it.
var ErrAdmissionCheck = newError("ledger: admission check failed")

// AdmitRequest is POST /queries' whole admission: its idempotency claim,
// its site's registration, the sections the site must hold and the query.
// With Claimed it is the query's admission alone, for a request whose key
// (IdemKey, stored with the query; empty: none) the caller claimed itself
// (ClaimIdempotency) and whose site it registered: Query's SiteID and
// SiteGeometry are the site's, and Auth, Integration, Operation,
// Fingerprint, Site, CreateSite, Sections and Answer are not read.
type AdmitRequest struct {
	Claimed bool
	// Auth, when set, has the admission authenticate the key itself, in
	// the same round trip (AdmitAuth): Integration, CreateSite and the
	// query's AccountID and IntegrationID are then the key's, and the
	// result's Principal is the key's as Authenticate reads it.
	Auth        *AdmitAuth
	Integration uuid.UUID
	IdemKey     string
	Operation   string
	Fingerprint []byte
	// Site is registered as SaveSite does without an external reference:
	// the account's active site of Site.Fingerprint, created when missing
	// and CreateSite allows, with Site.ID when set (a new id otherwise).
	Site       Site
	CreateSite bool
	// Sections must all be granted for the site.
	Sections []string
	// Query is admitted (counted in the account's rate, stored queued or
	// running: AdmitLimits); with IdemKey its SiteID and SiteGeometry are
	// the registered site's.
	Query  Query
	Limits AdmitLimits
	// Answer, when set, is the query's answer, computed before its
	// admission: the query stored is Answer.Finish.Row (Query is not read),
	// finished, with the request's response and audit record
	// (AdmitAnswer), in one statement (admitAnswered). It needs Auth
	// (ErrAnswerNeedsAuth otherwise).
	Answer *AdmitAnswer
}

// AdmitAnswer is a query answered before it was admitted: its engine work
// ran while nothing was stored yet (an answer depends on frozen inputs
// only), so the admission's transaction stores the query finished, the
// idempotency claim done with Response and the audit record Activity. The
// query never runs in the ledger's sense (no attempt, lease or finish):
// one round trip and one relaxed commit in all, where admitting it running
// and storing its finish behind the answer took two transactions and
// wrote the query's row twice. Response's body names the site by the
// request's Site.ID; when the account's site of that fingerprint existed
// already, the stored body names that site instead (the caller rewrites
// its own copy: Admission.Site.ID).
type AdmitAnswer struct {
	Finish   QueryFinish
	Response IdemResponse
	Activity Activity
}

// Admission is what Admit stored.
type Admission struct {
	// Token is the fresh idempotency claim's: the caller completes or
	// releases it (CompleteIdempotency..., ReleaseIdempotency), whatever
	// the admission's outcome.
	Token uuid.UUID
	// Site as registered (SiteCreated: by this request).
	Site        Site
	SiteCreated bool
	// Principal is the key's, when the request's Auth had it authenticated.
	Principal Principal
	// Answered: the request's Answer was stored with the query (the claim
	// is done, Token is zero). Otherwise an Answer's query was refused
	// (ErrRateLimited, ErrCapacity) and the claim is Token's, running.
	Answered bool
	AdmitResult
}

// The admission's statements name the account and the integration by SQL
// expressions: parameters ($N::uuid) when the caller authenticated the key,
// or the key's row found by its hash (keyAccountSQL, keyIntegrationSQL)
// when the admission authenticates it itself (AdmitRequest.KeyHash). Each
// statement is built once for either form (admitStatements).
func keyAccountSQL(n int) string {
	return fmt.Sprintf("(SELECT account_id FROM api_keys WHERE key_hash = $%d::bytea)", n)
}

func keyIntegrationSQL(n int) string {
	return fmt.Sprintf("(SELECT integration_id FROM api_keys WHERE key_hash = $%d::bytea)", n)
}

// admitStatements are admitBatch's statements of one form. A check
// is a siteenv_check column (migration 0018) of the statement that reads
// what it checks.
type admitStatements struct {
	// claim inserts the idempotency claim ($1: the integration) and checks
	// it is this request's (not another's of the same key).
	claim string
	// lock locks the account's row ($1: the account).
	lock string
	// site reads the account's active site of the fingerprint ($1: the
	// account; as saveSitePipelined) with its granted sections, and checks
	// it exists and holds every section of $3; its geometry only when its
	// id is not $4, the one this request created it with (the caller has
	// that geometry: reading back a site drawn with 10,000 positions cost
	// about 4 ms).
	site string
	// admit is admitQuerySQL of the site registered in the same
	// transaction, found by its fingerprint ($4; $5 is true).
	admit string
}

func newAdmitStatements(account func(n int) string, integration func(n int) string) admitStatements {
	return admitStatements{
		claim: `WITH claim AS (INSERT INTO idempotency (integration_id, idem_key, operation, fingerprint, state, created_at, updated_at, claim_token, lease_until)
		VALUES (` + integration(1) + `, $2, $3, $4, 'running', $5, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING 1)
	SELECT siteenv_check(EXISTS (SELECT 1 FROM claim), 'idempotency claim')`,
		lock: `SELECT account_id FROM accounts WHERE account_id = ` + account(1) + ` FOR UPDATE`,
		site: `SELECT siteenv_check(coalesce($3::text[] <@ granted, false), 'site'), ` + siteColumnsNotCreated + `, granted
	FROM (SELECT 1) one LEFT JOIN (SELECT ` + siteColumns + `, coalesce((SELECT array_agg(g.section_key) FROM section_grants g
			WHERE g.site_id = s.site_id AND g.account_id = s.account_id), '{}') AS granted
		FROM sites s WHERE account_id = ` + account(1) + ` AND fingerprint = $2 AND archived_at IS NULL ORDER BY created_at LIMIT 1) s ON true`,
		admit: `WITH site AS (SELECT site_id, geometry FROM sites
		WHERE account_id = ` + account(2) + ` AND fingerprint = $4::text AND archived_at IS NULL AND $5::boolean ORDER BY created_at LIMIT 1), ` +
			admitQueryCTEs("(SELECT site_id FROM site)", "(SELECT geometry FROM site)", account(2), integration(3)),
	}
}

var (
	// admitByID's account and integration are the caller's parameters.
	admitByID = newAdmitStatements(func(n int) string { return fmt.Sprintf("$%d::uuid", n) },
		func(n int) string { return fmt.Sprintf("$%d::uuid", n) })
	// admitByKey's are the key's whose hash is the parameter.
	admitByKey = newAdmitStatements(keyAccountSQL, keyIntegrationSQL)
)

// siteColumnsNotCreated are siteColumns with the geometry NULL for the site
// whose id is $4 (admitStatements.site).
var siteColumnsNotCreated = strings.Replace(siteColumns, "geometry", "CASE WHEN site_id = $4::uuid THEN NULL ELSE geometry END AS geometry", 1)

// admitPrincipalSQL reads the principal of the key whose hash is $1, as
// Authenticate does, with the catalogue's version, and checks the key
// exists, is not revoked, holds every scope of $2 and may use every dataset
// of $3 (the key's and its account's lists, NULL: all), and that the
// catalogue's version is $4 (the one the caller read the layers at).
const admitPrincipalSQL = `SELECT siteenv_check(coalesce(k.revoked_at IS NULL AND k.scopes @> $2::text[]
			AND (k.dataset_ids IS NULL OR k.dataset_ids @> $3::text[]) AND (a.dataset_ids IS NULL OR a.dataset_ids @> $3::text[]), false)
		AND ` + catalogueVersionSQL + ` = $4::bigint, 'principal'),
		k.key_id, k.account_id, k.integration_id, a.name, k.principal_kind, k.scopes, k.dataset_ids,
		a.dataset_ids, k.revoked_at IS NOT NULL, ` + catalogueVersionSQL + `
	FROM (SELECT 1) one LEFT JOIN (api_keys k JOIN accounts a USING (account_id)) ON k.key_hash = $1::bytea`

// admitSaveSiteByKeySQL is saveSiteSQL of the account of the key whose hash
// is $2, inserted only when the key holds sites:write.
const admitSaveSiteByKeySQL = `INSERT INTO sites (site_id, account_id, name, portfolio_id, geometry, fingerprint, area_m2,
		min_lon, min_lat, max_lon, max_lat, created_at)
	SELECT $1::uuid, k.account_id, $3::text, $4::uuid, $5::jsonb, $6::text, $7::double precision,
		$8::double precision, $9::double precision, $10::double precision, $11::double precision, $12::timestamptz
	FROM api_keys k WHERE k.key_hash = $2::bytea AND k.scopes @> ARRAY['` + ScopeSitesWrite + `']
		AND NOT EXISTS (SELECT 1 FROM sites WHERE account_id = k.account_id AND fingerprint = $6::text AND archived_at IS NULL)
	RETURNING site_id`

// AdmitAuth is what Admit checks of a key it authenticates
// itself (AdmitRequest.KeyHash): the scopes the operation needs, the
// datasets (layer ids) it uses and the catalogue version its layers were
// read at. Any that fails is ErrAdmissionCheck, as an unknown or revoked
// key is: nothing was written or counted, and the caller authenticates the
// key on its own to answer exactly.
type AdmitAuth struct {
	KeyHash   []byte
	Scopes    []string
	Datasets  []string
	Catalogue int64
}

// admitBatch is Admit of a request with an IdemKey and no Answer: one
// pipelined relaxed transaction (with ar.Auth, authenticates the key
// first,) claims the idempotency key, registers the site, checks its
// sections and admits the query (admitQueryCTEs: the admission counted,
// the query stored running or queued). Each check is a siteenv_check
// column (migration 0018), so a failed check undoes the whole transaction
// before the admission is counted: ErrAdmissionCheck. Past the checks,
// ErrRateLimited and ErrCapacity come with the fresh claim's Token (the
// claim and the site stay committed, as on the step-by-step path).
func (l *Ledger) admitBatch(ctx context.Context, ar AdmitRequest) (Admission, error) {
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
	frozen, err := l.frozenRefs(ctx, q.Frozen)
	if err != nil {
		return Admission{}, err
	}
	siteID := s.ID
	if siteID == uuid.Nil {
		siteID = newID()
	}
	sections := ar.Sections
	if sections == nil {
		sections = []string{}
	}
	cur := windowIndex(now, time.Minute)
	lim := ar.Limits
	st := admitByID
	var integration, account, queryIntegration any = ar.Integration, q.AccountID, q.IntegrationID
	createSite := ar.CreateSite
	// No BEGIN and COMMIT: a batch is one implicit transaction, committed
	// at its end, or rolled back whole when a statement fails (a failed
	// check then costs no ROLLBACK round trip); relaxedTxSQL's settings are
	// that transaction's.
	b := &pgx.Batch{}
	b.Queue(relaxedTxSQL)
	if a := ar.Auth; a != nil {
		st, createSite = admitByKey, true
		integration, account, queryIntegration = a.KeyHash, a.KeyHash, a.KeyHash
		b.Queue(admitPrincipalSQL, a.KeyHash, nonNil(a.Scopes), nonNil(a.Datasets), a.Catalogue)
	}
	b.Queue(st.claim, integration, ar.IdemKey, ar.Operation, ar.Fingerprint, now, token, now.Add(l.lease))
	b.Queue(st.lock, account)
	if createSite {
		siteSQL := saveSiteSQL
		if ar.Auth != nil {
			siteSQL = admitSaveSiteByKeySQL
		}
		b.Queue(siteSQL, siteID, account, s.Name, s.PortfolioID, s.Geometry, s.Fingerprint, s.AreaM2,
			s.Bounds[0], s.Bounds[1], s.Bounds[2], s.Bounds[3], now)
	}
	b.Queue(st.site, account, s.Fingerprint, sections, siteID)
	args := admitArgs(q, frozen, s.Fingerprint, true, cur, lim, now, ar.IdemKey)
	args[1], args[2] = account, queryIntegration
	b.Queue(st.admit, args...)
	br := l.pool.SendBatch(ctx, b)
	var (
		res     Admission
		locked  bool
		v       int64
		status  *string
		granted []string
	)
	err = func() error {
		if _, err := br.Exec(); err != nil { // relaxedTxSQL
			return err
		}
		var checked bool
		if ar.Auth != nil {
			p := &res.Principal
			if err := br.QueryRow().Scan(&checked, &p.KeyID, &p.AccountID, &p.IntegrationID, &p.AccountName, &p.Kind, &p.Scopes, &p.KeyDatasets,
				&p.AccountDatasets, &p.Revoked, &p.Catalogue); err != nil {
				return err
			}
			q.AccountID, q.IntegrationID = p.AccountID, p.IntegrationID
		}
		if err := br.QueryRow().Scan(&checked); err != nil { // the claim
			return err
		}
		var id uuid.UUID
		switch err := br.QueryRow().Scan(&id); {
		case err == nil:
			locked = true
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if createSite {
			switch err := br.QueryRow().Scan(&id); {
			case err == nil:
				res.SiteCreated = true
			case !errors.Is(err, pgx.ErrNoRows):
				return nameParams(err, siteParams...)
			}
		}
		st := &res.Site
		if err := br.QueryRow().Scan(&checked, &st.ID, &st.AccountID, &st.Name, &st.PortfolioID, &st.Geometry, &st.Fingerprint, &st.AreaM2,
			&st.Bounds[0], &st.Bounds[1], &st.Bounds[2], &st.Bounds[3], &st.CreatedAt, &st.ArchivedAt, &granted); err != nil {
			return err
		}
		return br.QueryRow().Scan(&v, &status)
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "SEA01":
		return Admission{}, ErrAdmissionCheck
	case err != nil:
		return Admission{}, translate(err)
	case !locked:
		// Not reached: a claim of a key whose account is gone.
		return Admission{}, ErrNotFound
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
