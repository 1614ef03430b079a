package ledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// lockedRelaxed runs, in one round trip, a pipelined relaxed transaction
// (relaxed.go says what a crash could lose) that locks the account's row
// (lockAccountSQL) and then the statements queue adds, whose results read
// reads in order. The lock orders concurrent writers of one account on
// every replica; the statements after it run on a snapshot that sees every
// commit before the lock was granted, so limits checked by them stay
// exact. locked is false when no such account exists (the statements ran
// all the same: each names what it needs of the account). On an error the
// transaction is left aborted and pgxpool discards the connection instead
// of reusing it (as with execRelaxed); the error is translated.
func (l *Ledger) lockedRelaxed(ctx context.Context, account any, queue func(b *pgx.Batch), read func(br pgx.BatchResults) error) (locked bool, err error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(lockAccountSQL, account)
	queue(b)
	b.Queue("COMMIT")
	br := l.pool.SendBatch(ctx, b)
	err = func() error {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		var id any
		var err error
		if locked, err = scanOptional(br.QueryRow(), &id); err != nil {
			return err
		}
		if err := read(br); err != nil {
			return err
		}
		_, err = br.Exec()
		return err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return locked, translate(err)
}

// scanOptional scans a row that may be absent: found is false, without an
// error, when there is none.
func scanOptional(row pgx.Row, dst ...any) (found bool, err error) {
	switch err := row.Scan(dst...); {
	case err == nil:
		return true, nil
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	default:
		return false, err
	}
}
