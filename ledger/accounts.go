package ledger

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Account is a customer account.
type Account struct {
	ID            uuid.UUID
	Name          *string
	CreditBalance int64
	// DatasetIDs nil means every catalogue dataset.
	DatasetIDs []string
}

const (
	insertAccountSQL      = `INSERT INTO accounts (account_id, name, credit_balance, created_at) VALUES ($1, $2, $3, $4)`
	createRateCountersSQL = `SELECT rate_counter_create($1, bucket) FROM unnest($2::text[]) AS bucket`
	insertFirstGrantSQL   = `INSERT INTO credit_entries (entry_id, account_id, kind, amount, balance_after, created_at)
			VALUES ($1, $2, 'grant', $3, $3, $4)`
)

// CreateAccount creates an account holding credits.
func (l *Ledger) CreateAccount(ctx context.Context, name string, credits int64) (Account, error) {
	if credits < 0 {
		return Account{}, fmt.Errorf("%w: credits must be >= 0", ErrInvalid)
	}
	a := Account{ID: newID(), CreditBalance: credits}
	if name != "" {
		a.Name = &name
	}
	now := l.now()
	err := l.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertAccountSQL,
			a.ID, a.Name, credits, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, createRateCountersSQL, a.ID, rateBuckets); err != nil {
			return err
		}
		if credits == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, insertFirstGrantSQL, newID(), a.ID, credits, now)
		return err
	})
	return a, translate(err)
}

// Account reads one account.
func (l *Ledger) Account(ctx context.Context, id uuid.UUID) (Account, error) {
	var a Account
	err := l.pool.QueryRow(ctx, accountSQL, id).Scan(&a.ID, &a.Name, &a.CreditBalance, &a.DatasetIDs)
	return a, translate(err)
}

const accountSQL = `SELECT account_id, name, credit_balance, dataset_ids FROM accounts WHERE account_id = $1`

const (
	addCreditsSQL  = `UPDATE accounts SET credit_balance = credit_balance + $2 WHERE account_id = $1 RETURNING credit_balance`
	insertGrantSQL = `INSERT INTO credit_entries (entry_id, account_id, kind, amount, balance_after, created_at)
			VALUES ($1, $2, 'grant', $3, $4, $5)`
)

// GrantCredits adds amount (> 0) to an account's balance and returns the new balance.
// Admin grants are not purchases: they never appear in purchase history.
func (l *Ledger) GrantCredits(ctx context.Context, account uuid.UUID, amount int64) (int64, error) {
	if amount <= 0 {
		return 0, fmt.Errorf("%w: amount must be > 0", ErrInvalid)
	}
	var bal int64
	err := l.tx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, addCreditsSQL,
			account, amount).Scan(&bal); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, insertGrantSQL, newID(), account, amount, bal, l.now())
		return err
	})
	return bal, translate(err)
}

const setSectionSQL = `INSERT INTO sections (section_key, name, price, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (section_key) DO UPDATE SET name = excluded.name, price = excluded.price, updated_at = excluded.updated_at`

// SetSection names and prices a catalogue section (price 0 = free), creating it if needed.
func (l *Ledger) SetSection(ctx context.Context, key, name string, price int64) error {
	if price < 0 {
		return fmt.Errorf("%w: price must be >= 0", ErrInvalid)
	}
	_, err := l.pool.Exec(ctx, setSectionSQL,
		key, name, price, l.now())
	return translate(err)
}

// Section is a priced group of layers.
type Section struct {
	Key   string
	Name  string
	Price int64
}

const sectionSQL = `SELECT section_key, name, price FROM sections WHERE section_key = $1`

// Section reads one section.
func (l *Ledger) Section(ctx context.Context, key string) (Section, error) {
	var s Section
	err := l.pool.QueryRow(ctx, sectionSQL, key).Scan(&s.Key, &s.Name, &s.Price)
	return s, translate(err)
}

// Settings the service reads; SetSetting refuses any other name.
const (
	SettingReportPrice = "report-price"
)

const setSettingSQL = `INSERT INTO settings (name, value, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`

// SetSetting stores an integer setting.
func (l *Ledger) SetSetting(ctx context.Context, name string, value int64) error {
	switch name {
	case SettingReportPrice:
		if value < 0 {
			return fmt.Errorf("%w: %s must be >= 0", ErrInvalid, name)
		}
	default:
		return fmt.Errorf("%w: unknown setting %q (known: %s)", ErrInvalid, name, SettingReportPrice)
	}
	_, err := l.pool.Exec(ctx, setSettingSQL, name, value, l.now())
	return translate(err)
}

const settingSQL = `SELECT value FROM settings WHERE name = $1`

// Setting reads an integer setting; ErrNotFound when never set.
func (l *Ledger) Setting(ctx context.Context, name string) (int64, error) {
	var v int64
	err := l.pool.QueryRow(ctx, settingSQL, name).Scan(&v)
	return v, translate(err)
}

// Portfolio groups an account's sites.
type Portfolio struct {
	ID        uuid.UUID
	AccountID uuid.UUID
	Name      string
}

const insertPortfolioSQL = `INSERT INTO portfolios (portfolio_id, account_id, name, created_at) VALUES ($1, $2, $3, $4)`

// CreatePortfolio creates a named portfolio in an account.
func (l *Ledger) CreatePortfolio(ctx context.Context, account uuid.UUID, name string) (Portfolio, error) {
	if name == "" {
		return Portfolio{}, fmt.Errorf("%w: portfolio name is empty", ErrInvalid)
	}
	p := Portfolio{ID: newID(), AccountID: account, Name: name}
	err := l.tx(ctx, func(tx pgx.Tx) error {
		if err := lockAccount(ctx, tx, account); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, insertPortfolioSQL,
			p.ID, account, name, l.now())
		return err
	})
	return p, translate(err)
}

func lockAccount(ctx context.Context, tx pgx.Tx, account uuid.UUID) error {
	var id uuid.UUID
	return tx.QueryRow(ctx, lockAccountSQL, account).Scan(&id)
}

// lockAccountSQL locks account $1's row until the transaction ends.
const lockAccountSQL = `SELECT account_id FROM accounts WHERE account_id = $1 FOR UPDATE`

// newID returns a time-ordered UUID (v7), so ids sort roughly by creation.
func newID() uuid.UUID {
	return uuid.Must(uuid.NewV7())
}
