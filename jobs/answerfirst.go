package jobs

import (
	"context"
	"time"

	"siteenv/ledger"
)

// Answer first: a query whose precomputed answer (Precompute) is ready by
// the time its admission would be sent, and small enough to be held in
// memory, is answered before it is stored. The request renders the answer
// and the admission stores the query finished with it in its one round trip
// (ledger.AdmitAnswer): no attempt, lease, hand-over or finish. An answer
// its first page holds whole is not stored as a file: the client has it
// whole in the response, and its replays in the idempotency record; a
// results page asks for it seldom and computes it again from its frozen
// inputs (OpenResult), which stores it then. With an S3 store that saves a
// PUT a query, and on every store the write (about 80 us of CPU a query on
// the file store) that most small queries never read. An answer of more
// pages, whose next pages the client is about to ask for, is written
// behind (writeBehind) as an attempt's would be: its pages read the copy
// in memory until the file is stored, and a replica without either
// computes it again, as for any result written behind.

// Answered is a query's answer taken from its precomputation, for the
// request to store with its admission. Its result, when it has records, is
// held as pending (pages read it from memory) from AnswerFirst on: the
// caller ends it with Stored or Dropped, in every case.
type Answered struct {
	// Finish is the query's finish (its Row: q as stored finished).
	Finish ledger.QueryFinish
	r      *Runner
	p      *Precomputed
	key    string // the pending result's; "" when it has no records
}

// AnswerFirst waits up to d for p (begun for q's inputs) and returns its
// answer as q's finish: q is the query as it will be admitted (its ID,
// account, site and frozen inputs). q.CreatedAt is set to the finish's
// time. False when p failed, is not ready within d, holds too many records
// to be held in memory (writeBehindMaxFeatures), or more bytes than the
// write-behind bytes allow: the caller admits q as before. p is the
// caller's to hand over to an attempt until Stored (after Dropped too).
func (r *Runner) AnswerFirst(p *Precomputed, q ledger.Query, d time.Duration) (*Answered, bool) {
	if p == nil || !sameInputs(p.q, q) || p.taken.Load() {
		return nil, false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		return nil, false
	}
	// Records but no copy in memory: over writeBehindMaxFeatures.
	if p.err != nil || (len(p.c.chunks) > 0 && p.mem == nil) {
		return nil, false
	}
	a := &Answered{r: r, p: p}
	key := ResultKey(q.AccountID, q.ID) // recorded even when empty, as execute's
	if len(p.c.chunks) > 0 {
		if !r.pending.reserve(key, p.mem, r.cfg.WriteBehindBytes) {
			return nil, false
		}
		a.key = key
	}
	f, err := r.led.PrepareFinish(q, p.c.status, p.c.outcome, key, p.size, p.c.count, r.cfg.Retain)
	if err != nil {
		a.Dropped()
		return nil, false
	}
	f.Row.CreatedAt = *f.Row.ComputedAt
	a.Finish = f
	return a, true
}

// Stored: the admission stored the answer. more: the response's first
// page did not hold it whole, so its next pages are about to be asked for
// and its result is written behind (pages read the copy in memory until
// then); otherwise the copy is dropped (computed again if a page asks).
func (a *Answered) Stored(ctx context.Context, more bool) {
	a.p.taken.Store(true)
	a.p.cancel() // its computation is over: nothing else will end its context
	a.r.pre.used.Add(1)
	a.r.pre.first.Add(1)
	switch {
	case a.key != "" && more:
		a.r.writeBehind(ctx, a.key)
	case a.key != "":
		a.r.pending.remove(a.key)
	}
}

// Dropped: the answer was not stored (the admission refused or failed); its
// pending result is forgotten.
func (a *Answered) Dropped() {
	if a.key != "" {
		a.r.pending.remove(a.key)
	}
}
