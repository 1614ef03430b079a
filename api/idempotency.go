package api

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

const maxIdempotencyKey = 128

var idempotencyKeyRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// idempotencyKey validates the Idempotency-Key header.
func (r *request) idempotencyKey() (string, error) {
	v := r.http.Request.Header.Peek("Idempotency-Key")
	if v == nil {
		return "", invalid("This operation requires an Idempotency-Key header.",
			FieldError{Field: "Idempotency-Key", Message: "required header"})
	}
	if !idempotencyKeyRE.Match(v) {
		return "", invalid("The Idempotency-Key header is malformed.",
			FieldError{Field: "Idempotency-Key", Message: "must be 1 to 128 characters matching ^[A-Za-z0-9._:-]+$"})
	}
	return string(v), nil
}

// idempotent runs op at most once per (integration, Idempotency-Key). logical
// is what identifies the request (options such as page size are left out by
// the caller); its JSON encoding is fingerprinted. The first response is
// stored and replayed byte for byte; a different logical request with the same
// key is idempotency_conflict; a concurrent duplicate waits for the first.
// Retryable failures (429, 5xx) are not stored, so a retry executes again.
//
// A stored response is replayed only to a caller the original request's
// checks would pass now: the route checked the key is live and holds the
// operation's scopes, and recheck (nil: nothing more) checks the rest of
// what the stored response reveals, the dataset restriction of every layer
// in it above all. Keys are per integration, and a sibling key of the
// integration may be restricted where the first was not: its refusal is
// what a fresh request would get, not stored under the key.
func (s *Server) idempotent(r *request, logical any, recheck func(ledger.IdemResponse) error, op func() error) error {
	key, err := r.idempotencyKey()
	if err != nil {
		return err
	}
	fp, err := idemFingerprint(r, logical)
	if err != nil {
		return err
	}

	integration := r.principal.IntegrationID
	deadline := time.Now().Add(s.cfg.IdempotencyWait)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		claim, err := s.led.ClaimIdempotency(r.ctx, integration, key, r.op.ID, fp)
		if err != nil {
			return err
		}
		switch claim.State {
		case ledger.IdemMismatch:
			return newProblem(CodeIdempotencyConflict, "This Idempotency-Key was already used for a different request; use a new key for a new request.")
		case ledger.IdemReplay:
			if recheck != nil {
				if err := recheck(claim.Response); err != nil {
					return err
				}
			}
			s.replay(r, claim.Response)
			return nil
		case ledger.IdemFresh:
			return s.runFirst(r, key, claim.Token, op)
		}
		// In flight: the first request's process is alive (its claim's lease
		// is renewed; a dead one's lapses within seconds and this loop takes
		// it over). Wait for it (real time: this is the server waiting on
		// another request, not a test).
		if time.Now().Add(wait).After(deadline) {
			// Retryable, unlike a changed request (status-codes.md).
			return &Problem{Code: CodeIdempotencyConflict, Retryable: true, RetryAfter: 1,
				Detail: "A request with this Idempotency-Key is still in progress; retry after Retry-After seconds."}
		}
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-time.After(wait):
		}
	}
}

// relaxedCompletion are the operations whose stored response and audit
// record commit relaxed (ledger.CompleteIdempotencyAuditedRelaxed): free,
// with frozen inputs, so a crash can at worst forget a query answered in its
// last moments (DESIGN.md, "Durability"; docs/operations.md, "Durability").
// Paid operations and POST /sites stay durable.
var relaxedCompletion = map[string]bool{"create_query": true}

// idemFingerprint is what identifies a logical request under its key: the
// operation and logical's JSON encoding, hashed.
func idemFingerprint(r *request, logical any) ([]byte, error) {
	enc, err := json.Marshal(logical)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write([]byte(r.op.ID))
	h.Write([]byte{0})
	h.Write(enc)
	return h.Sum(nil), nil
}

// claimSettleTimeout bounds storing or releasing a claim once the request's
// work is done, even when the request's own deadline has passed: an unsettled
// claim would otherwise hold its key until its lease lapses.
const claimSettleTimeout = 5 * time.Second

