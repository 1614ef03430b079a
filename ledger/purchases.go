package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Purchase errors. A rejected check leaves nothing behind.
var (
	ErrInsufficientCredits = newError("ledger: insufficient credits")
	ErrCreditCeiling       = newError("ledger: integration spending limit would be exceeded")
	ErrSiteIneligible      = newError("ledger: site ineligible for new purchases")
	// ErrUnknownSection carries the unknown keys in UnknownSectionsError.
	ErrUnknownSection = newError("ledger: unknown section")
)

// UnknownSectionsError names sections that do not exist (or that the key may not see).
type UnknownSectionsError struct{ Keys []string }

func (e *UnknownSectionsError) Error() string {
	return fmt.Sprintf("ledger: unknown sections %v", e.Keys)
}
func (e *UnknownSectionsError) Unwrap() error { return ErrUnknownSection }

// ReceiptLine is one charged item of a receipt.
type ReceiptLine struct {
	Description string `json:"description"`
	SectionKey  string `json:"section_key,omitempty"`
	Credits     int64  `json:"credits"`
}

// Receipt is the immutable record of a purchase's debit.
type Receipt struct {
	ID             uuid.UUID
	IssuedAt       time.Time
	CreditsCharged int64
	BalanceBefore  int64
	BalanceAfter   int64
	Lines          []ReceiptLine
}

// Purchase is one entry of the purchase history.
type Purchase struct {
	ID              uuid.UUID
	AccountID       uuid.UUID
	Kind            string // site_access, report, legacy_usage
	SiteID          *uuid.UUID
	ReportID        *uuid.UUID
	SectionKeys     []string
	ChargedSections []string
	CreditsCharged  int64
	CreditsRefunded *int64
	RefundStatus    *string
	BalanceAfter    *int64
	LegacyID        *string
	Limitations     []string
	CreatedAt       *time.Time
	Receipt         *Receipt
	// IntegrationCreditsRemaining is filled by Acquire: the cap left after it.
	IntegrationCreditsRemaining int64
}

// AcquireParams describe a section purchase.
type AcquireParams struct {
	Account     uuid.UUID
	Integration uuid.UUID
	// IdemKey is the request's Idempotency-Key: a purchase already made with
	// it is returned instead of buying again.
	IdemKey  string
	SiteID   uuid.UUID
	Sections []string
	// MaxSiteAreaM2 makes larger sites ineligible.
	MaxSiteAreaM2 float64
	// Visible reports whether the caller's key may see a section (its dataset
	// restriction permits at least one of the section's layers); nil: all.
	Visible func(section string, layerIDs []string) bool
}

const (
	purchaseByIdemKeySQL = `SELECT purchase_id FROM purchases WHERE integration_id = $1 AND idem_key = $2`
	sectionLayersSQL     = `SELECT s.section_key, s.name, s.price, coalesce(array_agg(l.layer_id) FILTER (WHERE l.layer_id IS NOT NULL), '{}')
			FROM sections s LEFT JOIN layers l USING (section_key) WHERE s.section_key = ANY ($1) GROUP BY s.section_key`
	grantedSectionsSQL    = `SELECT section_key FROM section_grants WHERE site_id = $1 AND section_key = ANY ($2)`
	insertSectionGrantSQL = `INSERT INTO section_grants (site_id, section_key, account_id, purchase_id, created_at) VALUES ($1, $2, $3, $4, $5)`
)

