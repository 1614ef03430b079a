package queries

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// ErrInProgress: a request with the same Idempotency-Key is still in
// progress after Config.IdempotencyWait (retryable, unlike ErrConflict).
var ErrInProgress = errors.New("queries: a request with this Idempotency-Key is still in progress")

// ErrConflict: the Idempotency-Key was used for a different logical
// request.
var ErrConflict = errors.New("queries: the Idempotency-Key was used for a different request")

// Fingerprint is what identifies a logical request under its key: the
// operation and logical's JSON encoding (options such as a page size left
// out by the caller), hashed.
func Fingerprint(operation string, logical any) ([]byte, error) {
	enc, err := json.Marshal(logical)
	if err != nil {
		return nil, err
	}
	return FingerprintEncoded(operation, enc), nil
}

// FingerprintEncoded is Fingerprint of a logical request whose JSON
// encoding the caller wrote itself, in parts: json.Marshal's bytes, which
// parts must concatenate to exactly (a stored key's fingerprint must not
// change).
func FingerprintEncoded(operation string, parts ...[]byte) []byte {
	h := sha256.New()
	h.Write([]byte(operation))
	h.Write([]byte{0})
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// Once runs op at most once per (integration, Idempotency-Key key) for
// the logical request of fingerprint. The first response is stored and
// replayed byte for byte; a different logical request with the same key is
// ErrConflict; a concurrent duplicate waits for the first. Retryable
// failures (429, 5xx) are not stored, so a retry executes again. pending
// (nil: none) is where op leaves a query's answer whose finish is stored
// with the response (Settle).
//
// A stored response is replayed only to a caller the original request's
// checks would pass now: the caller's key was checked live and holding the
// operation's scopes before, and recheck (nil: nothing more) checks the
// rest of what the stored response reveals, the dataset restriction of
// every layer in it above all. Keys are per integration, and a sibling key
// of the integration may be restricted where the first was not: its
// refusal is what a fresh request would get, and is not stored.
func (s *Service) Once(c Call, key string, fingerprint []byte, recheck func(ledger.IdemResponse) error, pending *Pending, op func() error) error {
	return s.once(c, key, fingerprint, recheck, pending, func(bool) error { return op() })
}

// once is Once whose op is told whether its claim was taken over from a
// request whose process died before it stored a response
// (ledger.IdemClaim.TookOver): what that request wrote may have committed.
func (s *Service) once(c Call, key string, fingerprint []byte, recheck func(ledger.IdemResponse) error, pending *Pending, op func(tookOver bool) error) error {
	ctx := c.Context()
	integration := c.Principal().IntegrationID
	deadline := time.Now().Add(s.cfg.IdempotencyWait)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		claim, err := s.led.ClaimIdempotency(ctx, integration, key, c.Operation(), fingerprint)
		if err != nil {
			return err
		}
		switch claim.State {
		case ledger.IdemMismatch:
			return ErrConflict
		case ledger.IdemReplay:
			if recheck != nil {
				if err := recheck(claim.Response); err != nil {
					return err
				}
			}
			c.Replay(claim.Response)
			return nil
		case ledger.IdemFresh:
			return s.Settle(c, key, claim.Token, pending, func() error { return op(claim.TookOver) })
		}
		// In flight: the first request's process is alive (its claim's lease
		// is renewed; a dead one's lapses within seconds and this loop takes
		// it over). Wait for it (real time: this is the server waiting on
		// another request, not a test).
		if time.Now().Add(wait).After(deadline) {
			return ErrInProgress
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// CallerRefusal is a refusal particular to the caller rather than to the
// request: another key of the integration that may not see what the key's
// first request made (a sibling restricted away from its datasets, retrying
// after that request's answer was lost). Settle answers it but stores
// nothing under the key, so the request's own caller still gets its answer.
type CallerRefusal struct{ Err error }

func (e *CallerRefusal) Error() string { return e.Err.Error() }
func (e *CallerRefusal) Unwrap() error { return e.Err }

// relaxedCompletion are the operations whose stored response and audit
// record commit relaxed (ledger.CompleteIdempotencyAuditedRelaxed): free,
// with frozen inputs, so a crash can at worst forget a query answered in its
// last moments (DESIGN.md, "Durability"; docs/operations.md, "Durability").
// Paid operations and POST /sites stay durable.
var relaxedCompletion = map[string]bool{"create_query": true}

// SettleTimeout bounds storing or releasing a claim once the request's
// work is done, even when the request's own deadline has passed: an
// unsettled claim would otherwise hold its key until its lease lapses.
const SettleTimeout = 5 * time.Second

// Settle executes op under the claim token of key and settles the claim:
// the response is stored for replay, or, after a retryable failure (429,
// 5xx), a CallerRefusal or a panic, the claim is released so that a retry
// executes again (handed back lapsed when its key's query exists:
// Pending.Committed).
// op's error is written as the response (Call.Fail). A query's answer op
// left in pending (nil: none) is stored with the response.
func (s *Service) Settle(c Call, key string, token uuid.UUID, pending *Pending, op func() error) (err error) {
	integration := c.Principal().IntegrationID
	settle, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), SettleTimeout)
	defer cancel()
	if pending == nil {
		pending = &Pending{}
	}
	settled := false
	release := func() {
		rel := s.led.ReleaseIdempotency
		if pending.Committed {
			rel = s.led.LapseIdempotency
		}
		if err := rel(settle, integration, key, token); err != nil {
			s.log.Error("idempotency release failed", "request_id", c.RequestID(), "err", err)
		}
	}
	defer func() {
		// A finish this request did not store is stored by its attempt.
		if p := pending.Finish; p != nil {
			p.Decline()
		}
	}()
	defer func() {
		if !settled { // op panicked: forget the claim, then let the caller answer.
			release()
		}
	}()
	err = op()
	if err != nil {
		c.Fail(err)
	}
	settled = true
	rec := c.Response()
	var refusal *CallerRefusal
	if rec.Status == 429 || rec.Status >= 500 || errors.As(err, &refusal) {
		release()
		return nil
	}
	rec.Body = append([]byte(nil), rec.Body...)
	a, audited := c.Activity()
	if audited && pending.Finish != nil {
		return s.completeWithFinish(c, settle, key, token, rec, a, pending)
	}
	if audited {
		// The request's audit record commits with the stored response: one
		// durable commit for both instead of two.
		complete := s.led.CompleteIdempotencyAudited
		if relaxedCompletion[c.Operation()] {
			complete = s.led.CompleteIdempotencyAuditedRelaxed
		}
		err = complete(settle, integration, key, token, rec, c.Principal().AccountID, a)
		if err == nil || errors.Is(err, ledger.ErrClaimLost) {
			c.Audited(a.HTTPStatus)
		}
	} else {
		err = s.led.CompleteIdempotency(settle, integration, key, token, rec)
	}
	if errors.Is(err, ledger.ErrClaimLost) {
		// This request stalled past its lease and a retry took the key over;
		// the retry's response is the one stored. This one is already
		// written, and a purchase carries the key itself, so it is the same.
		s.log.Warn("idempotency claim lost before completion", "request_id", c.RequestID(), "operation", c.Operation())
		return nil
	}
	return err
}

// ErrChangedWhileAnswered: the query was no longer running when its
// answer's finish was stored (cancelled, or taken over after this process
// stalled past its lease): the answer sent as finished is withdrawn, as a
// retryable internal error, and the claim released so a retry runs it
// afresh.
var ErrChangedWhileAnswered = errors.New("queries: the query changed while it was answered")

// completeWithFinish stores the finish of the query the request ran with
// its response and audit record, in one relaxed statement
// (ledger.FinishQueryCompleted), and tells the attempt (Stored). It is
// stored before the response is sent, whatever the answer's size: a client
// told the query finished must find it finished on every replica (another
// replica's GET .../results reads the row, and serves the result from it:
// jobs.Runner.OpenResult). A query no longer running (cancelled or taken
// over before its finish was stored) was answered as finished wrongly: the
// answer becomes ErrChangedWhileAnswered and the claim is released, so a
// retry runs it afresh.
func (s *Service) completeWithFinish(c Call, settle context.Context, key string, token uuid.UUID, rec ledger.IdemResponse, a ledger.Activity, pending *Pending) error {
	p := pending.Finish
	integration := c.Principal().IntegrationID
	kept, err := s.led.FinishQueryCompleted(settle, p.QueryFinish, integration, key, token, rec, c.Principal().AccountID, a)
	switch {
	case err != nil && !errors.Is(err, ledger.ErrClaimLost):
		return err // the attempt stores its finish itself (Settle declines it)
	case !kept:
		p.Stored(false, nil)
		pending.Finish = nil
		s.log.Warn("query no longer running when its answer was stored", "request_id", c.RequestID(), "query_id", p.Row.ID)
		c.Reset()
		c.Fail(ErrChangedWhileAnswered)
		if rerr := s.led.ReleaseIdempotency(settle, integration, key, token); rerr != nil {
			s.log.Error("idempotency release failed", "request_id", c.RequestID(), "err", rerr)
		}
		return nil
	}
	p.Stored(true, nil)
	pending.Finish = nil
	s.cfg.Finished(p.Row)
	c.Audited(a.HTTPStatus)
	if errors.Is(err, ledger.ErrClaimLost) {
		s.log.Warn("idempotency claim lost before completion", "request_id", c.RequestID(), "operation", c.Operation())
	}
	return nil
}