// runFirst executes op under the claim token and settles the claim: the
// response is stored for replay, or, after a retryable failure (429, 5xx)
// or a panic, the claim is released so that a retry executes again.
func (s *Server) runFirst(r *request, key string, token uuid.UUID, op func() error) (err error) {
	integration := r.principal.IntegrationID
	settle, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), claimSettleTimeout)
	defer cancel()
	settled := false
	defer func() {
		// A finish this request did not store is stored by its attempt.
		if p := r.pendingFinish; p != nil {
			p.Decline()
		}
	}()
	defer func() {
		if !settled { // op panicked: forget the claim, then let Handle answer.
			if rerr := s.led.ReleaseIdempotency(settle, integration, key, token); rerr != nil {
				s.log.Error("idempotency release failed", "request_id", r.id, "err", rerr)
			}
		}
	}()
	if err := op(); err != nil {
		p := problemFor(r.ctx, s.log, err)
		r.problemCode = string(p.Code)
		s.writeProblem(r.http, r.id, p)
	}
	settled = true
	status := r.http.Response.StatusCode()
	if status == 429 || status >= 500 {
		if err := s.led.ReleaseIdempotency(settle, integration, key, token); err != nil {
			s.log.Error("idempotency release failed", "request_id", r.id, "err", err)
		}
		return nil
	}
	rec := ledger.IdemResponse{
		Status:      status,
		ContentType: string(r.http.Response.Header.ContentType()),
		Location:    string(r.http.Response.Header.Peek("Location")),
		Body:        append([]byte(nil), r.http.Response.Body()...),
	}
	if a, ok := activityOf(r); ok && r.pendingFinish != nil {
		return s.completeWithFinish(r, settle, key, token, rec, a)
	}
	if a, ok := activityOf(r); ok {
		// The request's audit record commits with the stored response: one
		// durable commit for both instead of two.
		complete := s.led.CompleteIdempotencyAudited
		if relaxedCompletion[r.op.ID] {
			complete = s.led.CompleteIdempotencyAuditedRelaxed
		}
		err = complete(settle, integration, key, token, rec, r.principal.AccountID, a)
		if err == nil || errors.Is(err, ledger.ErrClaimLost) {
			r.audited = a.HTTPStatus
		}
	} else {
		err = s.led.CompleteIdempotency(settle, integration, key, token, rec)
	}
	if errors.Is(err, ledger.ErrClaimLost) {
		// This request stalled past its lease and a retry took the key over;
		// the retry's response is the one stored. This one is already
		// written, and a purchase carries the key itself, so it is the same.
		s.log.Warn("idempotency claim lost before completion", "request_id", r.id, "operation", r.op.ID)
		return nil
	}
	return err
}

// completeWithFinish stores the finish of the query the request ran with
// its response and audit record, in one relaxed statement
// (ledger.FinishQueryCompleted), and tells the attempt (Stored). A query
// no longer running (cancelled or taken over before its finish was
// stored) was answered as finished wrongly: the answer becomes a retryable
// internal_error and the claim is released, so a retry runs it afresh.
func (s *Server) completeWithFinish(r *request, settle context.Context, key string, token uuid.UUID, rec ledger.IdemResponse, a ledger.Activity) error {
	p := r.pendingFinish
	integration := r.principal.IntegrationID
	if r.wholeAnswer && rec.Status == 200 {
		if bk, err := bearer(r); err == nil {
			// Every feature is in the answer: its finish is stored
			// behind it (finishbehind.go).
			s.finished.put(p.Row)
			r.audited = a.HTTPStatus
			r.pendingFinish = nil // the finish's word is finishBehind's
			done := s.behind.add(string(ledger.HashKey(bk)))
			go s.finishBehind(p, integration, key, token, rec, r.principal.AccountID, a, r.id, r.op.ID, done)
			return nil
		}
	}
	kept, err := s.led.FinishQueryCompleted(settle, p.QueryFinish, integration, key, token, rec, r.principal.AccountID, a)
	switch {
	case err != nil && !errors.Is(err, ledger.ErrClaimLost):
		p.Decline() // the attempt stores its finish itself
		return err
	case !kept:
		p.Stored(false, nil)
		s.log.Warn("query no longer running when its answer was stored", "request_id", r.id, "query_id", p.Row.ID)
		r.http.Response.Reset()
		r.http.Response.Header.Set("X-Request-Id", r.id)
		pr := &Problem{Code: CodeInternalError, Detail: "The query changed while it was answered; retry with the same Idempotency-Key.", RetryAfter: 1}
		r.problemCode = string(pr.Code)
		s.writeProblem(r.http, r.id, pr)
		if rerr := s.led.ReleaseIdempotency(settle, integration, key, token); rerr != nil {
			s.log.Error("idempotency release failed", "request_id", r.id, "err", rerr)
		}
		return nil
	}
	p.Stored(true, nil)
	s.finished.put(p.Row)
	r.audited = a.HTTPStatus
	if errors.Is(err, ledger.ErrClaimLost) {
		s.log.Warn("idempotency claim lost before completion", "request_id", r.id, "operation", r.op.ID)
	}
	return nil
}

// replay writes a stored first response.
func (s *Server) replay(r *request, rec ledger.IdemResponse) {
	r.http.SetStatusCode(rec.Status)
	r.http.SetContentType(rec.ContentType)
	if rec.Location != "" {
		r.http.Response.Header.Set("Location", rec.Location)
	}
	if rec.Status == 202 {
		// An accepted order or query is polled at its Location; the stored
		// response keeps no headers beyond Location, and by now the work
		// may be done, so the shortest poll interval is the honest hint.
		r.http.Response.Header.Set("Retry-After", "1")
	}
	r.http.Response.Header.Set("Idempotent-Replayed", "true")
	r.http.SetBody(rec.Body)
	if rec.Status >= 400 {
		// A replayed Problem is the original response: its X-Request-Id
		// matches the request_id inside it.
		var p struct {
			Code      string `json:"code"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(rec.Body, &p) == nil {
			r.problemCode = p.Code
			r.http.Response.Header.Set("X-Request-Id", p.RequestID)
		}
	}
}
