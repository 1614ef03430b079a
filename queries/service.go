package queries

import (
	"log/slog"
	"time"

	"siteenv/ledger"
)

// Config configures a Service.
type Config struct {
	Ledger *ledger.Ledger
	// Logger: required.
	Logger *slog.Logger
	// IdempotencyWait bounds how long a duplicate waits for its first
	// request before a retryable idempotency_conflict (Once).
	IdempotencyWait time.Duration
	// Finished is told of each query answered finished, once its finish
	// is stored or on its way (the API's cache of finished rows); nil:
	// none.
	Finished func(ledger.Query)
}

// Service is the query use case and the idempotency of every operation
// that takes an Idempotency-Key. Safe for concurrent use.
type Service struct {
	cfg    Config
	led    *ledger.Ledger
	log    *slog.Logger
	behind finishesBehind
}

// New returns a Service of cfg.
func New(cfg Config) *Service {
	if cfg.Finished == nil {
		cfg.Finished = func(ledger.Query) {}
	}
	return &Service{cfg: cfg, led: cfg.Ledger, log: cfg.Logger}
}

// SetIdempotencyWait sets Config.IdempotencyWait (tests, before serving).
func (s *Service) SetIdempotencyWait(d time.Duration) { s.cfg.IdempotencyWait = d }
