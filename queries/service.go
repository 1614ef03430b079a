package queries

import (
	"log/slog"
	"time"

	"siteenv/clock"
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
	// Clock times the vouches for keys (Vouches).
	Clock clock.Clock
	// Limits are each account's admission limits.
	Limits Limits
	// AnswerWait is how long an answer computed before its admission is
	// waited for on an idle server (default AnswerFirstWait; loadedWait
	// stretches it with InFlight).
	AnswerWait time.Duration
	// InFlight counts the server's requests being served (the API's); nil:
	// one, always.
	InFlight func() int64
	// Scopes are POST /queries' scopes: a key is vouched for only by a
	// request that holds them (Vouches).
	Scopes []string
}

// Service is the query use case and the idempotency of every operation
// that takes an Idempotency-Key. Safe for concurrent use.
type Service struct {
	cfg     Config
	led     *ledger.Ledger
	log     *slog.Logger
	runner  Runner
	vouches Vouches
}

// New returns a Service of cfg.
func New(cfg Config) *Service {
	if cfg.Finished == nil {
		cfg.Finished = func(ledger.Query) {}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.AnswerWait == 0 {
		cfg.AnswerWait = AnswerFirstWait
	}
	if cfg.InFlight == nil {
		cfg.InFlight = func() int64 { return 1 }
	}
	s := &Service{cfg: cfg, led: cfg.Ledger, log: cfg.Logger}
	s.vouches.Scopes = cfg.Scopes
	return s
}

// Vouch vouches for the key of hash, authenticated as p by a read
// (Vouches): its next query may be computed beside its admission.
func (s *Service) Vouch(hash []byte, p ledger.Principal) { s.vouches.Vouch(hash, s.cfg.Clock.Now(), p) }

// SetAnswerWait sets Config.AnswerWait (tests, before serving).
func (s *Service) SetAnswerWait(d time.Duration) { s.cfg.AnswerWait = d }

// SetIdempotencyWait sets Config.IdempotencyWait (tests, before serving).
func (s *Service) SetIdempotencyWait(d time.Duration) { s.cfg.IdempotencyWait = d }
