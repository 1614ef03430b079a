package api

import (
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// admit authenticates the request's key, authorizes the operation's scopes
// and counts a read against the account's read budget. For a GET the key
// lookup and the rate window are one ledger statement, sent with the
// handler's first read when that is known (prefetchFor): one round trip. The
// outcome is the same as authenticate, authorize and limitReads in turn: a
// revoked or unknown key, or a missing scope, is refused before anything is
// counted.
func (s *Server) admit(r *request) error {
	if m := string(r.http.Method()); m != "GET" && m != "HEAD" {
		if s.admitWithKey(r) {
			return nil
		}
		if err := s.authenticate(r); err != nil {
			return err
		}
		return s.authorize(r, r.op.Scopes...)
	}
	key, err := bearer(r)
	if err != nil {
		return err
	}
	var pfs []ledger.Prefetch
	if pf := s.prefetchFor(r); pf != nil {
		pfs, r.prefetch = append(pfs, pf), pf
	}
	p, w, counted, err := s.led.AuthenticateCount(r.ctx, key, r.op.Scopes, ledger.BucketReads, time.Minute, pfs...)
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
	if err := s.checkRate(r, ledger.BucketReads, s.cfg.ReadsPerMinute, w); err != nil {
		return err
	}
	s.queries.Vouch(ledger.HashKey(key), p)
	return nil
}

// keyAdmitted are the operations whose admission authenticates the key
// itself, in its own round trip (ledger.AdmitRequest.Auth): POST /queries
// with a point or geometry site (queries.Service.Admit).
var keyAdmitted = map[string]bool{"create_query": true}

// admitWithKey leaves the key's authentication to the operation's
// admission, which authenticates it in the same round trip as it writes
// (ledger.Admit with Auth): the request is provisional, and its
// principal holds only the catalogue version the handler reads layers at
// (the admission checks it is still current). If the admission does not
// authenticate the key (a key unknown, revoked or lacking a scope or a
// dataset, a check that failed), nothing was written and the use case
// authenticates the key first (queries.QueryCall.Authenticate) before its
// step-by-step path; a refusal before the use case is called is served
// again by Server.serve with the key authenticated first
// (resetProvisional), so every answer is the one it always was.
func (s *Server) admitWithKey(r *request) bool {
	if r.authenticated || !keyAdmitted[r.op.ID] {
		return false
	}
	v := s.catalogue.current()
	if v == 0 {
		return false
	}
	key, err := bearer(r)
	if err != nil {
		return false
	}
	r.keyHash, r.provisional = ledger.HashKey(key), true
	r.principal = ledger.Principal{Catalogue: v}
	return true
}

// authenticatedBy takes the principal the admission authenticated.
func (r *request) authenticatedBy(p ledger.Principal) {
	r.principal, r.provisional, r.keyHash = p, false, nil
}

// resetProvisional forgets a provisional pass over the request (nothing of
// it was written) before it is served again with its key authenticated.
func (s *Server) resetProvisional(r *request) {
	r.provisional, r.keyHash, r.authenticated = false, nil, true
	r.principal = ledger.Principal{}
	r.resourceType, r.resourceID, r.problemCode, r.etag = "", "", "", ""
	r.paramErrs, r.paramsRead, r.rate, r.prefetch = nil, false, rateState{}, nil
	r.http.Response.Reset()
	r.http.Response.Header.Set("X-Request-Id", r.id)
}

// prefetchFor is the read a GET's handler will begin with, when it is
// known before the key is checked: it then travels with the key lookup in
// one round trip (ledger.Prefetch). GET /context's ledger read; a cached
// finished query's live columns for its pages.
func (s *Server) prefetchFor(r *request) ledger.Prefetch {
	switch r.op.ID {
	case "get_context":
		return &ledger.ContextPrefetch{}
	case "get_query", "get_query_results":
		id, err := uuid.Parse(r.params["query_id"])
		if err != nil {
			return nil
		}
		if _, ok := s.finished.get(id); ok {
			return &ledger.QueryLivePrefetch{ID: id}
		}
	}
	return nil
}

// bearer reads the key from the Authorization header. Two Authorization
// headers are refused (invalid_request): a proxy that reads the last one
// would authenticate another key than the one used here.
func bearer(r *request) (string, error) {
	if len(r.http.Request.Header.PeekAll("Authorization")) > 1 {
		return "", invalid("Send exactly one Authorization header.", FieldError{Field: "Authorization", Message: "sent more than once"})
	}
	h := string(r.http.Request.Header.Peek("Authorization"))
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
	p, err := s.led.Authenticate(r.ctx, key)
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
