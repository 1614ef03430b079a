package api

import (
	"crypto/sha256"
	"encoding/json"
	"regexp"
	"time"

	"siteenv/ledger"
)

const maxIdempotencyKey = 128

var idempotencyKeyRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// idempotencyKey validates the Idempotency-Key header.
func (r *request) idempotencyKey() (string, error) {
	v := r.ctx.Request.Header.Peek("Idempotency-Key")
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
func (s *Server) idempotent(r *request, logical any, op func() error) error {
	key, err := r.idempotencyKey()
	if err != nil {
		return err
	}
	enc, err := json.Marshal(logical)
	if err != nil {
		return err
	}
	h := sha256.New()
	h.Write([]byte(r.op.ID))
	h.Write([]byte{0})
	h.Write(enc)
	fp := h.Sum(nil)

	integration := r.principal.IntegrationID
	deadline := time.Now().Add(s.cfg.IdempotencyWait)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		claim, err := s.led.ClaimIdempotency(r.c, integration, key, r.op.ID, fp, s.cfg.IdempotencyStale)
		if err != nil {
			return err
		}
		switch claim.State {
		case ledger.IdemMismatch:
			return newProblem("idempotency_conflict", "This Idempotency-Key was already used for a different request; use a new key for a new request.")
		case ledger.IdemReplay:
			s.replay(r, claim.Response)
			return nil
		case ledger.IdemFresh:
			return s.runFirst(r, key, op)
		}
		// In flight elsewhere: wait for it (real time: this is the server
		// waiting on another request, not a test).
		if time.Now().Add(wait).After(deadline) {
			return &Problem{Code: "idempotency_conflict", RetryAfter: 1,
				Detail: "A request with this Idempotency-Key is still in progress; retry after Retry-After seconds."}
		}
		select {
		case <-r.c.Done():
			return r.c.Err()
		case <-time.After(wait):
		}
	}
}

func (s *Server) runFirst(r *request, key string, op func() error) error {
	integration := r.principal.IntegrationID
	if err := op(); err != nil {
		p := problemFor(r.c, s.log, err)
		r.problemCode = p.Code
		s.writeProblem(r.ctx, r.id, p)
	}
	status := r.ctx.Response.StatusCode()
	if status == 429 || status >= 500 {
		if err := s.led.ReleaseIdempotency(r.c, integration, key); err != nil {
			s.log.Error("idempotency release failed", "request_id", r.id, "err", err)
		}
		return nil
	}
	rec := ledger.IdemResponse{
		Status:      status,
		ContentType: string(r.ctx.Response.Header.ContentType()),
		Location:    string(r.ctx.Response.Header.Peek("Location")),
		Body:        append([]byte(nil), r.ctx.Response.Body()...),
	}
	return s.led.CompleteIdempotency(r.c, integration, key, rec)
}

// replay writes a stored first response.
func (s *Server) replay(r *request, rec ledger.IdemResponse) {
	r.ctx.SetStatusCode(rec.Status)
	r.ctx.SetContentType(rec.ContentType)
	if rec.Location != "" {
		r.ctx.Response.Header.Set("Location", rec.Location)
	}
	r.ctx.Response.Header.Set("Idempotent-Replayed", "true")
	r.ctx.SetBody(rec.Body)
	if rec.Status >= 400 {
		// A replayed Problem is the original response: its X-Request-Id
		// matches the request_id inside it.
		var p struct {
			Code      string `json:"code"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(rec.Body, &p) == nil {
			r.problemCode = p.Code
			r.ctx.Response.Header.Set("X-Request-Id", p.RequestID)
		}
	}
}
