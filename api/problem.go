package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"siteenv/ledger"
	"siteenv/queries"
)

// Problem is an API error: the contract's Problem body plus the headers it
// needs. It implements error so handlers can return it.
type Problem struct {
	Code        Code
	Detail      string
	FieldErrors []FieldError
	// RetryAfter in seconds; sent when the code is retryable.
	RetryAfter int
	// Retryable marks this answer retryable where its code usually is not:
	// idempotency_conflict for a duplicate whose first request is still in
	// flight (status-codes.md), unlike a reused key with a changed request.
	Retryable bool
	// Allow is sent with method_not_allowed.
	Allow string
	// ContentRange is sent with range_not_satisfiable.
	ContentRange string
}

// FieldError names one bad input field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p *Problem) Error() string { return string(p.Code) + ": " + p.Detail }

// Code is a contract error code (api-v1.md, "Errors").
type Code string

// The contract's complete code enumeration.
const (
	CodeInvalidRequest             Code = "invalid_request"
	CodeInvalidJSON                Code = "invalid_json"
	CodeInvalidCursor              Code = "invalid_cursor"
	CodeUnauthenticated            Code = "unauthenticated"
	CodeCredentialRevoked          Code = "credential_revoked"
	CodeReauthorizationRequired    Code = "reauthorization_required"
	CodeInsufficientCredits        Code = "insufficient_credits"
	CodeScopeInsufficient          Code = "scope_insufficient"
	CodeAccessRequired             Code = "access_required"
	CodeSourceRightsRestricted     Code = "source_rights_restricted"
	CodeFeatureDisabled            Code = "feature_disabled"
	CodeNotFound                   Code = "not_found"
	CodeMethodNotAllowed           Code = "method_not_allowed"
	CodeCreditCeilingExceeded      Code = "credit_ceiling_exceeded"
	CodeReportUnavailable          Code = "report_unavailable"
	CodeIdempotencyConflict        Code = "idempotency_conflict"
	CodeSiteReferenceConflict      Code = "site_reference_conflict"
	CodePaidSiteImmutable          Code = "paid_site_immutable"
	CodeResultNotReady             Code = "result_not_ready"
	CodeContentUnavailable         Code = "content_unavailable"
	CodeResultExpired              Code = "result_expired"
	CodeResultReleased             Code = "result_released"
	CodeDeliveryExpired            Code = "delivery_expired"
	CodePayloadTooLarge            Code = "payload_too_large"
	CodeUnsupportedMediaType       Code = "unsupported_media_type"
	CodeRangeNotSatisfiable        Code = "range_not_satisfiable"
	CodeInvalidGeometry            Code = "invalid_geometry"
	CodeSiteIneligible             Code = "site_ineligible"
	CodeCadastreIncomplete         Code = "cadastre_incomplete"
	CodeReportJurisdictionRequired Code = "report_jurisdiction_required"
	CodeReportJurisdictionConflict Code = "report_jurisdiction_conflict"
	CodeUnsupportedCRS             Code = "unsupported_crs"
	CodeFeatureTooLarge            Code = "feature_too_large"
	CodeResultLimitExceeded        Code = "result_limit_exceeded"
	CodeOutputTooLarge             Code = "output_too_large"
	CodeRateLimited                Code = "rate_limited"
	CodeCapacityExceeded           Code = "capacity_exceeded"
	CodeInternalError              Code = "internal_error"
	CodeSourceUnavailable          Code = "source_unavailable"
	CodeServiceUnavailable         Code = "service_unavailable"
)

// problemKind is the fixed status, title and retryability of a code
// (../shared/contract/status-codes.md).
type problemKind struct {
	status    int
	retryable bool
	title     string
}