// Acquire buys section access for a site in one transaction: it locks the
// account and integration, checks the site, the sections, the balance and the
// integration's cap, and writes the purchase, its receipt, the debit entry and
// the grants — or writes nothing. Sections already acquired for the site are
// not charged again. A retry with the same IdemKey returns the first purchase.
func (l *Ledger) Acquire(ctx context.Context, p AcquireParams) (Purchase, error) {
	var out Purchase
	err := l.tx(ctx, func(tx pgx.Tx) error {
		pay, err := lockPayer(ctx, tx, p.Account, p.Integration)
		if err != nil {
			return err
		}
		if err := l.fault(ctx, "acquire:locked"); err != nil {
			return err
		}
		var replayed bool
		out, replayed, err = replayOrCheckSite(ctx, tx, pay, p.SiteID, p.MaxSiteAreaM2, p.IdemKey, func() (id uuid.UUID, err error) {
			err = tx.QueryRow(ctx, purchaseByIdemKeySQL, p.Integration, p.IdemKey).Scan(&id)
			return id, err
		})
		if err != nil || replayed {
			return err
		}
		type section struct {
			name   string
			price  int64
			layers []string
		}
		sections := map[string]section{}
		rows, err := tx.Query(ctx, sectionLayersSQL, p.Sections)
		if err != nil {
			return nameParams(err, "section_keys")
		}
		for rows.Next() {
			var k string
			var s section
			if err := rows.Scan(&k, &s.name, &s.price, &s.layers); err != nil {
				rows.Close()
				return err
			}
			sections[k] = s
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nameParams(err, "section_keys")
		}
		var unknown []string
		for _, k := range p.Sections {
			s, ok := sections[k]
			if !ok || (p.Visible != nil && !p.Visible(k, s.layers)) {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			return &UnknownSectionsError{Keys: unknown}
		}
		granted := map[string]bool{}
		grows, err := tx.Query(ctx, grantedSectionsSQL, p.SiteID, p.Sections)
		if err != nil {
			return err
		}
		for grows.Next() {
			var k string
			if err := grows.Scan(&k); err != nil {
				grows.Close()
				return err
			}
			granted[k] = true
		}
		grows.Close()
		d := debit{kind: "site_access", idemKey: p.IdemKey, site: p.SiteID, sectionKeys: p.Sections}
		for _, k := range p.Sections {
			if granted[k] {
				continue
			}
			s := sections[k]
			d.chargedSections = append(d.chargedSections, k)
			d.lines = append(d.lines, ReceiptLine{Description: "Site access: " + s.name, SectionKey: k, Credits: s.price})
		}
		out, err = l.charge(ctx, tx, pay, d, "acquire")
		if err != nil {
			return err
		}
		for _, k := range d.chargedSections {
			if _, err := tx.Exec(ctx, insertSectionGrantSQL,
				p.SiteID, k, p.Account, out.ID, *out.CreatedAt); err != nil {
				return err
			}
		}
		return l.fault(ctx, "acquire:grants")
	})
	if err != nil {
		return Purchase{}, chargeError(err)
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func ptrTo[T any](v T) *T { return &v }

const purchaseColumns = `p.purchase_id, p.account_id, p.kind, p.site_id, p.report_id, p.section_keys, p.charged_sections, p.credits_charged,
	p.credits_refunded, p.refund_status, p.balance_after, p.legacy_id, p.limitations, p.created_at,
	r.receipt_id, r.issued_at, r.credits_charged, r.balance_before, r.balance_after, r.lines`

func scanPurchase(row pgx.Row) (Purchase, error) {
	var p Purchase
	var rid *uuid.UUID
	var issued *time.Time
	var rc, rb, ra *int64
	var lines []byte
	err := row.Scan(&p.ID, &p.AccountID, &p.Kind, &p.SiteID, &p.ReportID, &p.SectionKeys, &p.ChargedSections, &p.CreditsCharged,
		&p.CreditsRefunded, &p.RefundStatus, &p.BalanceAfter, &p.LegacyID, &p.Limitations, &p.CreatedAt,
		&rid, &issued, &rc, &rb, &ra, &lines)
	if err != nil {
		return p, err
	}
	if rid != nil {
		p.Receipt = &Receipt{ID: *rid, IssuedAt: *issued, CreditsCharged: *rc, BalanceBefore: *rb, BalanceAfter: *ra}
		if err := json.Unmarshal(lines, &p.Receipt.Lines); err != nil {
			return p, err
		}
	}
	return p, nil
}

const purchaseSQL = `SELECT ` + purchaseColumns + ` FROM purchases p LEFT JOIN receipts r USING (purchase_id)
		WHERE p.purchase_id = $1 AND p.account_id = $2`

func readPurchase(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, account, id uuid.UUID) (Purchase, error) {
	return scanPurchase(q.QueryRow(ctx, purchaseSQL, id, account))
}

// Purchase reads one purchase of an account (another account's is ErrNotFound).
func (l *Ledger) Purchase(ctx context.Context, account, id uuid.UUID) (Purchase, error) {
	p, err := readPurchase(ctx, l.pool, account, id)
	return p, translate(err)
}

// PurchaseFilter narrows ListPurchases.
type PurchaseFilter struct {
	SiteID        *uuid.UUID
	Kind          string
	CreatedFrom   *time.Time
	CreatedBefore *time.Time
	// After continues newest first after (created_at, id); AfterUndated
	// continues inside the undated legacy tail.
	AfterTime    *time.Time
	AfterID      uuid.UUID
	AfterUndated bool
	Limit        int
}

const listPurchasesSQL = `SELECT ` + purchaseColumns + ` FROM purchases p LEFT JOIN receipts r USING (purchase_id)
		WHERE p.account_id = $1
		  AND ($2::uuid IS NULL OR p.site_id = $2)
		  AND ($3 = '' OR p.kind = $3)
		  AND (NOT $4 OR p.created_at IS NOT NULL)
		  AND ($5::timestamptz IS NULL OR p.created_at >= $5)
		  AND ($6::timestamptz IS NULL OR p.created_at < $6)
		  AND CASE
		        WHEN $9 THEN p.created_at IS NULL AND p.purchase_id < $8
		        WHEN $7::timestamptz IS NULL THEN true
		        ELSE p.created_at IS NULL OR (p.created_at, p.purchase_id) < ($7, $8)
		      END
		ORDER BY p.created_at DESC NULLS LAST, p.purchase_id DESC
		LIMIT $10`

// ListPurchases returns the account's purchases newest first, undated legacy
// entries last (and excluded by date filters), at most Limit+1.
func (l *Ledger) ListPurchases(ctx context.Context, account uuid.UUID, f PurchaseFilter) ([]Purchase, error) {
	dated := f.CreatedFrom != nil || f.CreatedBefore != nil
	rows, err := l.pool.Query(ctx, listPurchasesSQL, account, f.SiteID, f.Kind, dated, f.CreatedFrom, f.CreatedBefore, f.AfterTime, f.AfterID, f.AfterUndated, f.Limit+1)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []Purchase
	for rows.Next() {
		p, err := scanPurchase(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, p)
	}
	return out, translate(rows.Err())
}

// LegacyUsage is one usage transaction of the old system.
type LegacyUsage struct {
	LegacyID  string
	AccountID uuid.UUID
	Credits   int64
	CreatedAt *time.Time
	SiteID    *uuid.UUID
}

// legacyLimitations explains what legacy entries cannot say.
var legacyLimitations = []string{
	"Imported from the previous system: no receipt was issued.",
	"Original balances and refund status were not recorded and are unknown.",
}

const insertLegacyPurchaseSQL = `INSERT INTO purchases (purchase_id, account_id, kind, site_id, credits_charged, legacy_id, limitations, created_at)
				VALUES ($1, $2, 'legacy_usage', $3, $4, $5, $6, $7) ON CONFLICT (legacy_id) DO NOTHING`

// ImportLegacy records legacy usage transactions as legacy_usage purchases.
// They do not move balances (the old system already did); importing the same
// legacy id twice is a no-op. Returns how many were new.
func (l *Ledger) ImportLegacy(ctx context.Context, entries []LegacyUsage) (int, error) {
	n := 0
	err := l.tx(ctx, func(tx pgx.Tx) error {
		for _, e := range entries {
			if e.Credits < 0 || e.LegacyID == "" {
				return fmt.Errorf("%w: legacy entry %q", ErrInvalid, e.LegacyID)
			}
			id := LegacyPurchaseID(e.LegacyID)
			tag, err := tx.Exec(ctx, insertLegacyPurchaseSQL,
				id, e.AccountID, e.SiteID, e.Credits, e.LegacyID, legacyLimitations, e.CreatedAt)
			if err != nil {
				return err
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	return n, translate(err)
}

// LegacyPurchaseID is the purchase id of a legacy usage transaction: derived
// from its original id so it is stable across imports.
func LegacyPurchaseID(legacyID string) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("siteenv-legacy:"+legacyID))
}

// Violation is a broken ledger invariant.
type Violation struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
}

// Check verifies the ledger's invariants: every balance equals grants −
// debits + refunds; no integration has used more than its limit, and its
// used credits are its purchases net of refunds; every debit has exactly
// one receipt; every access grant has a receipt; a purchase is refunded at
// most once, by exactly what it says it refunded, and only for a failed report.
func (l *Ledger) Check(ctx context.Context) ([]Violation, error) {
	var out []Violation
	queries := []struct{ rule, sql string }{
		{"balance = grants - debits + refunds", `SELECT a.account_id::text || ': balance ' || a.credit_balance || ', entries ' || coalesce(sum(e.amount), 0)
			FROM accounts a LEFT JOIN credit_entries e USING (account_id)
			GROUP BY a.account_id, a.credit_balance HAVING a.credit_balance <> coalesce(sum(e.amount), 0)`},
		{"integration used <= limit", `SELECT integration_id::text || ': used ' || credits_used || ' of ' || spend_limit FROM integrations WHERE credits_used > spend_limit`},
		{"integration used = its debits - refunds", `SELECT i.integration_id::text || ': used ' || i.credits_used || ', purchases net of refunds ' || coalesce(sum(p.credits_charged - coalesce(p.credits_refunded, 0)), 0)
			FROM integrations i LEFT JOIN purchases p ON p.integration_id = i.integration_id AND p.kind <> 'legacy_usage'
			GROUP BY i.integration_id, i.credits_used HAVING i.credits_used <> coalesce(sum(p.credits_charged - coalesce(p.credits_refunded, 0)), 0)`},
		{"one refund per refunded purchase, of what it refunded", `SELECT p.purchase_id::text || ': refunded ' || coalesce(p.credits_refunded, 0) || ', refund entries ' || count(e.entry_id) || ' of ' || coalesce(sum(e.amount), 0)
			FROM purchases p LEFT JOIN credit_entries e ON e.purchase_id = p.purchase_id AND e.kind = 'refund'
			WHERE p.kind <> 'legacy_usage'
			GROUP BY p.purchase_id, p.credits_refunded
			HAVING count(e.entry_id) > 1 OR coalesce(sum(e.amount), 0) <> coalesce(p.credits_refunded, 0)`},
		{"only failed reports are refunded", `SELECT p.purchase_id::text FROM purchases p JOIN reports rp ON rp.report_id = p.report_id
			WHERE p.credits_refunded > 0 AND rp.status <> 'failed'`},
		{"one receipt per debit", `SELECT e.entry_id::text || ': ' || count(r.receipt_id) || ' receipts'
			FROM credit_entries e LEFT JOIN receipts r USING (purchase_id) WHERE e.kind = 'debit'
			GROUP BY e.entry_id HAVING count(r.receipt_id) <> 1`},
		{"no access grant without a receipt", `SELECT g.site_id::text || '/' || g.section_key FROM section_grants g
			LEFT JOIN receipts r USING (purchase_id) WHERE r.receipt_id IS NULL`},
	}
	for _, q := range queries {
		rows, err := l.pool.Query(ctx, q.sql)
		if err != nil {
			return nil, translate(err)
		}
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				rows.Close()
				return nil, translate(err)
			}
			out = append(out, Violation{Rule: q.rule, Detail: d})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, translate(err)
		}
	}
	slices.SortFunc(out, func(a, b Violation) int {
		if a.Rule != b.Rule {
			if a.Rule < b.Rule {
				return -1
			}
			return 1
		}
		if a.Detail < b.Detail {
			return -1
		}
		return 1
	})
	return out, nil
}
