package ledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The nine scopes a key may hold (contract: Authentication).
const (
	ScopeSitesRead     = "sites:read"
	ScopeSitesWrite    = "sites:write"
	ScopeLayersRead    = "layers:read"
	ScopeQueriesRun    = "queries:run"
	ScopeReportsRead   = "reports:read"
	ScopeReportsCreate = "reports:create"
	ScopeArtifactsRead = "artifacts:read"
	ScopeAccessAcquire = "access:acquire"
	ScopeUsageRead     = "usage:read"
)

// Scopes lists every scope in contract order.
var Scopes = []string{ScopeSitesRead, ScopeSitesWrite, ScopeLayersRead, ScopeQueriesRun, ScopeReportsRead,
	ScopeReportsCreate, ScopeArtifactsRead, ScopeAccessAcquire, ScopeUsageRead}

// KeyPrefix starts every API key, so leaked keys are recognisable to secret scanners.
const KeyPrefix = "sek_"

// keyRandomBytes is 256 bits of randomness per key.
const keyRandomBytes = 32

// DefaultSpendLimit is the integration spending cap when none is given.
const DefaultSpendLimit = 100_000

// HashKey is the stored form of an API key: its SHA-256.
func HashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// KeyParams describe a new key. Zero values take the documented defaults.
type KeyParams struct {
	Account uuid.UUID
	Scopes  []string
	// Datasets nil permits all account datasets; empty permits none.
	Datasets []string
	// SpendLimit caps a new integration (default DefaultSpendLimit); it must
	// be nil when Integration is set, since the cap belongs to the integration.
	SpendLimit *int64
	// Principal is "machine" (default) or "human".
	Principal string
	// Integration attaches the key to an existing integration of the account.
	Integration *uuid.UUID
}

// NewKey is a created key; Secret is shown once and never stored.
type NewKey struct {
	Secret        string
	KeyID         uuid.UUID
	IntegrationID uuid.UUID
}