var problemKinds = map[Code]problemKind{
	CodeInvalidRequest:             {400, false, "Invalid request"},
	CodeInvalidJSON:                {400, false, "Malformed JSON body"},
	CodeInvalidCursor:              {400, false, "Invalid or expired cursor"},
	CodeUnauthenticated:            {401, false, "Authentication required"},
	CodeCredentialRevoked:          {401, false, "Credential revoked"},
	CodeReauthorizationRequired:    {401, false, "Reauthorization required"},
	CodeInsufficientCredits:        {402, false, "Insufficient credits"},
	CodeScopeInsufficient:          {403, false, "Missing key permission"},
	CodeAccessRequired:             {403, false, "Site access must be purchased"},
	CodeSourceRightsRestricted:     {403, false, "Source rights restricted"},
	CodeFeatureDisabled:            {403, false, "Feature disabled"},
	CodeNotFound:                   {404, false, "Not found"},
	CodeMethodNotAllowed:           {405, false, "Method not allowed"},
	CodeCreditCeilingExceeded:      {409, false, "Spending limit would be exceeded"},
	CodeReportUnavailable:          {409, false, "Report unavailable"},
	CodeIdempotencyConflict:        {409, false, "Idempotency key conflict"},
	CodeSiteReferenceConflict:      {409, false, "Site reference conflict"},
	CodePaidSiteImmutable:          {409, false, "Paid site is immutable"},
	CodeResultNotReady:             {409, true, "Result not ready"},
	CodeContentUnavailable:         {409, false, "Content unavailable"},
	CodeResultExpired:              {410, false, "Result expired"},
	CodeResultReleased:             {410, false, "Result released"},
	CodeDeliveryExpired:            {410, false, "Delivery link expired"},
	CodePayloadTooLarge:            {413, false, "Payload too large"},
	CodeUnsupportedMediaType:       {415, false, "Unsupported media type"},
	CodeRangeNotSatisfiable:        {416, false, "Range not satisfiable"},
	CodeInvalidGeometry:            {422, false, "Invalid geometry"},
	CodeSiteIneligible:             {422, false, "Site ineligible"},
	CodeCadastreIncomplete:         {422, false, "Cadastre incomplete"},
	CodeReportJurisdictionRequired: {422, false, "Report jurisdiction required"},
	CodeReportJurisdictionConflict: {422, false, "Report jurisdiction conflict"},
	CodeUnsupportedCRS:             {422, false, "Unsupported CRS"},
	CodeFeatureTooLarge:            {422, false, "Feature too large"},
	CodeResultLimitExceeded:        {422, false, "Result limit exceeded"},
	CodeOutputTooLarge:             {422, false, "Output too large"},
	CodeRateLimited:                {429, true, "Rate limited"},
	CodeCapacityExceeded:           {429, true, "Capacity exceeded"},
	CodeInternalError:              {500, true, "Internal error"},
	CodeSourceUnavailable:          {503, true, "Source unavailable"},
	CodeServiceUnavailable:         {503, true, "Service unavailable"},
}

// Contract bounds of a Problem body.
const (
	maxFieldErrors   = 20
	maxFieldLen      = 256
	maxMessageLen    = 512
	maxDetailLen     = 2048
	problemMediaType = "application/problem+json"
)

