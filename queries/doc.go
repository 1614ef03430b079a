// Package queries is the query use case of POST /queries, HTTP-free: what
// a request asks (Ask), the checks of its layers and their freezing
// (Freeze), the admission's limits (Limits) and the keys vouched for
// precomputation (Vouches). The ledger is its only store of record; the
// api package decodes requests into it and renders what it decides.
package queries
