package queries

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"siteenv/internal/phase"
	"siteenv/jobs"
	"siteenv/ledger"
)

// Runner is the part of the job runner the use case needs (jobs.Runner).
type Runner interface {
	// Notify wakes a worker for a newly queued query.
	Notify()
	// Wait blocks until the query finishes here, ctx ends or d passes. It
	// returns the finished row when the runner kept one for this waiter
	// (its ID is then id); otherwise the caller reads the ledger.
	Wait(ctx context.Context, id uuid.UUID, d time.Duration) (ledger.Query, bool)
}

// nowRunner is the in-request part of the job runner (jobs.Runner.RunNowFrom):
// a query admitted running in this process executes at once, beside the
// workers, without a claim and a hand-over, from its answer begun during
// its admission when there is one (Precompute; Vouches).
type nowRunner interface {
	Runner
	RunNowFrom(ctx context.Context, q ledger.Query, d time.Duration, pre *jobs.Precomputed) jobs.NowResult
	RunLimits() (maxRunning int, lease time.Duration, ok bool)
	Precompute(q ledger.Query, site jobs.DecodedSite) *jobs.Precomputed
	AnswerFirst(p *jobs.Precomputed, q ledger.Query, d time.Duration) (*jobs.Answered, bool)
}

// QueryCall is a POST /queries request as the use case sees it: a Call
// that also resolves its site and layers and renders a query's answer.
type QueryCall interface {
	Call
	// Provisional reports the hash of the request's key while the key is
	// not yet authenticated: the admission authenticates it in its own
	// round trip (ledger.AdmitAuth); Authenticated takes the principal it
	// authenticated. The principal holds only the catalogue version the
	// layers are read at until then.
	Provisional() (keyHash []byte, ok bool)
	Authenticated(p ledger.Principal)
	// Authenticate authenticates the key and authorizes the operation
	// (as every operation is before its handler): the step-by-step path of
	// a provisional request.
	Authenticate() error
	// Scopes are the operation's.
	Scopes() []string
	// IdempotencyKey is the request's validated Idempotency-Key.
	IdempotencyKey() (string, error)
	// NewSite is the request's site as a new site of the account, when its
	// selector gives it whole (a point or a geometry); ok is false for
	// any other selector, or a boundary that cannot be one. decoded is
	// the site's geometry as decoding site.Geometry gives it, for its
	// answer's precomputation (jobs.DecodedSite; zero: none).
	NewSite() (site ledger.Site, decoded jobs.DecodedSite, ok bool)
	// Site resolves the selector to an active, eligible site of the
	// account, registering a new one.
	Site() (ledger.Site, error)
	// Layers reads layers and their current releases (at the principal's
	// catalogue version).
	Layers(ids []string) (map[string]ledger.LayerRelease, error)
	// Rate records the admissions' window for the response's headers; the
	// error is the window's refusal (rate_limited) when it is full.
	Rate(w ledger.RateWindow) error
	// Answer renders the answer of the admitted query q: done, the finished
	// row the run handed over (zero: none, the query is read), 200 with
	// its first page when finished, else 202. pending is the request's.
	Answer(q, done ledger.Query, ask Ask, pending *Pending) error
	// AnswerFirst renders row, finished before its admission, as Answer
	// does; more: its first page does not hold every feature (the next
	// page's cursor is rendered). ok is false, nothing rendered, when the
	// page could not be read. Withdraw forgets it (it was not stored), and
	// RenameSite rewrites the rendered answer's site id.
	AnswerFirst(row ledger.Query, ask Ask) (more, ok bool)
	Withdraw()
	RenameSite(from, to uuid.UUID)
	// Record is the audit record of the response as rendered.
	Record() ledger.Activity
	// Phases times the request's phases (nil: off).
	Phases() *phase.Timer
}

// SetRunner attaches the runner (nil: queries run on another replica).
func (s *Service) SetRunner(r Runner) { s.runner = r }

// admitLimits are the admission's limits, the query admitted running in
// this process when the runner runs queries in the request.
func (s *Service) admitLimits() ledger.AdmitLimits {
	if nr, ok := s.runner.(nowRunner); ok {
		return s.cfg.Limits.Admit(nr.RunLimits)
	}
	return s.cfg.Limits.Admit(nil)
}

