package queries

import (
	"errors"
	"runtime"
	"time"

	"github.com/google/uuid"

	"siteenv/internal/phase"
	"siteenv/jobs"
	"siteenv/ledger"
)

// AnswerFirstWait bounds the answers stored with their admission
// (answerFirst). A small query's engine takes a few tenths of a
// millisecond; an answer still computing after AnswerFirstWait (on an idle
// server; loadedWait stretches it under load) is admitted as before: the
// engine then runs beside the admission rather than before it, and its
// finish is stored with the response (completeWithFinish), a second round
// trip. Either way the request pays at most the wait for the engine. An
// answer of several pages is answered first too, its result written
// behind (docs/benchmarks.md, "Eight clients", has the measurements).
const AnswerFirstWait = time.Millisecond

// maxWaitStretch bounds loadedWait: at most 4 x AnswerWait, however many
// requests wait.
const maxWaitStretch = 4

// loadedWait is the answer-first wait d stretched by the requests in
// flight beyond the procs that serve them: each then gets a share of a
// core, and a precomputation's wall time grows with their number. A small
// answer that needs a fraction of a millisecond of CPU would otherwise
// miss d under load and be admitted the step-by-step way (two more round
// trips and a result file: more CPU just when CPU is short). With 8
// clients on 2 cores it took bench api's fresh mix's step-by-step queries
// from 233-259 to 140-148 of 4,000 (docs/benchmarks.md). Idle (no more
// requests than procs), d as given: with 1 client a longer wait only
// serialises a medium answer's engine and admission (at large scale 3 ms
// made the 10-99 bucket 0.3-0.6 ms slower).
func loadedWait(d time.Duration, inFlight int64, procs int) time.Duration {
	p := int64(max(procs, 1))
	if n := min((inFlight+p-1)/p, maxWaitStretch); n > 1 {
		return d * time.Duration(n)
	}
	return d
}

// vouchAdmitted vouches for the key of an admission that authenticated it
// (Vouches) when it was admitted with room left in its rate, and forgets
// it otherwise.
func (s *Service) vouchAdmitted(hash []byte, p ledger.Principal, err error, w ledger.RateWindow) {
	if err == nil && w.Hits < s.cfg.Limits.PerMinute {
		s.vouches.Vouch(hash, s.cfg.Clock.Now(), p)
	} else {
		s.vouches.Forget(hash)
	}
}

// precompute begins ar's query's answer before its admission
// (jobs.Runner.Precompute) when the request's provisional key was seen
// authenticated moments ago on this replica (Vouches) and may use every
// layer; nil otherwise. The key's vouch comes with it. decoded is the
// site's geometry as the request decoded it (QueryCall.NewSite).
func (s *Service) precompute(ar ledger.AdmitRequest, site ledger.Site, decoded jobs.DecodedSite, hash []byte, provisional bool) (*jobs.Precomputed, Seen) {
	nr, ok := s.runner.(nowRunner)
	if !ok || !ar.Limits.RunNow || !provisional {
		return nil, Seen{}
	}
	v, ok := s.vouches.Vouched(hash, s.cfg.Clock.Now())
	if !ok || !v.Permits(ar.Query.LayerIDs) {
		return nil, Seen{}
	}
	q := ar.Query
	q.SiteGeometry = site.Geometry
	return nr.Precompute(q, decoded), v
}

// answerFirst answers a query from its precomputed answer before it is
// stored, when the answer is ready within AnswerFirstWait: the response
// (its first page, and the next page's cursor) is rendered, and the admission
// stores the query finished with it, its stored response and its audit
// record in the one round trip (ledger.AdmitAnswer). ok is false when it
// does not apply (AnswerFirstWait, jobs.Runner.AnswerFirst); nothing was
// sent or written then, and the caller admits the query as before. Otherwise
// handled and the error are admitAtOnce's. The body names the site the
// request would create; when the admission found the account's site of
// that fingerprint instead, both copies are rewritten to name it. A crash
// after the relaxed commit loses what any relaxed admission loses
// (docs/operations.md, Durability); a result of one page is not stored as
// a file, one of more is written behind (jobs.Answered.Stored): a results
// page finding neither computes it again.
func (s *Service) answerFirst(c QueryCall, ar ledger.AdmitRequest, pre *jobs.Precomputed, v Seen, ask Ask) (handled bool, _ error, ok bool) {
	nr, isNow := s.runner.(nowRunner)
	if pre == nil || !isNow || ar.Auth == nil {
		return false, nil, false
	}
	q := ar.Query
	q.ID, q.AccountID, q.IntegrationID = uuid.New(), v.Account, v.Integration
	q.SiteID, q.SiteGeometry = uuid.New(), ar.Site.Geometry
	tw := c.Phases().Start()
	wait := loadedWait(s.cfg.AnswerWait, s.cfg.InFlight(), runtime.GOMAXPROCS(0))
	ans, ok := nr.AnswerFirst(pre, q, wait)
	c.Phases().Done(phase.Wait, tw)
	if !ok {
		return false, nil, false
	}
	row := ans.Finish.Row
	more, rendered := c.AnswerFirst(row, ask)
	if !rendered {
		ans.Dropped()
		c.Withdraw()
		return false, nil, false
	}
	a := c.Record()
	ar.Site.ID = row.SiteID
	// The body is read during the call only (the ledger encodes it), so
	// the response's own buffer serves, uncopied.
	resp := c.Response()
	ar.Answer = &ledger.AdmitAnswer{Finish: ans.Finish, Activity: a, Response: ledger.IdemResponse{Status: 200,
		ContentType: resp.ContentType, Body: resp.Body}}
	res, err := s.led.Admit(c.Context(), ar)
	if !res.Answered {
		ans.Dropped()
		c.Withdraw()
	}
	switch {
	case errors.Is(err, ledger.ErrAdmissionCheck):
		s.vouches.Forget(ar.Auth.KeyHash)
		return false, nil, true
	case err != nil && res.Token == uuid.Nil:
		return true, err, true // nothing claimed: the ledger failed
	}
	s.vouchAdmitted(ar.Auth.KeyHash, res.Principal, err, res.Window)
	c.Authenticated(res.Principal)
	if !res.Answered {
		return true, s.Settle(c, ar.IdemKey, res.Token, nil, func() error { return s.refusedAdmission(c, res.Window, err) }), true
	}
	if res.Site.ID != row.SiteID {
		c.RenameSite(row.SiteID, res.Site.ID)
		row.SiteID = res.Site.ID
	}
	row.SiteGeometry = res.Site.Geometry
	ans.Stored(c.Context(), more)
	s.cfg.Finished(row)
	c.Audited(a.HTTPStatus)
	_ = c.Rate(res.Window)
	return true, nil, true
}
