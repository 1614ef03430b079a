package api

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"siteenv/internal/phase"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/queries"
)

// nowRunner is the in-request part of the job runner (jobs.Runner.RunNowFrom):
// a query admitted running in this process executes at once, beside the
// workers, without a claim and a hand-over, from its answer begun during
// its admission when there is one (Precompute; queries.Vouches).
type nowRunner interface {
	RunNowFrom(ctx context.Context, q ledger.Query, d time.Duration, pre *jobs.Precomputed) jobs.NowResult
	RunLimits() (maxRunning int, lease time.Duration, ok bool)
	Precompute(q ledger.Query) *jobs.Precomputed
	AnswerFirst(p *jobs.Precomputed, q ledger.Query, d time.Duration, maxFeatures int, maxBytes int64) (*jobs.Answered, bool)
}

// admitQuery counts the query against the account's admissions and stores
// it, in one round trip (ledger.Admit without a key: the request claimed
// it, and registered the site, on the step-by-step path): running, for this process to
// execute, when the server has a runner that runs queries in the request
// and the account runs fewer than its limit; queued otherwise.
func (s *Server) admitQuery(r *request, q ledger.Query) (ledger.Query, error) {
	lim := s.admitLimits()
	res, err := s.led.Admit(r.ctx, ledger.AdmitRequest{Query: q, Limits: lim})
	if errors.Is(err, ledger.ErrRateLimited) || err == nil || errors.Is(err, ledger.ErrCapacity) {
		if rerr := s.checkRate(r, ledger.BucketQueryAdmissions, queryAdmissionsPerMinute, res.Window); rerr != nil {
			return ledger.Query{}, rerr
		}
	}
	return res.Query, err
}

// admitLimits are the admission's limits, the query admitted running in
// this process when the server has a runner that runs queries in the
// request.
func (s *Server) admitLimits() ledger.AdmitLimits {
	l := queries.Limits{MaxQueued: Limits["max_queued_queries"], MaxRetainedBytes: Limits["max_retained_result_bytes"], PerMinute: queryAdmissionsPerMinute}
	if nr, ok := s.runner.(nowRunner); ok {
		return l.Admit(nr.RunLimits)
	}
	return l.Admit(nil)
}

// runQuery runs q in this request when it was admitted running, and waits
// up to d for it; a queued q is left to the runner's workers, woken and
// waited for as before. It returns the finished row when one was handed
// over (its ID is then q's), else the zero Query: the caller reads the
// ledger. A finish handed over by the in-request attempt is the request's
// to store (r.pending, queries.Service.Settle) and its row is returned.
func (s *Server) runQuery(r *request, q ledger.Query, d time.Duration) ledger.Query {
	if s.runner == nil {
		return ledger.Query{}
	}
	defer r.phases.Done(phase.Wait, r.phases.Start())
	if nr, ok := s.runner.(nowRunner); ok && q.Status == ledger.QueryRunning {
		res := nr.RunNowFrom(r.ctx, q, d, r.precomputed)
		if res.Accepted {
			if res.Finish != nil {
				r.pending.Finish = res.Finish
				return res.Finish.Row
			}
			return res.Row
		}
		// The runner is stopping: hand the query to the queue, where a
		// worker of this or another replica claims it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), queries.SettleTimeout)
		defer cancel()
		if _, err := s.led.RequeueQuery(ctx, q.ID); err != nil {
			s.log.Warn("requeue of a query admitted running failed; its attempt lapses and the janitor requeues it",
				"query_id", q.ID, "err", err)
		}
	}
	s.runner.Notify()
	done, _ := s.runner.Wait(r.ctx, q.ID, d)
	return done
}

