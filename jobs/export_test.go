package jobs

import "github.com/google/uuid"

// Waiting reports whether a Wait on id is registered (tests order a Wait
// before the worker's finish with it).
func Waiting(r *Runner, id uuid.UUID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.waiters[id]) > 0
}

// InRequest is the number of in-request slots taken (attempts run in
// requests and precomputations).
func InRequest(r *Runner) int64 { return r.inRequest.Load() }

// PrecomputeEnded reports whether p's computation context has ended.
func PrecomputeEnded(p *Precomputed) bool { return p.ctx.Err() != nil }
