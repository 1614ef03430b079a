package api

import (
	"sync"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// finishedQueries keeps the decoded rows of finished queries this replica
// has read. What a finished query holds (frozen layers, outcome, counts,
// expiry) never changes; what can (its result released or expired, and
// its status, compared to catch a copy made stale by a lost relaxed
// commit) is read live on every request (ledger.QueryLive), a small row
// instead of the frozen layers' JSON. So a page costs one light statement
// and another replica's DELETE is seen at once. Bounded: the oldest entry
// is dropped first.
type finishedQueries struct {
	mu   sync.Mutex
	m    map[uuid.UUID]ledger.Query
	ring []uuid.UUID
	next int
}

// maxCachedQueries bounds the cache (a finished query's row is a few KiB).
const maxCachedQueries = 2048

func (c *finishedQueries) get(id uuid.UUID) (ledger.Query, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.m[id]
	return q, ok
}

func (c *finishedQueries) put(q ledger.Query) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[uuid.UUID]ledger.Query)
	}
	if _, ok := c.m[q.ID]; ok {
		c.m[q.ID] = q
		return
	}
	if len(c.ring) < maxCachedQueries {
		c.ring = append(c.ring, q.ID)
	} else {
		delete(c.m, c.ring[c.next])
		c.ring[c.next] = q.ID
		c.next = (c.next + 1) % maxCachedQueries
	}
	c.m[q.ID] = q
}

// query is ledger.Query for a page of account's query id, served from the
// cache with its live columns read fresh when the query has finished.
func (s *Server) query(r *request, id uuid.UUID) (ledger.Query, error) {
	account := r.principal.AccountID
	if q, ok := s.finished.get(id); ok && q.AccountID == account {
		var v ledger.QueryLive
		if pf, ok := r.prefetch.(*ledger.QueryLivePrefetch); ok && pf.ID == id && pf.Err == nil {
			v = pf.Live // read with the key (Server.prefetchFor)
		} else {
			var err error
			if v, err = s.led.QueryLive(r.c, account, id); err != nil {
				return ledger.Query{}, err
			}
		}
		if v.Status == q.Status {
			q.ResultKey, q.ResultBytes, q.ReleasedAt = v.ResultKey, v.ResultBytes, v.ReleasedAt
			return q, nil
		}
	}
	q, err := s.led.Query(r.c, account, id)
	if err != nil {
		return ledger.Query{}, err
	}
	if finished(q.Status) {
		s.finished.put(q)
	}
	return q, nil
}
