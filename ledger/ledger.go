// Package ledger holds everything transactional (accounts, keys, credits,
// sites, catalogue, queries, reports, audit, jobs) in PostgreSQL. It is the only
// package that imports pgx; callers see the ledger's own types and errors.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"siteenv/clock"
)

// Errors returned by the ledger. Match them with errors.Is.
var (
	ErrNotFound            = errors.New("ledger: not found")
	ErrConflict            = errors.New("ledger: conflict")
	ErrInvalid             = errors.New("ledger: invalid argument")
	ErrSchemaTooNew        = errors.New("ledger: database schema is newer than this binary")
	ErrKeyRevoked          = errors.New("ledger: api key revoked")
	ErrUnavailable         = errors.New("ledger: database unavailable")
	ErrIdempotencyMismatch = errors.New("ledger: idempotency key reused for a different request")
)

// Options configure Open. Zero values take the documented defaults.
type Options struct {
	// Clock stamps rows; default clock.Real.
	Clock clock.Clock
	// Logger; default slog.Default().
	Logger *slog.Logger
	// MaxConns bounds the pool; default 20.
	MaxConns int32
}

// Ledger is the PostgreSQL-backed store. Safe for concurrent use.
type Ledger struct {
	pool  *pgxpool.Pool
	clock clock.Clock
	log   *slog.Logger
	// faultHook, set only by tests, fails or stalls multi-step transactions
	// at named points to prove they commit whole or not at all.
	faultHook func(ctx context.Context, point string) error
}

func (l *Ledger) fault(ctx context.Context, point string) error {
	if l.faultHook == nil {
		return nil
	}
	return l.faultHook(ctx, point)
}

// Open connects to dsn, applies the embedded migrations and returns a Ledger.
// A database whose schema is newer than this binary is refused (ErrSchemaTooNew).
func Open(ctx context.Context, dsn string, opt Options) (*Ledger, error) {
	if opt.Clock == nil {
		opt.Clock = clock.Real{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.MaxConns == 0 {
		opt.MaxConns = 20
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The DSN may carry a password: never echo it.
		return nil, fmt.Errorf("ledger: database URL is not valid: %w", ErrInvalid)
	}
	cfg.MaxConns = opt.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: connect: %w", ErrUnavailable)
	}
	l := &Ledger{pool: pool, clock: opt.Clock, log: opt.Logger}
	if err := l.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return l, nil
}

// Close releases the connection pool.
func (l *Ledger) Close() { l.pool.Close() }

// Clock returns the ledger's clock.
func (l *Ledger) Clock() clock.Clock { return l.clock }

// Ping checks the database answers.
func (l *Ledger) Ping(ctx context.Context) error {
	if err := l.pool.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, redact(err))
	}
	return nil
}

// tx runs fn in one transaction, committing when it returns nil.
func (l *Ledger) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, l.pool, fn)
}

// translate maps driver errors to ledger errors at the package boundary.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		case "23503", "23514", "22P02": // foreign key, check, invalid text representation
			return fmt.Errorf("%w: %s", ErrInvalid, pgErr.ConstraintName)
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, redact(err))
}

// redact keeps driver errors out of messages that may reach clients; the
// detail stays in the server log only.
func redact(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "sqlstate " + pgErr.Code
	}
	return "connection error"
}

// now is the ledger clock at PostgreSQL's microsecond precision, so values
// read back compare equal to the values written.
func (l *Ledger) now() time.Time { return l.clock.Now().UTC().Truncate(time.Microsecond) }
