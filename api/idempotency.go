package api

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"siteenv/ledger"
	"siteenv/queries"
)

const maxIdempotencyKey = 128

var idempotencyKeyRE = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z0-9._:-]{1,%d}$`, maxIdempotencyKey))

// idempotencyKey validates the Idempotency-Key header.
func (r *request) idempotencyKey() (string, error) {
	v := r.http.Request.Header.Peek("Idempotency-Key")
	if v == nil {
		return "", invalid("This operation requires an Idempotency-Key header.",
			FieldError{Field: "Idempotency-Key", Message: "required header"})
	}
	if !idempotencyKeyRE.Match(v) {
		return "", invalid("The Idempotency-Key header is malformed.",
			FieldError{Field: "Idempotency-Key", Message: fmt.Sprintf("must be 1 to %d characters matching ^[A-Za-z0-9._:-]+$", maxIdempotencyKey)})
	}
	return string(v), nil
}

// idempotent runs op at most once per (integration, Idempotency-Key)
// (queries.Service.Once: the claim, the replay of a stored response to a
// caller that recheck passes, and the settling of the claim). logical is
// what identifies the request (options such as page size are left out by
// the caller); its JSON encoding is fingerprinted.
func (s *Server) idempotent(r *request, logical any, recheck func(ledger.IdemResponse) error, op func() error) error {
	fp, err := queries.Fingerprint(r.op.ID, logical)
	if err != nil {
		return err
	}
	return s.idempotentAs(r, fp, recheck, op)
}

// idempotentAs is idempotent with the request's fingerprint computed by
// the caller (siteFingerprint).
func (s *Server) idempotentAs(r *request, fp []byte, recheck func(ledger.IdemResponse) error, op func() error) error {
	key, err := r.idempotencyKey()
	if err != nil {
		return err
	}
	return s.queries.Once(call{s, r}, key, fp, recheck, &r.pending, op)
}

// call is a request as the queries package sees it (queries.Call): its
// decisions are rendered into the request's response.
type call struct {
	s *Server
	r *request
}

func (c call) Context() context.Context       { return c.r.ctx }
func (c call) Principal() ledger.Principal    { return c.r.principal }
func (c call) Operation() string              { return c.r.op.ID }
func (c call) RequestID() string              { return c.r.id }
func (c call) Replay(rec ledger.IdemResponse) { c.s.replay(c.r, rec) }
func (c call) Audited(status int)             { c.r.audited = status }

func (c call) Activity() (ledger.Activity, bool) { return activityOf(c.r) }

func (c call) Fail(err error) {
	p := problemFor(c.r.ctx, c.s.log, err)
	c.r.problemCode = string(p.Code)
	c.s.writeProblem(c.r.http, c.r.id, p)
}

func (c call) Response() ledger.IdemResponse {
	resp := &c.r.http.Response
	return ledger.IdemResponse{Status: resp.StatusCode(), ContentType: string(resp.Header.ContentType()),
		Location: string(resp.Header.Peek("Location")), Body: resp.Body()}
}

func (c call) Reset() {
	c.r.http.Response.Reset()
	c.r.http.Response.Header.Set("X-Request-Id", c.r.id)
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