// CreateKey creates an API key (and its integration unless one is given).
func (l *Ledger) CreateKey(ctx context.Context, p KeyParams) (NewKey, error) {
	if p.Principal == "" {
		p.Principal = "machine"
	}
	if p.Principal != "machine" && p.Principal != "human" {
		return NewKey{}, fmt.Errorf("%w: principal must be machine or human", ErrInvalid)
	}
	if len(p.Scopes) == 0 {
		return NewKey{}, fmt.Errorf("%w: a key needs at least one scope", ErrInvalid)
	}
	for _, s := range p.Scopes {
		if !slices.Contains(Scopes, s) {
			return NewKey{}, fmt.Errorf("%w: unknown scope %q (known: %s)", ErrInvalid, s, strings.Join(Scopes, ","))
		}
	}
	if p.Integration != nil && p.SpendLimit != nil {
		return NewKey{}, fmt.Errorf("%w: --spend-limit belongs to a new integration; the existing integration keeps its cap", ErrInvalid)
	}
	limit := int64(DefaultSpendLimit)
	if p.SpendLimit != nil {
		limit = *p.SpendLimit
	}
	if limit < 0 {
		return NewKey{}, fmt.Errorf("%w: spend limit must be >= 0", ErrInvalid)
	}
	buf := make([]byte, keyRandomBytes)
	if _, err := rand.Read(buf); err != nil {
		return NewKey{}, err
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(buf)
	nk := NewKey{Secret: secret, KeyID: newID()}
	datasets := p.Datasets
	if datasets != nil {
		datasets = slices.Clone(datasets)
		slices.Sort(datasets)
		datasets = slices.Compact(datasets)
	}
	scopes := slices.Clone(p.Scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	now := l.now()
	err := l.tx(ctx, func(tx pgx.Tx) error {
		if err := lockAccount(ctx, tx, p.Account); err != nil {
			return err
		}
		if p.Integration != nil {
			var owner uuid.UUID
			err := tx.QueryRow(ctx, integrationOwnerSQL, *p.Integration).Scan(&owner)
			if err != nil || owner != p.Account {
				return fmt.Errorf("integration %s: %w", p.Integration, ErrNotFound)
			}
			nk.IntegrationID = *p.Integration
		} else {
			nk.IntegrationID = newID()
			if _, err := tx.Exec(ctx, insertIntegrationSQL, nk.IntegrationID, p.Account, limit, now); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, insertKeySQL,
			nk.KeyID, p.Account, nk.IntegrationID, secret[:len(KeyPrefix)+6], HashKey(secret), scopes, datasets, p.Principal, now)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return NewKey{}, err
		}
		return NewKey{}, translate(err)
	}
	return nk, nil
}

// RevokeKey revokes a key; it fails on the very next request. Revoking twice is a no-op.
func (l *Ledger) RevokeKey(ctx context.Context, keyID uuid.UUID) error {
	tag, err := l.pool.Exec(ctx, revokeKeySQL, keyID, l.now())
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Principal is the live authority behind a request's key.
type Principal struct {
	KeyID         uuid.UUID
	AccountID     uuid.UUID
	IntegrationID uuid.UUID
	AccountName   *string
	Kind          string
	Scopes        []string
	// KeyDatasets nil = all account datasets; empty = none.
	KeyDatasets []string
	// AccountDatasets nil = every catalogue dataset.
	AccountDatasets []string
	Revoked         bool
	// Catalogue is the layer catalogue's version as the authenticating
	// statement saw it (migration 0011): caches of catalogue reads key on
	// it, so a change is seen by the next request on every replica.
	Catalogue int64
}

// HasScope reports whether the key holds scope s.
func (p Principal) HasScope(s string) bool { return slices.Contains(p.Scopes, s) }

// DatasetIDs is the effective dataset restriction: the key's list narrowed by
// the account's. nil means all catalogue datasets.
func (p Principal) DatasetIDs() []string {
	switch {
	case p.KeyDatasets == nil && p.AccountDatasets == nil:
		return nil
	case p.KeyDatasets == nil:
		return p.AccountDatasets
	case p.AccountDatasets == nil:
		return p.KeyDatasets
	}
	out := []string{}
	for _, d := range p.KeyDatasets {
		if slices.Contains(p.AccountDatasets, d) {
			out = append(out, d)
		}
	}
	return out
}

// PermitsDataset reports whether the key may use layer id.
func (p Principal) PermitsDataset(id string) bool {
	ds := p.DatasetIDs()
	return ds == nil || slices.Contains(ds, id)
}

// Authenticate looks a presented key up by its hash. Unknown keys give
// ErrNotFound; revoked keys give the principal and ErrKeyRevoked (for the audit).
func (l *Ledger) Authenticate(ctx context.Context, key string) (Principal, error) {
	var p Principal
	err := l.pool.QueryRow(ctx, authenticateSQL, HashKey(key)).
		Scan(&p.KeyID, &p.AccountID, &p.IntegrationID, &p.AccountName, &p.Kind, &p.Scopes, &p.KeyDatasets, &p.AccountDatasets, &p.Revoked, &p.Catalogue)
	if err != nil {
		return Principal{}, translate(err)
	}
	if p.Revoked {
		return p, ErrKeyRevoked
	}
	return p, nil
}

// Integration is one API access and its shared spending cap.
type Integration struct {
	ID          uuid.UUID
	SpendLimit  int64
	CreditsUsed int64
}

// Integration reads an integration's cap and spend.
func (l *Ledger) Integration(ctx context.Context, id uuid.UUID) (Integration, error) {
	var in Integration
	err := l.pool.QueryRow(ctx, integrationSQL, id).Scan(&in.ID, &in.SpendLimit, &in.CreditsUsed)
	return in, translate(err)
}

const integrationSQL = `SELECT integration_id, spend_limit, credits_used FROM integrations WHERE integration_id = $1`

// authenticateCountSQL authenticates a key and, when the key is live and
// holds every scope in $3 (authorized), counts one hit in its account's
// counter of bucket $2: the key lookup and the rate window in one
// statement, so one round trip. The key is read fresh (revocation and scope
// changes apply at once, as with Authenticate). The count is the bare
// nextval of rate_count's fast path (CASE evaluates it only when reached);
// AuthenticateCount calls rate_count itself when that shows a finished
// window or no counter, which happens once a window per account.
const authenticateCountSQL = `WITH k AS (
		SELECT k.key_id, k.account_id, k.integration_id, a.name, k.principal_kind, k.scopes, k.dataset_ids AS key_datasets,
			a.dataset_ids AS account_datasets, k.revoked_at IS NOT NULL AS revoked, k.revoked_at IS NULL AND k.scopes @> $3::text[] AS authorized
		FROM api_keys k JOIN accounts a USING (account_id) WHERE k.key_hash = $1
	)
	SELECT k.key_id, k.account_id, k.integration_id, k.name, k.principal_kind, k.scopes, k.key_datasets, k.account_datasets, k.revoked,
		k.authorized, CASE WHEN k.authorized THEN nextval(rate_counter(k.account_id, $2)) END, ` + catalogueVersionSQL + `
	FROM k`

// catalogueVersionSQL reads the catalogue's version beside a key lookup.
const catalogueVersionSQL = `(SELECT version FROM catalogue_version)`

// AuthenticateCount is Authenticate and, for a live key holding every scope
// in scopes, Count in bucket's current window, in one round trip (two for
// the first count of a window, or of an account without a counter). counted
// reports whether the window was counted (false: the key is revoked or
// lacks a scope, and nothing was counted, as when Authenticate's caller
// refuses before counting). Errors are Authenticate's. Each prefetch in
// pf is read in the same round trip (prefetch.go) and holds its own
// answer; its error never fails the authentication.
func (l *Ledger) AuthenticateCount(ctx context.Context, key string, scopes []string, bucket string, window time.Duration, pf ...Prefetch) (p Principal, w RateWindow, counted bool, err error) {
	now := l.now()
	cur := windowIndex(now, window)
	if scopes == nil {
		scopes = []string{}
	}
	var (
		authorized bool
		count      *int64 // NULL: not counted, or no counter
	)
	hash := HashKey(key)
	scan := func(row pgx.Row) error {
		return row.Scan(&p.KeyID, &p.AccountID, &p.IntegrationID, &p.AccountName, &p.Kind, &p.Scopes, &p.KeyDatasets, &p.AccountDatasets, &p.Revoked, &authorized, &count, &p.Catalogue)
	}
	if len(pf) == 0 {
		err = scan(l.pool.QueryRow(ctx, authenticateCountSQL, hash, bucket, scopes))
	} else {
		b := &pgx.Batch{}
		b.Queue(authenticateCountSQL, hash, bucket, scopes)
		for _, f := range pf {
			f.queue(b, hash)
		}
		br := l.pool.SendBatch(ctx, b)
		err = scan(br.QueryRow())
		for _, f := range pf {
			f.scan(br)
		}
		if cerr := br.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		return Principal{}, RateWindow{}, false, translate(err)
	}
	if p.Revoked {
		return p, RateWindow{}, false, ErrKeyRevoked
	}
	if !authorized {
		return p, RateWindow{}, false, nil
	}
	if count == nil || !windowBegun(*count, cur) {
		// A finished window (or no counter): that nextval counted in the
		// finished window only; rate_count begins this one and counts the
		// hit in it.
		v, err := l.rateCount(ctx, p.AccountID, bucket, cur)
		if err != nil {
			return Principal{}, RateWindow{}, false, err
		}
		count = &v
	}
	return p, rateWindow(*count, now, window, cur), true, nil
}

// The statements of keys and integrations, by what they do.
const (
	// integrationOwnerSQL reads an integration's account.
	integrationOwnerSQL = `SELECT account_id FROM integrations WHERE integration_id = $1`
	// insertIntegrationSQL creates an integration with its spending cap.
	insertIntegrationSQL = `INSERT INTO integrations (integration_id, account_id, spend_limit, created_at) VALUES ($1, $2, $3, $4)`
	// insertKeySQL creates a key (its hash, never its secret).
	insertKeySQL = `INSERT INTO api_keys (key_id, account_id, integration_id, prefix, key_hash, scopes, dataset_ids, principal_kind, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	// revokeKeySQL revokes a key at $2 unless it is already revoked.
	revokeKeySQL = `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE key_id = $1`
	// authenticateSQL reads the principal of the key whose hash is $1,
	// with the catalogue's version (Admit's admitPrincipalSQL is
	// the same read).
	authenticateSQL = `SELECT k.key_id, k.account_id, k.integration_id, a.name, k.principal_kind, k.scopes, k.dataset_ids,
			a.dataset_ids, k.revoked_at IS NOT NULL, ` + catalogueVersionSQL + `
		FROM api_keys k JOIN accounts a USING (account_id) WHERE k.key_hash = $1`
)