// createQueryAtOnce is POST /queries' admission in one round trip
// (ledger.Admit with the key: the idempotency claim, the site's registration,
// its sections and the query in one pipelined transaction), for a site
// given as a point or a geometry. handled is false when the request must
// take the step-by-step path (s.idempotent): another kind of site, or any
// check that refuses or differs (a used Idempotency-Key, a site the key
// may not create, a section not granted, a layer refused, a site too
// large), since that path answers each case exactly; nothing was written
// or counted then. Once the claim is fresh the request is this one's, and
// it is answered and settled as on that path (runFirst). A small answer
// computed before the admission is stored with it instead (answerFirst).
func (s *Server) createQueryAtOnce(r *request, sel selector, logical any, ask queries.Ask) (handled bool, _ error) {
	if sel.Kind != kindPoint && sel.Kind != kindProjectedPoint && sel.Kind != kindGeometry {
		return false, nil
	}
	key, err := r.idempotencyKey()
	if err != nil {
		return false, nil
	}
	fp, err := queries.Fingerprint(r.op.ID, logical)
	if err != nil {
		return false, nil
	}
	g, _, err := s.boundary(r, sel, "site")
	if err != nil {
		return false, nil
	}
	site, err := s.newSite(r, g)
	if err != nil || site.AreaM2 > maxSiteAreaM2 {
		return false, nil
	}
	catalogue, err := s.layersForQuery(r, ask.LayerIDs)
	if err != nil {
		return false, nil
	}
	frozen, sections, err := queries.Freeze(r.principal, ask, catalogue, nil)
	if err != nil {
		return false, nil
	}
	lim := s.admitLimits()
	ar := ledger.AdmitRequest{Integration: r.principal.IntegrationID, IdemKey: key, Operation: r.op.ID,
		Fingerprint: fp, Site: site, CreateSite: r.principal.HasScope(ledger.ScopeSitesWrite), Sections: sections,
		Query: ledger.Query{AccountID: r.principal.AccountID, IntegrationID: r.principal.IntegrationID, RadiusM: ask.RadiusM,
			LayerIDs: ask.LayerIDs, IncludeGeometry: ask.IncludeGeometry, Frozen: frozen},
		Limits: lim}
	if r.provisional {
		// The key is authenticated by the admission (admitWithKey).
		ar.Auth = &ledger.AdmitAuth{KeyHash: r.keyHash, Scopes: r.op.Scopes, Datasets: ask.LayerIDs, Catalogue: r.principal.Catalogue}
	}
	hash := r.keyHash
	pre, v := s.precompute(r, ar, site, hash)
	defer pre.Discard() // unless the attempt took it
	if handled, err, ok := s.answerFirst(r, ar, pre, v, ask); ok {
		return handled, err
	}
	res, err := s.led.Admit(r.ctx, ar)
	if errors.Is(err, ledger.ErrAdmissionCheck) {
		s.recent.Forget(hash)
		return false, nil
	}
	if err != nil && res.Token == uuid.Nil {
		// Nothing claimed (the ledger failed): answered as any failure
		// (a provisional request is served again, authenticated first).
		return true, err
	}
	if r.provisional {
		r.authenticatedBy(res.Principal)
		s.vouchAdmitted(hash, res.Principal, err, res.Window)
	}
	if err == nil && res.Query.Status == ledger.QueryRunning && res.Site.Fingerprint == site.Fingerprint {
		r.precomputed = pre
	}
	return true, s.runFirst(r, key, res.Token, func() error {
		if err != nil {
			return s.refusedAdmission(r, res.Window, err)
		}
		_ = s.checkRate(r, ledger.BucketQueryAdmissions, queryAdmissionsPerMinute, res.Window)
		return s.answerQuery(r, res.Query, ask)
	})
}

// refusedAdmission answers an admission refused over the rate or the
// account's capacity (err): the rate's 429 when the window is full, else
// err. The caller's claim is then released and the site stays registered.
func (s *Server) refusedAdmission(r *request, w ledger.RateWindow, err error) error {
	if rerr := s.checkRate(r, ledger.BucketQueryAdmissions, queryAdmissionsPerMinute, w); rerr != nil {
		return rerr
	}
	return err
}

// vouchAdmitted vouches for the key of an admission that authenticated it
// (queries.Vouches) when it was admitted with room left in its rate, and
// forgets it otherwise.
func (s *Server) vouchAdmitted(hash []byte, p ledger.Principal, err error, w ledger.RateWindow) {
	if err == nil && w.Hits < queryAdmissionsPerMinute {
		s.recent.Vouch(hash, s.clock.Now(), p)
	} else {
		s.recent.Forget(hash)
	}
}

// precompute begins ar's query's answer before its admission
// (jobs.Runner.Precompute) when the request's key was seen authenticated
// moments ago on this replica (queries.Vouches); nil otherwise. The key's vouch
// comes with it.
func (s *Server) precompute(r *request, ar ledger.AdmitRequest, site ledger.Site, hash []byte) (*jobs.Precomputed, queries.Seen) {
	nr, ok := s.runner.(nowRunner)
	if !ok || !ar.Limits.RunNow || !r.provisional {
		return nil, queries.Seen{}
	}
	v, ok := s.recent.Vouched(hash, s.clock.Now())
	if !ok || !v.Permits(ar.Query.LayerIDs) {
		return nil, queries.Seen{}
	}
	q := ar.Query
	q.SiteGeometry = site.Geometry
	return nr.Precompute(q), v
}