// Admit is POST /queries: it resolves the site, freezes the layers,
// claims the idempotency key, admits the query and answers it, rendered
// through c. A site given whole (a point or a geometry) takes the fast
// path first: the claim, the site, its sections and the query in one
// round trip (admitAtOnce), with a small answer computed before it and
// stored with it (answerFirst). Any check that path refuses (a used key,
// a site the key may not create, a section not granted, a layer refused,
// a site too large, or a provisional key that is not good) wrote nothing,
// and the step-by-step path answers each case exactly: the key
// authenticated first when it was provisional, then the claim (Once), the
// site, the layers and the admission. The error is the answer, for c to
// render, when nothing was rendered.
func (s *Service) Admit(c QueryCall, fingerprint []byte, ask Ask, pending *Pending) error {
	if pending == nil {
		pending = &Pending{}
	}
	if handled, err := s.admitAtOnce(c, fingerprint, ask, pending); handled {
		if _, provisional := c.Provisional(); provisional && err != nil {
			// The ledger failed before it authenticated the key: answered
			// as any failure, the key authenticated first (as every other
			// operation's is, for its audit record), and never admitted again.
			if aerr := c.Authenticate(); aerr != nil {
				return aerr
			}
		}
		return err
	}
	if _, provisional := c.Provisional(); provisional {
		if err := c.Authenticate(); err != nil {
			return err
		}
	}
	key, err := c.IdempotencyKey()
	if err != nil {
		return err
	}
	recheck := func(ledger.IdemResponse) error { return Permitted(c.Principal(), ask.LayerIDs) }
	return s.once(c, key, fingerprint, recheck, pending, func(tookOver bool) error {
		ctx, p := c.Context(), c.Principal()
		if tookOver {
			// The first request's process died before it answered: the
			// query its admission committed, if it did, is the answer,
			// never a second query (it runs, or ran, on a worker).
			switch q, err := s.led.QueryByIdemKey(ctx, p.IntegrationID, p.AccountID, key); {
			case err == nil:
				pending.Committed = true
				if err := Permitted(p, q.LayerIDs); err != nil {
					// Another key of the integration, restricted away from
					// a layer: refused as a replay would be, the claim left
					// (lapsed) for the query's own caller.
					return &CallerRefusal{Err: err}
				}
				return c.Answer(q, s.wait(c, q, time.Duration(ask.Wait)*time.Second), ask, pending)
			case !errors.Is(err, ledger.ErrNotFound):
				return err
			}
		}
		site, err := c.Site()
		if err != nil {
			return err
		}
		sa, err := s.led.SiteAccess(ctx, p.AccountID, site.ID)
		if err != nil {
			return err
		}
		catalogue, err := c.Layers(ask.LayerIDs)
		if err != nil {
			return err
		}
		frozen, _, err := Freeze(p, ask, catalogue, func(section string) bool { return sa.Granted[section] })
		if err != nil {
			return err
		}
		// Every refusal above (400, 403, 404, 422) came before the
		// admission is counted: only a request that can run uses one.
		res, err := s.led.Admit(ctx, ledger.AdmitRequest{Claimed: true, IdemKey: key, Query: ledger.Query{AccountID: p.AccountID, IntegrationID: p.IntegrationID,
			SiteID: site.ID, SiteGeometry: site.Geometry, RadiusM: ask.RadiusM, LayerIDs: ask.LayerIDs,
			IncludeGeometry: ask.IncludeGeometry, Frozen: frozen}, Limits: s.admitLimits()})
		if errors.Is(err, ledger.ErrRateLimited) || err == nil || errors.Is(err, ledger.ErrCapacity) {
			if rerr := c.Rate(res.Window); rerr != nil {
				return rerr
			}
		}
		if err != nil {
			return err
		}
		return s.answer(c, res.Query, ask, pending, nil)
	})
}

// answer runs the admitted q (run) and renders its answer.
func (s *Service) answer(c QueryCall, q ledger.Query, ask Ask, pending *Pending, pre *jobs.Precomputed) error {
	done := s.run(c, q, time.Duration(ask.Wait)*time.Second, pending, pre)
	return c.Answer(q, done, ask, pending)
}

