package api

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"siteenv/engine"
	"siteenv/jobs"
	"siteenv/ledger"
)

// contextHead is GET /context's body up to its capabilities; the rest is
// spliced on by encodeContext.
type contextHead struct {
	APIVersion             string     `json:"api_version"`
	Account                accountRef `json:"account"`
	PrincipalKind          string     `json:"principal_kind"`
	Scopes                 []string   `json:"scopes"`
	DatasetIDs             []string   `json:"dataset_ids"`
	CreditBalance          *int64     `json:"credit_balance"`
	IntegrationCreditLimit int64      `json:"integration_credit_limit"`
	IntegrationCreditsUsed int64      `json:"integration_credits_used"`
}

type accountRef struct {
	ID   string  `json:"id"`
	Name *string `json:"name"`
}

type capability struct {
	OperationID    string   `json:"operation_id"`
	RequiredScopes []string `json:"required_scopes"`
	Available      bool     `json:"available"`
	ReasonCode     *string  `json:"reason_code"`
}

type locationInputs struct {
	Search              []string `json:"search"`
	SiteSelectors       []string `json:"site_selectors"`
	ResolveSelectors    []string `json:"resolve_selectors"`
	SupportedEPSGCodes  []int    `json:"supported_epsg_codes"`
	GeometryCRS         string   `json:"geometry_crs"`
	GeographicAxisOrder []string `json:"geographic_axis_order"`
	ProjectedAxisOrder  []string `json:"projected_axis_order"`
	NewSiteScope        string   `json:"new_site_scope"`
}

type contextUsage struct {
	RetainedResultBytes int64      `json:"retained_result_bytes"`
	QueuedQueries       int64      `json:"queued_queries"`
	RunningQueries      int64      `json:"running_queries"`
	NextResultExpiry    *time.Time `json:"next_result_expiry"`
}

// locationInputsJSON is the location inputs this server takes, encoded
// once: they never change while it runs.
var locationInputsJSON = sync.OnceValue(func() json.RawMessage {
	js, err := json.Marshal(locationInputs{
		Search:              []string{"address", "parcel"},
		SiteSelectors:       []string{"saved_site", "external_reference", "point", "projected_point", "cadastre", "geometry"},
		ResolveSelectors:    []string{"address", "saved_site", "external_reference", "point", "projected_point", "cadastre", "geometry"},
		SupportedEPSGCodes:  supportedEPSG(),
		GeometryCRS:         "OGC:CRS84",
		GeographicAxisOrder: []string{"longitude", "latitude"},
		ProjectedAxisOrder:  []string{"easting", "northing"},
		NewSiteScope:        ledger.ScopeSitesWrite,
	})
	if err != nil {
		panic(err) // fixed strings and integers always encode
	}
	return js
})

// supportedEPSG: geographic 4326 and 7844, and the GDA2020 MGA zones 47..58.
func supportedEPSG() []int {
	codes := []int{4326, 7844}
	for z := 7847; z <= 7858; z++ {
		codes = append(codes, z)
	}
	return codes
}

func (s *Server) getContext(r *request) error {
	if err := r.query().err(); err != nil {
		return err
	}
	p := r.principal
	var cv ledger.ContextView
	if pf, ok := r.prefetch.(*ledger.ContextPrefetch); ok && pf.Err == nil {
		cv = pf.View
	} else {
		var err error
		if cv, err = s.led.ContextReads(r.ctx, p.AccountID, p.IntegrationID); err != nil {
			return err
		}
	}
	acct, integ, qu, reportPrice := cv.Account, cv.Integration, cv.Usage, cv.ReportPrice
	report := reportDisabled
	// Only a key that may order reports needs the answer (scope_insufficient
	// comes first).
	if reportPrice != nil && p.HasScope(ledger.ScopeReportsCreate) {
		ok, err := s.reportPossible(r)
		if err != nil {
			return err
		}
		report = reportUnavailable
		if ok {
			report = reportAvailable
		}
	}
	ops, err := s.operationsJSON(p, report)
	if err != nil {
		return err
	}
	head := contextHead{
		APIVersion:             "1",
		Account:                accountRef{ID: acct.ID.String(), Name: acct.Name},
		PrincipalKind:          p.Kind,
		Scopes:                 orderedScopes(p.Scopes),
		DatasetIDs:             p.DatasetIDs(),
		IntegrationCreditLimit: integ.SpendLimit,
		IntegrationCreditsUsed: integ.CreditsUsed,
	}
	if p.HasScope(ledger.ScopeUsageRead) {
		head.CreditBalance = &acct.CreditBalance
	}
	usage := contextUsage{RetainedResultBytes: qu.RetainedBytes, QueuedQueries: qu.Queued, RunningQueries: qu.Running,
		NextResultExpiry: utc(qu.NextResultExpiry)}
	return s.writeContext(r, head, ops, max(0, integ.SpendLimit-integ.CreditsUsed), usage, reportPrice)
}

// writeContext writes GET /context's body (encodeContext).
func (s *Server) writeContext(r *request, head contextHead, ops json.RawMessage, remaining int64, usage contextUsage, reportPrice *int64) error {
	return r.writeEncoded(200, func() ([]byte, error) {
		return encodeContext(head, ops, locationInputsJSON(), remaining, usage, s.limitsJSON, reportPrice)
	})
}

