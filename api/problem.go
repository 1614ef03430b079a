package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"unicode/utf8"

	"siteenv/ledger"
)

// Problem is an API error: the contract's Problem body plus the headers it
// needs. It implements error so handlers can return it.
type Problem struct {
	Code        string
	Detail      string
	FieldErrors []FieldError
	// RetryAfter in seconds; sent when the code is retryable.
	RetryAfter int
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

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// problemKind is the fixed status, title and retryability of a code
// (../shared/contract/status-codes.md).
type problemKind struct {
	status    int
	retryable bool
	title     string
}

var problemKinds = map[string]problemKind{
	"invalid_request":              {400, false, "Invalid request"},
	"invalid_json":                 {400, false, "Malformed JSON body"},
	"invalid_cursor":               {400, false, "Invalid or expired cursor"},
	"unauthenticated":              {401, false, "Authentication required"},
	"credential_revoked":           {401, false, "Credential revoked"},
	"reauthorization_required":     {401, false, "Reauthorization required"},
	"insufficient_credits":         {402, false, "Insufficient credits"},
	"scope_insufficient":           {403, false, "Missing key permission"},
	"access_required":              {403, false, "Site access must be purchased"},
	"source_rights_restricted":     {403, false, "Source rights restricted"},
	"feature_disabled":             {403, false, "Feature disabled"},
	"not_found":                    {404, false, "Not found"},
	"method_not_allowed":           {405, false, "Method not allowed"},
	"credit_ceiling_exceeded":      {409, false, "Spending limit would be exceeded"},
	"report_unavailable":           {409, false, "Report unavailable"},
	"idempotency_conflict":         {409, false, "Idempotency key conflict"},
	"site_reference_conflict":      {409, false, "Site reference conflict"},
	"paid_site_immutable":          {409, false, "Paid site is immutable"},
	"result_not_ready":             {409, true, "Result not ready"},
	"content_unavailable":          {409, false, "Content unavailable"},
	"result_expired":               {410, false, "Result expired"},
	"result_released":              {410, false, "Result released"},
	"delivery_expired":             {410, false, "Delivery link expired"},
	"payload_too_large":            {413, false, "Payload too large"},
	"unsupported_media_type":       {415, false, "Unsupported media type"},
	"range_not_satisfiable":        {416, false, "Range not satisfiable"},
	"invalid_geometry":             {422, false, "Invalid geometry"},
	"site_ineligible":              {422, false, "Site ineligible"},
	"cadastre_incomplete":          {422, false, "Cadastre incomplete"},
	"report_jurisdiction_required": {422, false, "Report jurisdiction required"},
	"report_jurisdiction_conflict": {422, false, "Report jurisdiction conflict"},
	"unsupported_crs":              {422, false, "Unsupported CRS"},
	"feature_too_large":            {422, false, "Feature too large"},
	"result_limit_exceeded":        {422, false, "Result limit exceeded"},
	"output_too_large":             {422, false, "Output too large"},
	"rate_limited":                 {429, true, "Rate limited"},
	"capacity_exceeded":            {429, true, "Capacity exceeded"},
	"internal_error":               {500, true, "Internal error"},
	"source_unavailable":           {503, true, "Source unavailable"},
	"service_unavailable":          {503, true, "Service unavailable"},
}

// Contract bounds of a Problem body.
const (
	maxFieldErrors   = 20
	maxFieldLen      = 256
	maxMessageLen    = 512
	maxDetailLen     = 2048
	problemMediaType = "application/problem+json"
)

func newProblem(code, format string, args ...any) *Problem {
	return &Problem{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// invalid is a 400 invalid_request naming fields.
func invalid(detail string, fe ...FieldError) *Problem {
	return &Problem{Code: "invalid_request", Detail: detail, FieldErrors: fe}
}

// problemBody is the wire form: exactly the contract's eight fields.
type problemBody struct {
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Status      int          `json:"status"`
	Code        string       `json:"code"`
	Detail      string       `json:"detail"`
	Retryable   bool         `json:"retryable"`
	RequestID   string       `json:"request_id"`
	FieldErrors []FieldError `json:"field_errors"`
}

func (p *Problem) status() int {
	return problemKinds[p.Code].status
}

func (p *Problem) body(requestID string) problemBody {
	k, ok := problemKinds[p.Code]
	if !ok {
		k = problemKinds["internal_error"]
		p.Code = "internal_error"
	}
	fe := make([]FieldError, 0, min(len(p.FieldErrors), maxFieldErrors))
	for i, f := range p.FieldErrors {
		if i == maxFieldErrors {
			break
		}
		fe = append(fe, FieldError{Field: truncate(f.Field, maxFieldLen), Message: truncate(f.Message, maxMessageLen)})
	}
	return problemBody{
		Type:        "urn:siteenv:problem:" + p.Code,
		Title:       k.title,
		Status:      k.status,
		Code:        p.Code,
		Detail:      truncate(p.Detail, maxDetailLen),
		Retryable:   k.retryable,
		RequestID:   requestID,
		FieldErrors: fe,
	}
}

func (p *Problem) retryAfter() string {
	if !problemKinds[p.Code].retryable {
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

// problemFor is the one place domain errors become Problems. Anything it does
// not recognise is an internal_error whose detail never carries the cause.
func problemFor(ctx context.Context, log *slog.Logger, err error) *Problem {
	var p *Problem
	switch {
	case errors.As(err, &p):
		return p
	case errors.Is(err, ledger.ErrNotFound):
		return newProblem("not_found", "The resource does not exist or is not accessible to this key.")
	case errors.Is(err, ledger.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		log.ErrorContext(ctx, "service unavailable", "err", err)
		return &Problem{Code: "service_unavailable", Detail: "The service is temporarily unavailable; retry with backoff.", RetryAfter: 2}
	}
	log.ErrorContext(ctx, "internal error", "err", err)
	return &Problem{Code: "internal_error", Detail: "An internal error occurred; retry with backoff. Quote the request_id when reporting it.", RetryAfter: 1}
}
