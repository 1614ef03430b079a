package api

import (
	"bytes"

	"github.com/google/uuid"

	"siteenv/internal/phase"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/queries"
)

// queryCall is a POST /queries request as the queries package sees it
// (queries.QueryCall): its site selector, and the request whose response
// renders the use case's decisions.
type queryCall struct {
	call
	sel selector
}

func (c queryCall) Provisional() ([]byte, bool)      { return c.r.keyHash, c.r.provisional }
func (c queryCall) Authenticated(p ledger.Principal) { c.r.authenticatedBy(p) }
func (c queryCall) Scopes() []string                 { return c.r.op.Scopes }
func (c queryCall) IdempotencyKey() (string, error)  { return c.r.idempotencyKey() }
func (c queryCall) Site() (ledger.Site, error)       { return c.s.siteForQuery(c.r, c.sel) }
func (c queryCall) Record() ledger.Activity          { return activityRecord(c.r) }
func (c queryCall) Phases() *phase.Timer             { return c.r.phases }
func (c queryCall) Withdraw()                        { c.s.resetAnswer(c.r) }

func (c queryCall) Layers(ids []string) (map[string]ledger.LayerRelease, error) {
	return c.s.layersForQuery(c.r, ids)
}

func (c queryCall) Rate(w ledger.RateWindow) error {
	return c.s.checkRate(c.r, ledger.BucketQueryAdmissions, queryAdmissionsPerMinute, w)
}

func (c queryCall) Answer(q, done ledger.Query, ask queries.Ask, _ *queries.Pending) error {
	return c.s.answerQuery(c.r, q, done, ask)
}

// Authenticate serves a provisional request's step-by-step path with its
// key authenticated first, as every other operation is (nothing of the
// provisional pass was written).
func (c queryCall) Authenticate() error {
	c.s.resetProvisional(c.r)
	if err := c.s.authenticate(c.r); err != nil {
		return err
	}
	return c.s.authorize(c.r, c.r.op.Scopes...)
}

// NewSite is the selector's site as a new site of the account when the
// selector gives it whole (a point or a geometry) within 40 ha, with its
// geometry for the answer's precomputation: site.Geometry is its JSON
// (newSite), which decodes to g bit for bit (jobs.DecodedSite).
func (c queryCall) NewSite() (ledger.Site, jobs.DecodedSite, bool) {
	if k := c.sel.Kind; k != kindPoint && k != kindProjectedPoint && k != kindGeometry {
		return ledger.Site{}, jobs.DecodedSite{}, false
	}
	g, _, err := c.s.boundary(c.r, c.sel, "site")
	if err != nil {
		return ledger.Site{}, jobs.DecodedSite{}, false
	}
	site, err := c.s.newSite(c.r, g)
	if err != nil || site.AreaM2 > maxSiteAreaM2 {
		return ledger.Site{}, jobs.DecodedSite{}, false
	}
	return site, jobs.DecodedSite{Geometry: g, Checked: c.sel.checked()}, true
}

// AnswerFirst renders row, a finished query, as answerQuery does: its
// first page, and the next page's cursor when there are more (made for
// row's account: the request's principal is not authenticated yet).
func (c queryCall) AnswerFirst(row ledger.Query, ask queries.Ask) (more, ok bool) {
	r := c.r
	r.resourceType, r.resourceID = "query", row.ID.String()
	body := queryView(row)
	err := c.s.firstPage(r, row, &body, ask)
	if err == nil {
		c.s.applyPreference(r, ask)
		err = r.writeQuery(200, &body)
	}
	return body.Page.HasMore, err == nil
}

// RenameSite rewrites the rendered answer's site id.
func (c queryCall) RenameSite(from, to uuid.UUID) {
	resp := &c.r.http.Response
	resp.SetBody(bytes.ReplaceAll(resp.Body(), []byte(from.String()), []byte(to.String())))
}

// resetAnswer forgets a response rendered for an answer that was not
// stored.
func (s *Server) resetAnswer(r *request) {
	r.resourceType, r.resourceID = "", ""
	r.http.Response.Reset()
	r.http.Response.Header.Set("X-Request-Id", r.id)
}
