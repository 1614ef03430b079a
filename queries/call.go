package queries

import (
	"context"

	"github.com/google/uuid"

	"siteenv/jobs"
	"siteenv/ledger"
)

// Call is one request as the use case sees it: the API implements it over
// its HTTP request, rendering what the use case decides. Not safe for
// concurrent use (one request).
type Call interface {
	// Context is the request's (its deadline and cancellation).
	Context() context.Context
	// Principal is the caller's key's, as authenticated.
	Principal() ledger.Principal
	// Operation is the request's operation id (create_query, ...), and
	// RequestID its id.
	Operation() string
	RequestID() string
	// Fail writes err's answer (its Problem) as the response.
	Fail(err error)
	// Response is the response as written so far (its body is the
	// response's own buffer, valid until the response changes).
	Response() ledger.IdemResponse
	// Replay writes a stored first response.
	Replay(rec ledger.IdemResponse)
	// Reset forgets the response written so far.
	Reset()
	// Activity is the audit record of the response as written; false
	// when the request is not audited. Audited tells that the record of
	// the response of status was written (with its stored response).
	Activity() (ledger.Activity, bool)
	Audited(status int)
}

// Pending is a query's answer that the request ran and answered, whose
// finish is stored with the request's response (Settle); the zero value:
// none.
type Pending struct {
	// Finish is the attempt's finish, the request's to store.
	Finish *jobs.PendingFinish
	// Committed: the request's claim was taken over and its key's query
	// exists (the first request's admission committed it): the claim is
	// never released, only handed back lapsed (ledger.LapseIdempotency),
	// so the key's next request answers with that query too.
	Committed bool
}

// claim is one fresh idempotency claim: its key and token.
type claim struct {
	key   string
	token uuid.UUID
}
