package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrAnswerNeedsAuth: an AdmitRequest with an Answer but no Auth. An answer
// is stored only by the admission that authenticates its key (POST
// /queries answers first only for a key it authenticates in the same
// round trip); a caller error, not the client's.
var ErrAnswerNeedsAuth = errors.New("ledger: an answered admission authenticates its key (AdmitRequest.Auth)")

// admitAnsweredSQL calls siteenv_admit_answered (migration 0020), the
// whole answered admission in one statement.
var admitAnsweredSQL = func() string {
	ps := make([]string, 50)
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d", i+1)
	}
	return "SELECT * FROM siteenv_admit_answered(" + strings.Join(ps, ", ") + ")"
}()

// admitAnsweredSiteParams names admitAnsweredSQL's site parameters for
// InputError.Field ($14 name, $16 geometry, $17 fingerprint).
var admitAnsweredSiteParams = []string{12: "", 13: "name", 15: "geometry", 16: "fingerprint"}

// admitAnswered is Admit of a request with an Answer: its one
// statement, siteenv_admit_answered, checks and stores what the pipelined
// batch did (AdmitAnswer), as a single call.
func (l *Ledger) admitAnswered(ctx context.Context, ar AdmitRequest) (Admission, error) {
	c, err := l.answeredCall(ctx, ar)
	if err != nil {
		return Admission{}, err
	}
	// A refused query's claim turns running under c.token, for the caller
	// to release (Admission.Token).
	l.leases.add(c.token)
	var (
		res     Admission
		p       = &res.Principal
		st      = &res.Site
		v       int64
		status  *string
		granted []string
	)
	err = l.pool.QueryRow(ctx, admitAnsweredSQL, c.args...).Scan(
		&p.KeyID, &p.AccountID, &p.IntegrationID, &p.AccountName, &p.Kind, &p.Scopes, &p.KeyDatasets, &p.AccountDatasets, &p.Catalogue,
		&st.ID, &st.Name, &st.PortfolioID, &st.Geometry, &st.Fingerprint, &st.AreaM2, &st.Bounds[0], &st.Bounds[1], &st.Bounds[2], &st.Bounds[3],
		&st.CreatedAt, &st.ArchivedAt, &granted, &res.SiteCreated, &v, &status)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "SEA01":
		err = ErrAdmissionCheck
	case err != nil:
		err = nameParams(err, admitAnsweredSiteParams...)
	}
	if err != nil || status != nil {
		// Nothing written, or stored finished with the claim done: no
		// claim is left to settle.
		l.leases.remove(c.token)
		if err != nil {
			return Admission{}, err
		}
		res.Answered = true
	} else {
		res.Token = c.token
	}
	st.AccountID = p.AccountID
	if res.SiteCreated {
		// As given (not as jsonb re-renders its geometry), like SaveSite.
		s := ar.Site
		s.ID, s.CreatedAt, s.AccountID = c.siteID, c.now, p.AccountID
		res.Site = s
	}
	q := c.q
	q.AccountID, q.IntegrationID = p.AccountID, p.IntegrationID
	q.SiteID, q.SiteGeometry = res.Site.ID, res.Site.Geometry
	res.AdmitResult, err = admitted(q, v, status, ar.Limits, c.now, c.cur)
	return res, err
}

// answeredCall is one call of admitAnsweredSQL: its arguments and what
// admitAnswered reads its result with.
type answeredCall struct {
	args          []any
	q             Query // as its answer stores it
	siteID, token uuid.UUID
	now           time.Time
	cur           int64 // the rate window's index
}

// answeredCall prepares ar's call of admitAnsweredSQL.
func (l *Ledger) answeredCall(ctx context.Context, ar AdmitRequest) (answeredCall, error) {
	a, answer, s, lim, r := ar.Auth, ar.Answer, ar.Site, ar.Limits, ar.Answer.Response
	if a == nil {
		return answeredCall{}, ErrAnswerNeedsAuth
	}
	now := l.now()
	c := answeredCall{q: answer.Finish.Row, siteID: s.ID, token: uuid.New(), now: now, cur: windowIndex(now, time.Minute)}
	// The caller rendered the answer: its id and times are the row's.
	q := &c.q
	q.Attempts = 1
	frozen, err := l.frozenRefs(ctx, q.Frozen)
	if err != nil {
		return answeredCall{}, err
	}
	if c.siteID == uuid.Nil {
		c.siteID = newID()
	}
	sections := ar.Sections
	if sections == nil {
		sections = []string{}
	}
	act := answer.Activity
	if act.ID == uuid.Nil {
		act.ID = newID()
	}
	c.args = []any{a.KeyHash, nonNil(a.Scopes), nonNil(a.Datasets), a.Catalogue,
		ar.IdemKey, ar.Operation, ar.Fingerprint, now, r.Status, r.ContentType, r.Location, r.Body,
		c.siteID, s.Name, s.PortfolioID, s.Geometry, s.Fingerprint, s.AreaM2, s.Bounds[0], s.Bounds[1], s.Bounds[2], s.Bounds[3],
		sections,
		q.ID, q.CreatedAt, q.RadiusM, q.LayerIDs, q.IncludeGeometry, frozen, c.cur, lim.PerMinute, lim.MaxQueued, lim.MaxRetainedBytes,
		q.Status, answer.Finish.outcome, q.ResultKey, q.ResultBytes, q.ResultCount, q.ComputedAt, q.ExpiresAt, c.token, l.lease.Seconds(),
		act.ID, act.Operation, act.Outcome, act.RequestID, act.HTTPStatus, act.ErrorCode, act.ResourceType, act.ResourceID}
	return c, nil
}
