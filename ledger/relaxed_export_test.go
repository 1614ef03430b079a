package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// RelaxedSettingForTest sets the session's synchronous_commit on, then
// reads it inside a relaxed transaction and after it. With a pool of one
// connection both run on the same session.
func RelaxedSettingForTest(ctx context.Context, l *Ledger) (inside, after string, err error) {
	if _, err := l.pool.Exec(ctx, `SET synchronous_commit = on`); err != nil {
		return "", "", err
	}
	err = l.relaxedTx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&inside)
	})
	if err != nil {
		return "", "", err
	}
	err = l.pool.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&after)
	return inside, after, err
}

// RelaxedBatchSettingForTest is RelaxedSettingForTest of a batch without
// BEGIN that begins with relaxedTxSQL (Admit's form), reading
// synchronous_commit and plan_cache_mode.
func RelaxedBatchSettingForTest(ctx context.Context, l *Ledger) (inside, after string, err error) {
	if _, err := l.pool.Exec(ctx, `SET synchronous_commit = on`); err != nil {
		return "", "", err
	}
	b := &pgx.Batch{}
	b.Queue(relaxedTxSQL)
	b.Queue(`SELECT current_setting('synchronous_commit') || ' ' || current_setting('plan_cache_mode')`)
	br := l.pool.SendBatch(ctx, b)
	if _, err = br.Exec(); err == nil {
		err = br.QueryRow().Scan(&inside)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", err
	}
	err = l.pool.QueryRow(ctx, `SELECT current_setting('synchronous_commit') || ' ' || current_setting('plan_cache_mode')`).Scan(&after)
	return inside, after, err
}

// ExecRelaxedForTest runs execRelaxed.
func ExecRelaxedForTest(ctx context.Context, l *Ledger, sql string, args ...any) (int64, error) {
	tag, err := l.execRelaxed(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// RateCountersForTest lists the persistence (pg_class.relpersistence) of
// account's rate counters, one per bucket counted.
func RateCountersForTest(ctx context.Context, l *Ledger, account uuid.UUID) ([]string, error) {
	rows, err := l.pool.Query(ctx, `SELECT c.relpersistence::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'rate' AND c.relkind = 'S' AND c.relname LIKE '%\_' || replace($1::text, '-', '') ORDER BY c.relname`, account)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// AuthenticateCountXIDForTest runs AuthenticateCount's statement for key
// in a transaction of its own and reports whether the transaction took a
// transaction id (a write would), then rolls it back. counted reports
// whether it counted; the window must have begun.
func AuthenticateCountXIDForTest(ctx context.Context, l *Ledger, key string, bucket string, window time.Duration) (counted, xid bool, err error) {
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var p Principal
		var count *int64
		if err := tx.QueryRow(ctx, authenticateCountSQL, HashKey(key), bucket, []string{}).Scan(
			&p.KeyID, &p.AccountID, &p.IntegrationID, &p.AccountName, &p.Kind, &p.Scopes, &p.KeyDatasets, &p.AccountDatasets, &p.Revoked, &counted, &count, &p.Catalogue); err != nil {
			return err
		}
		if count == nil || !windowBegun(*count, windowIndex(l.now(), window)) {
			return fmt.Errorf("the statement's count %v is not in the current window", count)
		}
		if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned() IS NOT NULL`).Scan(&xid); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		err = nil
	}
	return counted, xid, err
}

var errRollback = errors.New("rollback")

// UUIDRoundTripForTest sends id and ids through PostgreSQL and back, and
// scans a NULL uuid into null (as given) and a *uuid.UUID.
func UUIDRoundTripForTest(ctx context.Context, l *Ledger, id uuid.UUID, ids []uuid.UUID, null uuid.UUID) (back uuid.UUID, arr []uuid.UUID, _ uuid.UUID, nullPtr *uuid.UUID, text string, err error) {
	err = l.pool.QueryRow(ctx, `SELECT $1::uuid, $2::uuid[], NULL::uuid, NULL::uuid, $1::uuid::text`, id, ids).Scan(&back, &arr, &null, &nullPtr, &text)
	return back, arr, null, nullPtr, text, err
}

// AdmitAnsweredSettingForTest calls ar's answered admission
// (siteenv_admit_answered) in a transaction begun with synchronous_commit
// on, reads synchronous_commit and plan_cache_mode after the call in the
// same transaction, and rolls it back (the rate count, a sequence's, is
// not undone).
func AdmitAnsweredSettingForTest(ctx context.Context, l *Ledger, ar AdmitRequest) (inside string, err error) {
	c, err := l.answeredCall(ctx, ar)
	if err != nil {
		return "", err
	}
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, admitAnsweredSQL, c.args...)
		if err != nil {
			return err
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit') || ' ' || current_setting('plan_cache_mode')`).Scan(&inside); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		err = nil
	}
	return inside, err
}
