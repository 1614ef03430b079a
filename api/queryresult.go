package api

import (
	"context"

	"siteenv/ledger"
	"siteenv/store"
)

// resultRunner is the part of the job runner that holds results answered
// before their files are stored (jobs.Runner.OpenResult, DropResult: the
// write-behind, jobs/writebehind.go).
type resultRunner interface {
	OpenResult(ctx context.Context, q ledger.Query) (store.Object, error)
	DropResult(key string)
}

// openResult opens q's retained result: through the runner, which serves
// a result still being written from memory and recomputes one whose file
// was lost, or from the store where the server has no such runner.
func (s *Server) openResult(r *request, q ledger.Query) (store.Object, error) {
	if rr, ok := s.runner.(resultRunner); ok {
		return rr.OpenResult(r.ctx, q)
	}
	return s.store.Open(r.ctx, *q.ResultKey)
}

// dropResult forgets a released result's copy awaiting its write, so the
// write does not store it after the store's Delete.
func (s *Server) dropResult(key string) {
	if rr, ok := s.runner.(resultRunner); ok {
		rr.DropResult(key)
	}
}
