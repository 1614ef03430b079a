package ledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Artifact is an immutable stored file (a report PDF, a map image).
type Artifact struct {
	ID         uuid.UUID
	AccountID  uuid.UUID
	ReportID   *uuid.UUID
	RevisionID *uuid.UUID
	Revision   *int
	Filename   string
	MediaType  string
	Size       int64
	// SHA256 is lowercase hex.
	SHA256 string
	// StorageKey is the private object key; never shown to clients.
	StorageKey string
	// DatasetIDs are the layers whose data the file holds; nil means
	// unknown (see Principal.PermitsScope).
	DatasetIDs []string
	CreatedAt  time.Time
}

// ArtifactParams describe a new artifact; artifacts.Put fills them.
type ArtifactParams struct {
	ID         uuid.UUID // required (uuid v7), chosen before the upload
	Account    uuid.UUID
	ReportID   *uuid.UUID
	RevisionID *uuid.UUID
	Revision   *int
	Filename   string
	MediaType  string
	Size       int64
	SHA256     string
	StorageKey string
	DatasetIDs []string
}

// The media types an artifact may have (the OpenAPI Artifact.media_type).
const (
	MediaPDF  = "application/pdf"
	MediaJPEG = "image/jpeg"
)

var (
	filenameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	sha256RE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidArtifactFilename reports whether name may name an artifact: 1..128
// characters of letters, digits, '.', '_' and '-', starting with a letter or
// digit, so it is safe in an object key and a Content-Disposition header.
func ValidArtifactFilename(name string) bool { return filenameRE.MatchString(name) }

const artifactColumns = `artifact_id, account_id, report_id, revision_id, revision, filename, media_type, size_bytes, sha256, storage_key, dataset_ids, created_at`

func scanArtifact(row pgx.Row, a *Artifact, more ...any) error {
	return row.Scan(append([]any{&a.ID, &a.AccountID, &a.ReportID, &a.RevisionID, &a.Revision, &a.Filename, &a.MediaType,
		&a.Size, &a.SHA256, &a.StorageKey, &a.DatasetIDs, &a.CreatedAt}, more...)...)
}

const insertArtifactSQL = `INSERT INTO artifacts (` + artifactColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ` + artifactColumns

// CreateArtifact records a file already written to the store.
func (l *Ledger) CreateArtifact(ctx context.Context, p ArtifactParams) (Artifact, error) {
	switch {
	case p.ID == uuid.Nil || p.Account == uuid.Nil:
		return Artifact{}, fmt.Errorf("%w: artifact and account ids are required", ErrInvalid)
	case !ValidArtifactFilename(p.Filename):
		return Artifact{}, fmt.Errorf("%w: artifact filename %q", ErrInvalid, p.Filename)
	case p.MediaType != MediaPDF && p.MediaType != MediaJPEG:
		return Artifact{}, fmt.Errorf("%w: artifact media type %q", ErrInvalid, p.MediaType)
	case p.Size < 0 || !sha256RE.MatchString(p.SHA256) || p.StorageKey == "":
		return Artifact{}, fmt.Errorf("%w: artifact size, sha256 and storage key are required", ErrInvalid)
	case p.Revision != nil && *p.Revision < 1:
		return Artifact{}, fmt.Errorf("%w: artifact revision must be >= 1", ErrInvalid)
	}
	ds := p.DatasetIDs
	if ds != nil {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		ds = slices.Compact(ds)
	}
	var a Artifact
	err := scanArtifact(l.pool.QueryRow(ctx, insertArtifactSQL,
		p.ID, p.Account, p.ReportID, p.RevisionID, p.Revision, p.Filename, p.MediaType, p.Size, p.SHA256, p.StorageKey, ds, l.now()), &a)
	if err != nil {
		return Artifact{}, translate(err)
	}
	return a, nil
}

const artifactSQL = `SELECT ` + artifactColumns + ` FROM artifacts WHERE artifact_id = $1 AND account_id = $2`

// Artifact reads an artifact of account; another account's is ErrNotFound.
func (l *Ledger) Artifact(ctx context.Context, account, id uuid.UUID) (Artifact, error) {
	var a Artifact
	err := scanArtifact(l.pool.QueryRow(ctx, artifactSQL, id, account), &a)
	if err != nil {
		return Artifact{}, translate(err)
	}
	return a, nil
}

// PermitsScope reports whether the key may read something holding data of
// datasets: every one must be permitted (PermitsDataset). nil datasets is an
// unknown scope (a historical file), readable only by keys without a dataset
// restriction of their own (contract: endpoint rule 8).
func (p Principal) PermitsScope(datasets []string) bool {
	if datasets == nil {
		return p.KeyDatasets == nil
	}
	for _, d := range datasets {
		if !p.PermitsDataset(d) {
			return false
		}
	}
	return true
}

// CapabilityPrefix starts every download capability:
// dl_<delivery uuid>.<43 URL-safe base64 characters: 256 random bits>.
const CapabilityPrefix = "dl_"

var capabilityRE = regexp.MustCompile(`^dl_[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$`)

// ValidCapability reports whether s has the form of a capability.
func ValidCapability(s string) bool { return capabilityRE.MatchString(s) }

// HashCapability is the stored form of a capability: its SHA-256.
func HashCapability(c string) []byte {
	h := sha256.Sum256([]byte(c))
	return h[:]
}

// NewDelivery is a minted capability; Capability is shown once, never stored.
type NewDelivery struct {
	ID         uuid.UUID
	Capability string
	ArtifactID uuid.UUID
	SHA256     string
	ExpiresAt  time.Time
}

const insertDeliverySQL = `INSERT INTO deliveries (capability_hash, delivery_id, artifact_id, account_id, key_id, expires_at, created_at)
		SELECT $1, $2, a.artifact_id, a.account_id, $5, $6, $7 FROM artifacts a WHERE a.artifact_id = $3 AND a.account_id = $4
		RETURNING (SELECT sha256 FROM artifacts WHERE artifact_id = $3)`

// MintDelivery mints a capability for an artifact of account on behalf of key,
// valid for ttl. An artifact of another account is ErrNotFound.
func (l *Ledger) MintDelivery(ctx context.Context, account, artifact, key uuid.UUID, ttl time.Duration) (NewDelivery, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return NewDelivery{}, err
	}
	d := NewDelivery{ID: newID(), ArtifactID: artifact}
	d.Capability = CapabilityPrefix + d.ID.String() + "." + base64.RawURLEncoding.EncodeToString(buf)
	now := l.now()
	d.ExpiresAt = now.Add(ttl)
	err := l.pool.QueryRow(ctx, insertDeliverySQL,
		HashCapability(d.Capability), d.ID, artifact, account, key, d.ExpiresAt, now).Scan(&d.SHA256)
	if err != nil {
		return NewDelivery{}, translate(err)
	}
	return d, nil
}

// Delivery is a capability's grant with the live authority behind it.
type Delivery struct {
	ID        uuid.UUID
	Artifact  Artifact
	ExpiresAt time.Time
	// Revoked: the delivery itself was revoked (RevokeDelivery).
	Revoked bool
	// Minter is the minting key's principal as it is now: its Revoked,
	// Scopes and dataset restrictions (and the account's) are current.
	Minter Principal
}

const deliveryArtifactSQL = `SELECT a.artifact_id, a.account_id, a.report_id, a.revision_id, a.revision, a.filename, a.media_type,
			a.size_bytes, a.sha256, a.storage_key, a.dataset_ids, a.created_at,
			d.delivery_id, d.expires_at, d.revoked_at IS NOT NULL,
			k.key_id, k.account_id, k.integration_id, acc.name, k.principal_kind, k.scopes, k.dataset_ids, acc.dataset_ids, k.revoked_at IS NOT NULL
		FROM deliveries d
		JOIN artifacts a USING (artifact_id)
		JOIN api_keys k ON k.key_id = d.key_id
		JOIN accounts acc ON acc.account_id = k.account_id
		WHERE d.capability_hash = $1`

// Delivery looks a presented capability up by its hash; unknown is ErrNotFound.
// Nothing is cached: every call reads the key and account as they are now.
func (l *Ledger) Delivery(ctx context.Context, capability string) (Delivery, error) {
	var d Delivery
	p := &d.Minter
	err := scanArtifact(l.pool.QueryRow(ctx, deliveryArtifactSQL, HashCapability(capability)), &d.Artifact,
		&d.ID, &d.ExpiresAt, &d.Revoked,
		&p.KeyID, &p.AccountID, &p.IntegrationID, &p.AccountName, &p.Kind, &p.Scopes, &p.KeyDatasets, &p.AccountDatasets, &p.Revoked)
	if err != nil {
		return Delivery{}, translate(err)
	}
	return d, nil
}

const revokeDeliverySQL = `UPDATE deliveries SET revoked_at = coalesce(revoked_at, $2) WHERE delivery_id = $1`

// RevokeDelivery ends a delivery before it expires; revoking twice is a no-op.
func (l *Ledger) RevokeDelivery(ctx context.Context, id uuid.UUID) error {
	tag, err := l.pool.Exec(ctx, revokeDeliverySQL, id, l.now())
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