// encodeContext is GET /context's body: head, then the capabilities (the
// encoded operation list ops, the encoded location inputs li, the
// integration's remaining credits), usage, the encoded limits and the
// report price. The parts encoded once are appended as they are:
// encoding/json compacts a RawMessage or a Marshaler's output byte by byte
// on every call, which cost as much as the rest of the encoding.
func encodeContext(head contextHead, ops, li json.RawMessage, remaining int64, usage contextUsage, limits json.RawMessage, reportPrice *int64) ([]byte, error) {
	h, err := marshalNoEscape(head)
	if err != nil {
		return nil, err
	}
	u, err := marshalNoEscape(usage)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(h)+len(ops)+len(li)+len(u)+len(limits)+160)
	b = append(b, h[:len(h)-1]...) // without its closing brace
	b = append(b, `,"capabilities":{"operations":`...)
	b = append(b, ops...)
	b = append(b, `,"location_inputs":`...)
	b = append(b, li...)
	b = append(b, `,"integration_credits_remaining":`...)
	b = strconv.AppendInt(b, remaining, 10)
	b = append(b, `},"usage":`...)
	b = append(b, u...)
	b = append(b, `,"limits":`...)
	b = append(b, limits...)
	b = append(b, `,"report_price_credits":`...)
	if reportPrice == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *reportPrice, 10)
	}
	return append(b, '}'), nil
}

// limits are Limits with the values another package enforces read from
// where they are enforced: the engine's result limits and radius, and the
// job runner's configuration (this server's runner, else the defaults a
// runner of another replica takes), so /context cannot drift from them.
func (s *Server) limits() map[string]int64 {
	out := contextLimits()
	out["reads_per_minute"] = int64(s.cfg.ReadsPerMinute)
	out["max_radius_m"] = engine.MaxRadiusM
	out["max_query_features"] = engine.DefaultMaxFeatures
	out["max_query_result_bytes"] = engine.DefaultMaxBytes
	cfg := jobs.Config{}.WithDefaults()
	if r, ok := s.runner.(interface{ Config() jobs.Config }); ok {
		cfg = r.Config()
	}
	out["max_running_queries"] = int64(cfg.MaxRunning)
	out["query_queue_timeout_seconds"] = int64(cfg.QueueLimit / time.Second)
	out["query_attempt_timeout_seconds"] = int64(cfg.Attempt / time.Second)
	out["result_retention_seconds"] = int64(cfg.Retain / time.Second)
	return out
}

// encodeLimits keeps limits() encoded for GET /context (limitsJSON): the
// values change only with the runner (New, or a test's SetQueryBackend), and
// encoding the map sorted its keys by reflection on every request, half of
// the handler's JSON time.
func (s *Server) encodeLimits() {
	js, err := json.Marshal(s.limits())
	if err != nil {
		panic(err) // a map of strings to integers always encodes
	}
	s.limitsJSON = js
}

// reportState is whether create_report can be used on this server by a key.
type reportState int

const (
	reportDisabled    reportState = iota // no report price configured: feature_disabled
	reportUnavailable                    // no layer the key may use can be in a report: report_unavailable
	reportAvailable
)

// reportPossible reports whether some report could be built for the
// request's key: a layer it may use has a current release approved for
// reports, in any jurisdiction. Whether one covers a given site is for
// POST /reports to say (the contract: availability promises no site's
// eligibility).
func (s *Server) reportPossible(r *request) (bool, error) {
	ds := r.principal.DatasetIDs()
	if ds != nil && len(ds) == 0 {
		return false, nil
	}
	ids, err := s.reportLayersCached(r)
	if err != nil {
		return false, err
	}
	if ds == nil {
		return len(ids) > 0, nil
	}
	for _, id := range ids {
		if slices.Contains(ds, id) {
			return true, nil
		}
	}
	return false, nil
}

// operationsJSON is capabilities(p, report) encoded. The list depends on
// nothing but the scopes p holds (of ledger.Scopes, which every
// operation's scopes are among) and report, so each such pair's encoding
// is kept: at most 2^9 x 3 small entries.
func (s *Server) operationsJSON(p ledger.Principal, report reportState) (json.RawMessage, error) {
	key := uint32(report)
	for i, sc := range ledger.Scopes {
		if p.HasScope(sc) {
			key |= 1 << (i + 2)
		}
	}
	if js, ok := s.opsEnc.Load(key); ok {
		return js.(json.RawMessage), nil
	}
	js, err := json.Marshal(s.capabilities(p, report))
	if err != nil {
		return nil, err
	}
	s.opsEnc.Store(key, json.RawMessage(js))
	return js, nil
}

// capabilities lists every contract operation with whether this key may use it
// on this server: scopes held, the operation implemented and, for
// create_report, a report price configured and a layer the key may use
// approved for reports (report).
func (s *Server) capabilities(p ledger.Principal, report reportState) []capability {
	var out []capability
	for _, rt := range s.router.routes {
		if rt.op.ID == "get_openapi" || rt.op.ID == "get_docs" { // served by us, not contract operations
			continue
		}
		c := capability{OperationID: rt.op.ID, RequiredScopes: append([]string{}, rt.op.Scopes...), Available: true}
		for _, sc := range rt.op.Scopes {
			if !p.HasScope(sc) {
				c.Available, c.ReasonCode = false, ptr("scope_insufficient")
				break
			}
		}
		switch {
		case !c.Available:
		case rt.handler == nil || (rt.op.ID == "create_report" && report == reportDisabled):
			c.Available, c.ReasonCode = false, ptr("feature_disabled")
		case rt.op.ID == "create_report" && report == reportUnavailable:
			c.Available, c.ReasonCode = false, ptr("report_unavailable")
		}
		out = append(out, c)
	}
	return out
}

// orderedScopes lists held scopes in the contract's order.
func orderedScopes(held []string) []string {
	out := []string{}
	for _, s := range ledger.Scopes {
		if slices.Contains(held, s) {
			out = append(out, s)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }
