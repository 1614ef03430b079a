package queries

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"siteenv/jobs"
	"siteenv/ledger"
)

// finishesBehind are the finishes of queries answered whole in their POST
// (the first page held every feature) that are stored behind the answer
// (Service.finishBehind) instead of before it: the request's second ledger
// round trip (ledger.FinishQueryCompleted) is off its latency. Until a
// finish is stored, a request with the same key on this replica waits for
// it before it reads (Service.WaitBehind), so a client reads its own answers.
type finishesBehind struct {
	n     atomic.Int64 // pending, for the requests' check without the lock
	mu    sync.Mutex
	byKey map[string][]chan struct{}
	wg    sync.WaitGroup
}

// add registers a pending finish of key's request; done ends it.
func (f *finishesBehind) add(key string) (done func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	if f.byKey == nil {
		f.byKey = map[string][]chan struct{}{}
	}
	f.byKey[key] = append(f.byKey[key], ch)
	f.mu.Unlock()
	f.n.Add(1)
	f.wg.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			chs := f.byKey[key]
			for i, c := range chs {
				if c == ch {
					chs = append(chs[:i], chs[i+1:]...)
					break
				}
			}
			if len(chs) == 0 {
				delete(f.byKey, key)
			} else {
				f.byKey[key] = chs
			}
			f.mu.Unlock()
			close(ch)
			f.n.Add(-1)
			f.wg.Done()
		})
	}
}

// wait waits until the finishes of key's requests pending now are stored
// (or ctx ends).
func (f *finishesBehind) wait(ctx context.Context, key string) {
	if f.n.Load() == 0 {
		return
	}
	f.mu.Lock()
	chs := append([]chan struct{}(nil), f.byKey[key]...)
	f.mu.Unlock()
	for _, ch := range chs {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// WaitBehind waits until the finishes stored behind the answers of
// earlier requests with the key of hash keyHash are stored (or ctx ends),
// so that the key's next read sees them.
func (s *Service) WaitBehind(ctx context.Context, keyHash string) {
	if s.behind.n.Load() == 0 {
		return
	}
	s.behind.wait(ctx, keyHash)
}

// Behind reports whether any finish is pending behind its answer (a
// request checks it before it hashes its key for WaitBehind).
func (s *Service) Behind() bool { return s.behind.n.Load() > 0 }

// WaitFinishesBehind waits until every finish stored behind its answer is
// stored (tests; a process's shutdown is covered by jobs.Runner.Stop, whose
// in-request attempts wait for their finish's word).
func (s *Service) WaitFinishesBehind() { s.behind.wg.Wait() }

// finishBehind stores, after the answer was sent, the finish of the query
// the request ran with its stored response and audit record, in one
// relaxed statement (ledger.FinishQueryCompleted), and then tells the
// attempt (PendingFinish.Stored or Decline: last, so that the runner's
// Stop waits for all of it). A query no longer running by then (cancelled
// through another replica, or taken over after this process stalled past
// its lease) keeps no response: the claim is released, and a retry with
// the same Idempotency-Key runs it afresh. Should the statement fail, the
// attempt stores the finish itself and the response is stored on its own.
// A crash of the process before it is stored leaves the query running
// until its lease lapses (any replica's janitor then requeues it and a
// worker computes it from its frozen inputs: the same answer) and the
// claim running until its lease lapses (a retry then runs the query
// afresh); docs/operations.md, "Durability".
func (s *Service) finishBehind(p *jobs.PendingFinish, integration uuid.UUID, key string, token uuid.UUID, rec ledger.IdemResponse,
	account uuid.UUID, a ledger.Activity, requestID, operation string, done func()) {
	ctx, cancel := context.WithTimeout(context.Background(), SettleTimeout)
	defer cancel()
	kept, err := s.led.FinishQueryCompleted(ctx, p.QueryFinish, integration, key, token, rec, account, a)
	switch {
	case err != nil && !errors.Is(err, ledger.ErrClaimLost):
		s.log.Error("storing a query's finish behind its answer failed; its attempt stores it", "request_id", requestID, "query_id", p.Row.ID, "err", err)
		if cerr := s.led.CompleteIdempotencyAuditedRelaxed(ctx, integration, key, token, rec, account, a); cerr != nil && !errors.Is(cerr, ledger.ErrClaimLost) {
			if rerr := s.led.ReleaseIdempotency(ctx, integration, key, token); rerr != nil {
				s.log.Error("idempotency release failed", "request_id", requestID, "err", rerr)
			}
		}
		done()
		p.Decline()
	case !kept:
		s.log.Warn("query no longer running when its answer's finish was stored; a retry runs it afresh", "request_id", requestID, "query_id", p.Row.ID)
		if rerr := s.led.ReleaseIdempotency(ctx, integration, key, token); rerr != nil {
			s.log.Error("idempotency release failed", "request_id", requestID, "err", rerr)
		}
		done()
		p.Stored(false, nil)
	default:
		if errors.Is(err, ledger.ErrClaimLost) {
			s.log.Warn("idempotency claim lost before completion", "request_id", requestID, "operation", operation)
		}
		done()
		p.Stored(true, nil)
	}
}
