// Package queries is the query use case, HTTP-free. Service.Admit is POST
// /queries' one entry point: it resolves the site, freezes the layers
// (Freeze), claims the Idempotency-Key, admits the query (the ledger's one
// admission, ledger.Admit, once in the common case) and answers it,
// choosing its fast path inside: the claim, the site and the query in one
// round trip, with a small answer computed before it (for a key Vouches
// vouches for) stored with it; any check that path refuses falls back to
// the step-by-step path, with a provisional key authenticated first.
// Service.Once is the idempotency of every operation that takes an
// Idempotency-Key: the claim, the replay of a stored response only to a
// caller the original request's checks would pass now, and the settling
// of the claim (Settle: the stored response with its audit record, a
// query's finish with it, before the answer is sent). The ledger is its
// only store of record; the api package decodes requests and renders what
// it decides through Call and QueryCall.
package queries