func newProblem(code Code, format string, args ...any) *Problem {
	return &Problem{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// invalid is a 400 invalid_request naming fields.
func invalid(detail string, fe ...FieldError) *Problem {
	return &Problem{Code: CodeInvalidRequest, Detail: detail, FieldErrors: fe}
}

// problemBody is the wire form: exactly the contract's eight fields.
type problemBody struct {
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Status      int          `json:"status"`
	Code        Code         `json:"code"`
	Detail      string       `json:"detail"`
	Retryable   bool         `json:"retryable"`
	RequestID   string       `json:"request_id"`
	FieldErrors []FieldError `json:"field_errors"`
}

func (p *Problem) status() int {
	return problemKinds[p.Code].status
}

func (p *Problem) retryable() bool {
	return problemKinds[p.Code].retryable || p.Retryable
}

func (p *Problem) body(requestID string) problemBody {
	k, ok := problemKinds[p.Code]
	if !ok {
		k = problemKinds[CodeInternalError]
		p.Code = CodeInternalError
	}
	fe := make([]FieldError, 0, min(len(p.FieldErrors), maxFieldErrors))
	for i, f := range p.FieldErrors {
		if i == maxFieldErrors {
			break
		}
		fe = append(fe, FieldError{Field: truncate(f.Field, maxFieldLen), Message: truncate(f.Message, maxMessageLen)})
	}
	return problemBody{
		Type:        "urn:siteenv:problem:" + string(p.Code),
		Title:       k.title,
		Status:      k.status,
		Code:        p.Code,
		Detail:      truncate(p.Detail, maxDetailLen),
		Retryable:   p.retryable(),
		RequestID:   requestID,
		FieldErrors: fe,
	}
}

func (p *Problem) retryAfter() string {
	if !p.retryable() {
		return ""
	}
	return strconv.Itoa(max(p.RetryAfter, 1))
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// errPlace says where a domain error arose when the same error means
// different things in different places (ErrNotFound from Authenticate is a
// bad key; from Acquire, a missing site). Handlers attach it with at().
type errPlace int

const (
	anywhere errPlace = iota
	atAuthentication
	atAcquisition      // POST /access/acquisitions: field is site_id, items the section keys
	atSiteReference    // an external_reference selector: field is the selector
	atSiteRegistration // POST /sites saving the site
	atQuerySite        // POST /queries registering its site
	atLayer            // a requested layer: field is layer_ids[i], name the layer id
	atReportOrder      // POST /reports: field is site_id
)

// placedError carries the request context problemFor needs to map a domain
// error: where it arose and which request field (or list) it concerns.
type placedError struct {
	err   error
	place errPlace
	field string
	name  string
	// items is the request list an error's items index into (section_keys).
	items []string
}

func (e *placedError) Error() string { return e.err.Error() }
func (e *placedError) Unwrap() error { return e.err }

// at attaches request context to a domain error; nil stays nil.
func at(err error, place errPlace, field string) error {
	if err == nil {
		return nil
	}
	return &placedError{err: err, place: place, field: field}
}

// mapping turns one domain error, where it arose, into a Problem.
type mapping struct {
	err    error    // matched with errors.Is
	place  errPlace // anywhere: wherever no more specific mapping applies
	code   Code
	detail string // %s: placedError.name
	// message of a field error naming placedError.field (field overrides it).
	message, field string
	retryAfter     int
}

// mappings are tried in order: placed ones before the general.
var mappings = []mapping{
	{err: ledger.ErrNotFound, place: atAuthentication, code: CodeUnauthenticated, detail: "The API key is not recognised."},
	{err: ledger.ErrNotFound, place: atAcquisition, code: CodeNotFound, detail: "The site does not exist or is not an active site of this account.", message: "not found"},
	{err: ledger.ErrNotFound, place: atSiteReference, code: CodeNotFound, detail: "No active site is registered under this external reference.", message: "not registered"},
	{err: ledger.ErrNotFound, place: atLayer, code: CodeNotFound, detail: "Layer %s does not exist or is not available to this key.", message: "no such layer"},
	{err: ledger.ErrSiteIneligible, place: atAcquisition, code: CodeSiteIneligible, detail: fmt.Sprintf("The site is larger than %d hectares and cannot be used for new purchases.", maxSiteAreaHa), message: "ineligible site"},
	// A report is ordered for an active site of the account within 40 ha;
	// any other site, missing or another account's alike, is ineligible.
	{err: ledger.ErrNotFound, place: atReportOrder, code: CodeNotFound, detail: "The site does not exist or is not a site of this account.", message: "not found"},
	{err: errSiteArchived, place: atReportOrder, code: CodeSiteIneligible, detail: "The site is archived; reports can be ordered only for an active site.", message: "archived"},
	{err: ledger.ErrSiteIneligible, place: atReportOrder, code: CodeSiteIneligible, detail: fmt.Sprintf("The site is larger than %d hectares and cannot be used for new reports.", maxSiteAreaHa), message: fmt.Sprintf("larger than %d hectares", maxSiteAreaHa)},
	{err: ledger.ErrCreateNotPermitted, place: atSiteRegistration, code: CodeScopeInsufficient, detail: "Registering a new site needs the sites:write scope; this key can only reuse existing sites."},
	{err: ledger.ErrCreateNotPermitted, place: atQuerySite, code: CodeScopeInsufficient, detail: "This selector names a new site; registering it needs the sites:write scope."},

	{err: ledger.ErrKeyRevoked, code: CodeCredentialRevoked, detail: "This API key has been revoked; use a current key."},
	{err: ledger.ErrInsufficientCredits, code: CodeInsufficientCredits, detail: "The account's credit balance does not cover this purchase; nothing was charged."},
	{err: ledger.ErrCreditCeiling, code: CodeCreditCeilingExceeded, detail: "This purchase would exceed the integration's total spending limit; nothing was charged."},
	{err: ledger.ErrReferenceConflict, code: CodeSiteReferenceConflict, detail: "This external reference is already bound to a different boundary; a changed boundary needs a new reference.",
		field: "external_reference", message: "bound to a different boundary"},
	{err: ledger.ErrCapacity, code: CodeCapacityExceeded, retryAfter: 30,
		detail: fmt.Sprintf("The account has %d queries queued or %s of retained results; wait for queries to finish or release results with DELETE /queries/{id}.", maxQueuedQueries, byteSize(maxRetainedResultBytes))},
	{err: ledger.ErrNotFound, code: CodeNotFound, detail: "The resource does not exist or is not accessible to this key."},
}

// problemFor is the one place errors become Problems. Anything it does not
// recognise is an internal_error whose detail never carries the cause; the
// cause (with any database message) goes to the server log only.
func problemFor(ctx context.Context, log *slog.Logger, err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	if p := useCaseProblem(err); p != nil {
		return p
	}
	var pe *placedError
	if !errors.As(err, &pe) {
		pe = &placedError{err: err}
	}
	var use *ledger.UnknownSectionsError
	if errors.As(err, &use) {
		var fe []FieldError
		for i, k := range pe.items {
			if slices.Contains(use.Keys, k) {
				fe = append(fe, FieldError{Field: fmt.Sprintf("section_keys[%d]", i), Message: "no such section"})
			}
		}
		return &Problem{Code: CodeNotFound, Detail: "Some sections do not exist or are not available to this key.", FieldErrors: fe}
	}
	for _, m := range mappings {
		if (m.place != anywhere && m.place != pe.place) || !errors.Is(err, m.err) {
			continue
		}
		p := &Problem{Code: m.code, Detail: m.detail, RetryAfter: m.retryAfter}
		if strings.Contains(m.detail, "%s") {
			p.Detail = fmt.Sprintf(m.detail, pe.name)
		}
		if field := cmp.Or(m.field, pe.field); m.message != "" && field != "" {
			p.FieldErrors = []FieldError{{Field: field, Message: m.message}}
		}
		return p
	}
	switch {
	case errors.Is(err, ledger.ErrInvalid):
		// Bad input the API's own checks let through (the database refused
		// it): a client error, never an outage. Logged so the check is added.
		log.WarnContext(ctx, "input refused by the database", "err", err)
		var ie *ledger.InputError
		field := pe.field
		if errors.As(err, &ie) && ie.Field != "" {
			field = ie.Field
		}
		p := invalid("A value in the request cannot be stored (for example it contains a NUL character); correct it and send the request again.")
		if field != "" {
			p.FieldErrors = []FieldError{{Field: field, Message: "value refused: it contains characters or a form that cannot be stored"}}
		}
		return p
	case errors.Is(err, ledger.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		// Expected during outages and failovers; clients retry.
		log.WarnContext(ctx, "service unavailable", "err", err)
		return &Problem{Code: CodeServiceUnavailable, Detail: "The service is temporarily unavailable; retry with backoff.", RetryAfter: 2}
	case errors.Is(err, ledger.ErrConflict):
		// An integrity violation no handler expected: a race between
		// concurrent writes or a bug. The contract has no general conflict
		// code and a retry normally resolves a race: internal_error.
		log.ErrorContext(ctx, "unexpected conflict", "err", err)
		return &Problem{Code: CodeInternalError, Detail: "The request collided with a concurrent change; retry with backoff. Quote the request_id when reporting it.", RetryAfter: 1}
	}
	log.ErrorContext(ctx, "internal error", "err", err)
	return &Problem{Code: CodeInternalError, Detail: "An internal error occurred; retry with backoff. Quote the request_id when reporting it.", RetryAfter: 1}
}

// useCaseProblem maps the queries package's errors (nil: not one of them).
func useCaseProblem(err error) *Problem {
	var le *queries.LayerError
	var se *queries.SectionError
	var re *queries.RadiusError
	switch {
	case errors.Is(err, queries.ErrConflict):
		return newProblem(CodeIdempotencyConflict, "This Idempotency-Key was already used for a different request; use a new key for a new request.")
	case errors.Is(err, queries.ErrInProgress):
		// Retryable, unlike a changed request (status-codes.md).
		return &Problem{Code: CodeIdempotencyConflict, Retryable: true, RetryAfter: 1,
			Detail: "A request with this Idempotency-Key is still in progress; retry after Retry-After seconds."}
	case errors.Is(err, queries.ErrChangedWhileAnswered):
		return &Problem{Code: CodeInternalError, Detail: "The query changed while it was answered; retry with the same Idempotency-Key.", RetryAfter: 1}
	case errors.As(err, &le):
		return &Problem{Code: CodeNotFound, Detail: fmt.Sprintf("Layer %s does not exist or is not available to this key.", le.ID),
			FieldErrors: []FieldError{{Field: fmt.Sprintf("layer_ids[%d]", le.Index), Message: "no such layer"}}}
	case errors.As(err, &se):
		return &Problem{Code: CodeAccessRequired, Detail: fmt.Sprintf("Section %s must be acquired for this site before querying %s (POST /access/acquisitions).", se.Section, se.Layer),
			FieldErrors: []FieldError{{Field: fmt.Sprintf("layer_ids[%d]", se.Index), Message: "section " + se.Section + " not acquired for this site"}}}
	case errors.As(err, &re):
		var fe []FieldError
		for _, o := range re.Over {
			fe = append(fe, FieldError{Field: "radius_m", Message: fmt.Sprintf("layer %s allows at most %g m", o.Layer, o.MaxM)})
		}
		return invalid("The radius exceeds a selected layer's limit.", fe...)
	}
	return nil
}
