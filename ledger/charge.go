package ledger

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// This file is the one home of a charge: every paid operation (section
// access in purchases.go, a report order in reports.go) locks its payer,
// checks the site and then debits through here, inside its own transaction.

// payer is an account and integration locked (FOR UPDATE, account first, so
// concurrent charges of one account serialise without deadlock) for a charge.
type payer struct {
	account, integration uuid.UUID
	balance              int64
	// limit and used are the integration's spending cap and what it spent.
	limit, used int64
}

// remaining is what the integration may still spend.
func (p payer) remaining() int64 { return max(0, p.limit-p.used) }

const (
	lockBalanceSQL     = `SELECT credit_balance FROM accounts WHERE account_id = $1 FOR UPDATE`
	lockIntegrationSQL = `SELECT spend_limit, credits_used FROM integrations WHERE integration_id = $1 AND account_id = $2 FOR UPDATE`
)

func lockPayer(ctx context.Context, tx pgx.Tx, account, integration uuid.UUID) (payer, error) {
	p := payer{account: account, integration: integration}
	if err := tx.QueryRow(ctx, lockBalanceSQL, account).Scan(&p.balance); err != nil {
		return payer{}, err
	}
	if err := tx.QueryRow(ctx, lockIntegrationSQL,
		integration, account).Scan(&p.limit, &p.used); err != nil {
		return payer{}, err
	}
	return p, nil
}

const chargeableSiteSQL = `SELECT area_m2 FROM sites WHERE site_id = $1 AND account_id = $2 AND archived_at IS NULL`

// checkChargeableSite: the site is the account's, active, and no larger
// than maxAreaM2 (0: no limit).
func checkChargeableSite(ctx context.Context, tx pgx.Tx, account, site uuid.UUID, maxAreaM2 float64) error {
	var area float64
	if err := tx.QueryRow(ctx, chargeableSiteSQL, site, account).Scan(&area); err != nil {
		return err
	}
	if maxAreaM2 > 0 && area > maxAreaM2 {
		return ErrSiteIneligible
	}
	return nil
}

// replayOrCheckSite begins a charge made under an idempotency key (Acquire,
// OrderReport): the purchase of an earlier charge with the key, found by
// earlier (pgx.ErrNoRows: none), read with the integration's credits
// remaining now (replayed); or, for a new charge, the check that the site
// may be charged (checkChargeableSite).
func replayOrCheckSite(ctx context.Context, tx pgx.Tx, pay payer, site uuid.UUID, maxAreaM2 float64, idemKey string,
	earlier func() (uuid.UUID, error)) (pur Purchase, replayed bool, err error) {
	if idemKey != "" {
		id, err := earlier()
		if err == nil {
			pur, err = readPurchase(ctx, tx, pay.account, id)
			pur.IntegrationCreditsRemaining = pay.remaining()
			return pur, true, err
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return Purchase{}, false, err
		}
	}
	return Purchase{}, false, checkChargeableSite(ctx, tx, pay.account, site, maxAreaM2)
}

// debit is one charge's purchase.
type debit struct {
	kind string // site_access or report
	// idemKey is stored on the purchase ("" for none: a report keeps its key
	// on the report row).
	idemKey         string
	site            uuid.UUID
	report          *uuid.UUID
	sectionKeys     []string
	chargedSections []string
	lines           []ReceiptLine
}

func (d debit) credits() int64 {
	var n int64
	for _, l := range d.lines {
		n += l.Credits
	}
	return n
}

const (
	insertPurchaseSQL = `INSERT INTO purchases (purchase_id, account_id, integration_id, idem_key, kind, site_id, report_id,
			section_keys, charged_sections, credits_charged, credits_refunded, refund_status, balance_before, balance_after, created_at)
		VALUES ($1, $2, $3, nullif($4, ''), $5, $6, $7, $8, $9, $10, 0, 'none', $11, $12, $13)`
	insertReceiptSQL = `INSERT INTO receipts (receipt_id, purchase_id, issued_at, credits_charged, balance_before, balance_after, lines)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	insertDebitSQL = `INSERT INTO credit_entries (entry_id, account_id, kind, amount, balance_after, purchase_id, created_at)
			VALUES ($1, $2, 'debit', $3, $4, $5, $6)`
	setBalanceSQL     = `UPDATE accounts SET credit_balance = $2 WHERE account_id = $1`
	addCreditsUsedSQL = `UPDATE integrations SET credits_used = credits_used + $2 WHERE integration_id = $1`
)

// charge checks the payer's balance and cap for d and writes the purchase,
// its receipt, the debit entry and the new balance and spend. faults names
// the caller's fault points (faults+":checked", ":purchase", ":receipt").
func (l *Ledger) charge(ctx context.Context, tx pgx.Tx, p payer, d debit, faults string) (Purchase, error) {
	amount := d.credits()
	if amount > p.balance {
		return Purchase{}, ErrInsufficientCredits
	}
	if p.used+amount > p.limit {
		return Purchase{}, ErrCreditCeiling
	}
	if err := l.fault(ctx, faults+":checked"); err != nil {
		return Purchase{}, err
	}
	now := l.now()
	after := p.balance - amount
	site := d.site
	out := Purchase{ID: newID(), AccountID: p.account, Kind: d.kind, SiteID: &site, ReportID: d.report,
		SectionKeys: nonNil(d.sectionKeys), ChargedSections: nonNil(d.chargedSections), CreditsCharged: amount,
		CreditsRefunded: ptrTo(int64(0)), RefundStatus: ptrTo("none"), BalanceAfter: &after, Limitations: []string{}, CreatedAt: &now,
		Receipt:                     &Receipt{ID: newID(), IssuedAt: now, CreditsCharged: amount, BalanceBefore: p.balance, BalanceAfter: after, Lines: nonNil(d.lines)},
		IntegrationCreditsRemaining: p.limit - p.used - amount}
	if _, err := tx.Exec(ctx, insertPurchaseSQL,
		out.ID, p.account, p.integration, d.idemKey, d.kind, d.site, d.report, out.SectionKeys, out.ChargedSections,
		amount, p.balance, after, now); err != nil {
		return Purchase{}, err
	}
	if err := l.fault(ctx, faults+":purchase"); err != nil {
		return Purchase{}, err
	}
	lj, err := json.Marshal(out.Receipt.Lines)
	if err != nil {
		return Purchase{}, err
	}
	if _, err := tx.Exec(ctx, insertReceiptSQL, out.Receipt.ID, out.ID, now, amount, p.balance, after, lj); err != nil {
		return Purchase{}, err
	}
	if err := l.fault(ctx, faults+":receipt"); err != nil {
		return Purchase{}, err
	}
	if amount > 0 {
		if _, err := tx.Exec(ctx, insertDebitSQL, newID(), p.account, -amount, after, out.ID, now); err != nil {
			return Purchase{}, err
		}
		if _, err := tx.Exec(ctx, setBalanceSQL, p.account, after); err != nil {
			return Purchase{}, err
		}
		if _, err := tx.Exec(ctx, addCreditsUsedSQL, p.integration, amount); err != nil {
			return Purchase{}, err
		}
	}
	return out, nil
}

// chargeError passes a charge's domain refusals through as they are and
// translates the rest (driver errors) at the boundary.
func chargeError(err error) error {
	var use *UnknownSectionsError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &use), errors.Is(err, ErrInsufficientCredits), errors.Is(err, ErrCreditCeiling), errors.Is(err, ErrSiteIneligible):
		return err
	}
	return translate(err)
}
