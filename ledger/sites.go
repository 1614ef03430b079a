package ledger

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
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
	CreatedAt   time.Time
}

// CreateSite stores a new site.
func (l *Ledger) CreateSite(ctx context.Context, s Site) (Site, error) {
	s.ID = newID()
	s.CreatedAt = l.now()
	_, err := l.pool.Exec(ctx, `INSERT INTO sites (site_id, account_id, name, portfolio_id, geometry, fingerprint, area_m2, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		s.ID, s.AccountID, s.Name, s.PortfolioID, s.Geometry, s.Fingerprint, s.AreaM2, s.CreatedAt)
	return s, translate(err)
}

// GrantSection records section access acquired for a site.
func (l *Ledger) GrantSection(ctx context.Context, account, site uuid.UUID, section string, purchase *uuid.UUID) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO section_grants (site_id, section_key, account_id, purchase_id, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, site, section, account, purchase, l.now())
	return translate(err)
}
