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
	"github.com/jackc/pgx/v5/pgxpool"

	"siteenv/clock"
)

// Options configure Open. Zero values take the documented defaults.
type Options struct {
	// Clock stamps rows; default clock.Real.
	Clock clock.Clock
	// Logger; default slog.Default().
	Logger *slog.Logger
	// MaxConns bounds the pool; default 20.
	MaxConns int32
	// IdempotencyLease is how long a running idempotency claim outlives its
	// last renewal (see idempotency.go): how soon a retry takes over the key
	// of a request whose process died; default DefaultIdempotencyLease (5 s).
	IdempotencyLease time.Duration
	// ActivityLinger is how long a small batch of read audit records waits
	// for more before it is inserted (activityqueue.go); default 5 ms.
	ActivityLinger time.Duration
}

// ErrInvalidOptions reports an Options field outside its range.
var ErrInvalidOptions = errors.New("ledger: invalid options")

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxConns == 0 {
		o.MaxConns = 20
	}
	if o.IdempotencyLease == 0 {
		o.IdempotencyLease = DefaultIdempotencyLease
	}
	if o.ActivityLinger == 0 {
		o.ActivityLinger = activityLinger
	}
	return o
}

// validate reports the first field of filled options out of range
// (ErrInvalidOptions, naming the field): zero took the default, so a
// negative value was set on purpose.
func (o Options) validate() error {
	switch {
	case o.MaxConns < 0:
		return fmt.Errorf("%w: MaxConns must not be negative (0 takes the default), got %d", ErrInvalidOptions, o.MaxConns)
	case o.IdempotencyLease < 0:
		return fmt.Errorf("%w: IdempotencyLease must not be negative (0 takes the default), got %v", ErrInvalidOptions, o.IdempotencyLease)
	case o.ActivityLinger < 0:
		return fmt.Errorf("%w: ActivityLinger must not be negative (0 takes the default), got %v", ErrInvalidOptions, o.ActivityLinger)
	}
	return nil
}

// Ledger is the PostgreSQL-backed store. Safe for concurrent use.
type Ledger struct {
	pool  *pgxpool.Pool
	clock clock.Clock
	log   *slog.Logger
	// lease and leases: this process's running idempotency claims.
	lease  time.Duration
	leases leases
	// activity queues the audit records of reads (activityqueue.go).
	activity activityQueue
	// faultHook, set only by tests, fails or stalls multi-step transactions
	// at named points to prove they commit whole or not at all.
	faultHook func(ctx context.Context, point string) error
	// trips counts round trips and statements (roundtrips.go).
	trips *roundTrips
	// frozen are the frozen layer entries stored (frozen.go).
	frozen frozenStored
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
	opt = opt.WithDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The DSN may carry a password: never echo it.
		return nil, fmt.Errorf("ledger: database URL is not valid: %w", ErrInvalid)
	}
	cfg.MaxConns = opt.MaxConns
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerUUID(c.TypeMap())
		return nil
	}
	trips := &roundTrips{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: connect: %w", unavailable(err))
	}
	l := &Ledger{pool: pool, clock: opt.Clock, log: opt.Logger, lease: opt.IdempotencyLease, trips: trips}
	l.activity.linger = opt.ActivityLinger
	if err := l.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	l.startLeases()
	l.startActivityWriter()
	return l, nil
}

// Close writes the queued read audit records, stops renewing idempotency
// leases and releases the connection pool.
func (l *Ledger) Close() {
	l.stopActivityWriter()
	l.stopLeases()
	l.pool.Close()
}

// Clock returns the ledger's clock.
func (l *Ledger) Clock() clock.Clock { return l.clock }

// Ping checks the database answers.
func (l *Ledger) Ping(ctx context.Context) error {
	if err := l.pool.Ping(ctx); err != nil {
		return unavailable(err)
	}
	return nil
}

// tx runs fn in one transaction, committing when it returns nil.
func (l *Ledger) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, l.pool, fn)
}

// now is the ledger clock at PostgreSQL's microsecond precision, so values
// read back compare equal to the values written.
func (l *Ledger) now() time.Time { return l.clock.Now().UTC().Truncate(time.Microsecond) }
