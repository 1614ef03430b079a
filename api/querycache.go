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
// and another replica's DELETE is seen at once. Only what the API renders
// is kept (not the site's geometry nor the layers' coverage polygons), and
// the cache is bounded in bytes: the oldest entries go first.
type finishedQueries struct {
	mu    sync.Mutex
	m     map[uuid.UUID]cachedQuery
	order []uuid.UUID // oldest first
	bytes int
}

type cachedQuery struct {
	q     ledger.Query
	bytes int
}

// maxCachedQueryBytes bounds the cache's rows (a typical one is a few KiB).
const maxCachedQueryBytes = 32 << 20

func (c *finishedQueries) get(id uuid.UUID) (ledger.Query, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	return e.q, ok
}

func (c *finishedQueries) put(q ledger.Query) {
	q.SiteGeometry = nil
	frozen := make([]ledger.FrozenLayer, len(q.Frozen))
	size := 512
	for i, f := range q.Frozen {
		f.Coverage = nil
		frozen[i] = f
		size += len(f.FieldSchema) + len(f.Sources) + 256
	}
	q.Frozen = frozen
	size += 128 * len(q.Outcome)
	if size > maxCachedQueryBytes/8 {
		return // an outsized row is read from the ledger each time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[uuid.UUID]cachedQuery)
	}
	if old, ok := c.m[q.ID]; ok {
		c.bytes -= old.bytes
	} else {
		c.order = append(c.order, q.ID)
	}
	c.m[q.ID] = cachedQuery{q: q, bytes: size}
	c.bytes += size
	for c.bytes > maxCachedQueryBytes && len(c.order) > 0 {
		id := c.order[0]
		c.order = c.order[1:]
		c.bytes -= c.m[id].bytes
		delete(c.m, id)
	}
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
			if v, err = s.led.QueryLive(r.ctx, account, id); err != nil {
				return ledger.Query{}, err
			}
		}
		if v.Status == q.Status {
			q.ResultKey, q.ResultBytes, q.ReleasedAt = v.ResultKey, v.ResultBytes, v.ReleasedAt
			return q, nil
		}
	}
	q, err := s.led.Query(r.ctx, account, id)
	if err != nil {
		return ledger.Query{}, err
	}
	if finished(q.Status) {
		s.finished.put(q)
	}
	return q, nil
}
