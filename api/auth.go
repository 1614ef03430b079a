package api

import (
	"errors"
	"strings"

	"siteenv/ledger"
)

// authenticate resolves the bearer key to its live principal. Keys are looked
// up on every request, so revocation and scope changes apply immediately.
func (s *Server) authenticate(r *request) error {
	h := string(r.ctx.Request.Header.Peek("Authorization"))
	scheme, key, ok := strings.Cut(h, " ")
	if h == "" {
		return newProblem(CodeUnauthenticated, "Send the API key as 'Authorization: Bearer <key>'.")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" || strings.ContainsAny(key, " \t") {
		return newProblem(CodeUnauthenticated, "The Authorization header must be 'Bearer <key>'.")
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