// answerFirstWait and answerFirstBytes bound the answers stored with their
// admission (answerFirst). A small query's engine takes a few tenths of a
// millisecond; an answer still computing after answerFirstWait, or whose
// records exceed answerFirstBytes, is admitted as before: the engine then
// runs beside the admission rather than before it, and the stored
// response, whose write grows with it, is stored behind the answer. Either
// way the request pays at most the wait for the engine; answering a
// medium-scale query first (a few milliseconds of engine, hundreds of
// features) measured slower than the admission beside it.
const (
	answerFirstWait  = time.Millisecond
	answerFirstBytes = 64 << 10
)

// answerFirst answers a query from its precomputed answer before it is
// stored, when the answer is ready within answerFirstWait and its first
// page holds every feature: the response is rendered, and the admission
// stores the query finished with it, its stored response and its audit
// record in the one round trip (ledger.AdmitAnswer). ok is false when it
// does not apply (answerFirstWait, answerFirstBytes); nothing was sent or
// written then, and the caller admits the query as before. Otherwise
// handled and the error are createQueryAtOnce's. The body names the site
// the request would create; when the admission found the account's site
// of that fingerprint instead, both copies are rewritten to name it. A
// crash after the relaxed commit loses what any relaxed admission loses
// (docs/operations.md, Durability); the result is not stored as a file
// (jobs.Answered.Stored): a results page computes it again.
func (s *Server) answerFirst(r *request, ar ledger.AdmitRequest, pre *jobs.Precomputed, v queries.Seen, ask queries.Ask) (handled bool, _ error, ok bool) {
	nr, isNow := s.runner.(nowRunner)
	if pre == nil || !isNow || ar.Auth == nil {
		return false, nil, false
	}
	q := ar.Query
	q.ID, q.AccountID, q.IntegrationID = uuid.New(), v.Account, v.Integration
	q.SiteID, q.SiteGeometry = uuid.New(), ar.Site.Geometry
	tw := r.phases.Start()
	ans, ok := nr.AnswerFirst(pre, q, s.answerWait, ask.PageSize, answerFirstBytes)
	r.phases.Done(phase.Wait, tw)
	if !ok {
		return false, nil, false
	}
	row := ans.Finish.Row
	// Rendered as answerQuery renders a finished query.
	r.resourceType, r.resourceID = "query", row.ID.String()
	body := queryView(row)
	err := s.firstPage(r, row, &body, ask)
	if err == nil && !body.Page.HasMore {
		s.applyPreference(r, ask)
		err = r.writeQuery(200, &body)
	}
	if err != nil || body.Page.HasMore {
		ans.Dropped()
		s.resetAnswer(r)
		return false, nil, false
	}
	a := activityRecord(r)
	ar.Site.ID = row.SiteID
	// The body is read during the call only (the ledger encodes it), so
	// the response's own buffer serves, uncopied.
	ar.Answer = &ledger.AdmitAnswer{Finish: ans.Finish, Activity: a, Response: ledger.IdemResponse{Status: 200,
		ContentType: string(r.http.Response.Header.ContentType()), Body: r.http.Response.Body()}}
	res, err := s.led.Admit(r.ctx, ar)
	if !res.Answered {
		ans.Dropped()
		s.resetAnswer(r)
	}
	switch {
	case errors.Is(err, ledger.ErrAdmissionCheck):
		s.recent.Forget(r.keyHash)
		return false, nil, true
	case err != nil && res.Token == uuid.Nil:
		return true, err, true // nothing claimed: the ledger failed
	}
	s.vouchAdmitted(r.keyHash, res.Principal, err, res.Window)
	r.authenticatedBy(res.Principal)
	if !res.Answered {
		return true, s.runFirst(r, ar.IdemKey, res.Token, func() error { return s.refusedAdmission(r, res.Window, err) }), true
	}
	if res.Site.ID != row.SiteID {
		r.http.Response.SetBody(bytes.ReplaceAll(r.http.Response.Body(), []byte(row.SiteID.String()), []byte(res.Site.ID.String())))
		row.SiteID = res.Site.ID
	}
	row.SiteGeometry = res.Site.Geometry
	ans.Stored()
	s.finished.put(row)
	r.audited = a.HTTPStatus
	_ = s.checkRate(r, ledger.BucketQueryAdmissions, queryAdmissionsPerMinute, res.Window)
	return true, nil, true
}

// resetAnswer forgets a response rendered for an answer that was not
// stored.
func (s *Server) resetAnswer(r *request) {
	r.resourceType, r.resourceID = "", ""
	r.http.Response.Reset()
	r.http.Response.Header.Set("X-Request-Id", r.id)
}