// run runs q in this request when it was admitted running, and waits up
// to d for it; a queued q is left to the runner's workers, woken and
// waited for. It returns the finished row when one was handed over (its
// ID is then q's), else the zero Query: the caller reads the ledger. A
// finish handed over by the in-request attempt is the request's to store
// (pending, Settle) and its row is returned.
func (s *Service) run(c QueryCall, q ledger.Query, d time.Duration, pending *Pending, pre *jobs.Precomputed) ledger.Query {
	if s.runner == nil {
		return ledger.Query{}
	}
	defer c.Phases().Done(phase.Wait, c.Phases().Start())
	ctx := c.Context()
	if nr, ok := s.runner.(nowRunner); ok && q.Status == ledger.QueryRunning {
		res := nr.RunNowFrom(ctx, q, d, pre)
		if res.Accepted {
			if res.Finish != nil {
				pending.Finish = res.Finish
				return res.Finish.Row
			}
			return res.Row
		}
		// The runner is stopping: hand the query to the queue, where a
		// worker of this or another replica claims it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SettleTimeout)
		defer cancel()
		if _, err := s.led.RequeueQuery(rctx, q.ID); err != nil {
			s.log.Warn("requeue of a query admitted running failed; its attempt lapses and the janitor requeues it",
				"query_id", q.ID, "err", err)
		}
	}
	return s.wait(c, q, d)
}

// wait wakes the runner's workers for q and waits up to d for it to
// finish on this replica, without running it here; it returns the
// finished row when the runner kept one (run).
func (s *Service) wait(c QueryCall, q ledger.Query, d time.Duration) ledger.Query {
	if s.runner == nil {
		return ledger.Query{}
	}
	s.runner.Notify()
	done, _ := s.runner.Wait(c.Context(), q.ID, d)
	return done
}

// admitAtOnce is the fast path's admission in one round trip (ledger.Admit
// with the key: the idempotency claim, the site's registration, its
// sections and the query in one pipelined transaction), for a site given
// whole. handled is false when the request must take the step-by-step
// path: nothing was written or counted then. Once the claim is fresh the
// request is this one's, and it is answered and settled as on that path
// (Settle). A small answer computed before the admission is stored with it
// instead (answerFirst).
func (s *Service) admitAtOnce(c QueryCall, fp []byte, ask Ask, pending *Pending) (handled bool, _ error) {
	site, decoded, ok := c.NewSite()
	if !ok {
		return false, nil
	}
	key, err := c.IdempotencyKey()
	if err != nil {
		return false, nil
	}
	p := c.Principal()
	catalogue, err := c.Layers(ask.LayerIDs)
	if err != nil {
		return false, nil
	}
	frozen, sections, err := Freeze(p, ask, catalogue, nil)
	if err != nil {
		return false, nil
	}
	ar := ledger.AdmitRequest{Integration: p.IntegrationID, IdemKey: key, Operation: c.Operation(),
		Fingerprint: fp, Site: site, CreateSite: p.HasScope(ledger.ScopeSitesWrite), Sections: sections,
		Query: ledger.Query{AccountID: p.AccountID, IntegrationID: p.IntegrationID, RadiusM: ask.RadiusM,
			LayerIDs: ask.LayerIDs, IncludeGeometry: ask.IncludeGeometry, Frozen: frozen},
		Limits: s.admitLimits()}
	hash, provisional := c.Provisional()
	if provisional {
		// The key is authenticated by the admission.
		ar.Auth = &ledger.AdmitAuth{KeyHash: hash, Scopes: c.Scopes(), Datasets: ask.LayerIDs, Catalogue: p.Catalogue}
	}
	pre, v := s.precompute(ar, site, decoded, hash, provisional)
	defer pre.Discard() // unless the attempt took it
	if handled, err, ok := s.answerFirst(c, ar, pre, v, ask); ok {
		return handled, err
	}
	res, err := s.led.Admit(c.Context(), ar)
	if errors.Is(err, ledger.ErrAdmissionCheck) {
		s.vouches.Forget(hash)
		return false, nil
	}
	if err != nil && res.Token == uuid.Nil {
		// Nothing claimed (the ledger failed): answered as any failure.
		return true, err
	}
	if provisional {
		c.Authenticated(res.Principal)
		s.vouchAdmitted(hash, res.Principal, err, res.Window)
	}
	var run *jobs.Precomputed
	if err == nil && res.Query.Status == ledger.QueryRunning && res.Site.Fingerprint == site.Fingerprint {
		run = pre
	}
	return true, s.Settle(c, key, res.Token, pending, func() error {
		if err != nil {
			return s.refusedAdmission(c, res.Window, err)
		}
		_ = c.Rate(res.Window)
		return s.answer(c, res.Query, ask, pending, run)
	})
}

// refusedAdmission answers an admission refused over the rate or the
// account's capacity (err): the rate's 429 when the window is full, else
// err. The caller's claim is then released and the site stays registered.
func (s *Service) refusedAdmission(c QueryCall, w ledger.RateWindow, err error) error {
	if rerr := c.Rate(w); rerr != nil {
		return rerr
	}
	return err
}
