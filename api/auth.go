package api

import (
	"errors"
	"strings"
	"time"

	"siteenv/internal/phase"
	"siteenv/ledger"
)

// admit authenticates the request's key, authorizes the operation's scopes
// and counts a read against the account's read budget. For a GET the key
// lookup and the rate window are one ledger statement (one round trip); the
// outcome is the same as authenticate, authorize and limitReads in turn: a
// revoked or unknown key, or a missing scope, is refused before anything is
// counted.
func (s *Server) admit(r *request) error {
	if string(r.ctx.Method()) != "GET" {
		ta := s.phases.Start()
		err := s.authenticate(r)
		s.phases.Done(phase.Auth, ta)
		if err != nil {
			return err
		}
		return s.authorize(r, r.op.Scopes...)
	}
	key, err := bearer(r)
	if err != nil {
		return err
	}
	ta := s.phases.Start()
	p, w, counted, err := s.led.AuthenticateCount(r.c, key, r.op.Scopes, "reads", time.Minute)
	s.phases.Done(phase.Auth, ta)
	if err == nil || errors.Is(err, ledger.ErrKeyRevoked) {
		r.principal = p // a revoked key's too, for the audit record of the attempt
	}
	if err != nil {
		return at(err, atAuthentication, "")
	}
	if err := s.authorize(r, r.op.Scopes...); err != nil {
		return err
	}
	if !counted {
		// Not reached: the statement counts exactly when authorize passes.
		return s.limitReads(r)
	}
	return s.checkRate(r, "reads", readsPerMinute, w)
}

// bearer reads the key from the Authorization header.
func bearer(r *request) (string, error) {
	h := string(r.ctx.Request.Header.Peek("Authorization"))
	scheme, key, ok := strings.Cut(h, " ")
	if h == "" {
		return "", newProblem(CodeUnauthenticated, "Send the API key as 'Authorization: Bearer <key>'.")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" || strings.ContainsAny(key, " \t") {
		return "", newProblem(CodeUnauthenticated, "The Authorization header must be 'Bearer <key>'.")
	}
	return key, nil
}

// authenticate resolves the bearer key to its live principal. Keys are looked
// up on every request, so revocation and scope changes apply immediately.
func (s *Server) authenticate(r *request) error {
	key, err := bearer(r)
	if err != nil {
		return err
	}
	p, err := s.led.Authenticate(r.c, key)
	if err == nil || errors.Is(err, ledger.ErrKeyRevoked) {
		r.principal = p // a revoked key's too, for the audit record of the attempt
	}
	return at(err, atAuthentication, "")
}

// authorize requires every scope.
func (s *Server) authorize(r *request, scopes ...string) error {
	var missing []string
	for _, sc := range scopes {
		if !r.principal.HasScope(sc) {
			missing = append(missing, sc)
		}
	}
	if len(missing) > 0 {
		return newProblem(CodeScopeInsufficient, "This key lacks the scope(s) %s.", strings.Join(missing, ", "))
	}
	return nil
}
