// Package openapitest validates HTTP responses against the API's OpenAPI
// document (openapi.Document) in tests. It imports kin-openapi, so only test
// code should import it; the service binary must not.
//
// Typical use:
//
//	v := openapitest.New(t)
//	req := httptest.NewRequest(http.MethodGet, "/api/v1/sites", nil)
//	... serve req, obtain status, header and body ...
//	v.Check(t, req, status, header, body)
//
// The request URL must carry the /api/v1 prefix (the document's server URL);
// scheme and host are ignored.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"siteenv/api/openapi"
)

// ProblemMediaType is the media type of every error body.
const ProblemMediaType = "application/problem+json"

// problemKeys are the exact top-level keys of a Problem body.
var problemKeys = []string{"code", "detail", "field_errors", "request_id", "retryable", "status", "title", "type"}

// uuidRE matches a UUID in its canonical textual form.
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// maxBodyInMessage bounds how much of a body a failure message quotes, and
// maxProblemMessage how long one reported mismatch may be.
const (
	maxBodyInMessage  = 2048
	maxProblemMessage = 4096
)

// unknownPathStatuses are the statuses accepted for a request whose path is
// not in the document (404 is the expected one; the others can precede
// routing), and methodNotAllowedStatuses likewise for a documented path with
// an undocumented method (405 expected).
var (
	unknownPathStatuses      = []int{http.StatusNotFound, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable}
	methodNotAllowedStatuses = []int{http.StatusMethodNotAllowed, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable}
)

// Validator checks responses against the OpenAPI document. It is safe for
// concurrent use by parallel tests.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	// errorResponses are the shared components/responses keyed by status,
	// used for requests that match no documented operation.
	errorResponses map[int]*openapi3.ResponseRef
	// methodsByPath maps a path template to its documented methods.
	methodsByPath map[string][]string
	// bodies validates JSON bodies with each schema compiled once.
	bodies *bodySchemas
}

var (
	loadOnce sync.Once
	loaded   *Validator
	loadErr  error
)

// New returns the process-wide Validator, loading and validating the
// document on first use. It fails the test (t.Fatalf) if the document does
// not load or is not a valid OpenAPI 3.1 document.
func New(t testing.TB) *Validator {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = load() })
	if loadErr != nil {
		t.Fatalf("openapitest: %v", loadErr)
	}
	return loaded
}

func load() (*Validator, error) {
	ctx := context.Background()
	// kin-openapi decodes no text/html (GET /docs): read it as text, so the
	// body is still checked against its string schema.
	if openapi3filter.RegisteredBodyDecoder("text/html") == nil {
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Document)
	if err != nil {
		return nil, fmt.Errorf("load openapi.json: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("openapi.json is invalid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("build router: %w", err)
	}
	bodies, err := newBodySchemas()
	if err != nil {
		return nil, fmt.Errorf("openapi.json as JSON Schema: %w", err)
	}
	v := &Validator{doc: doc, router: router, errorResponses: map[int]*openapi3.ResponseRef{}, methodsByPath: map[string][]string{},
		bodies: bodies}
	if doc.Components != nil {
		for name, ref := range doc.Components.Responses {
			status, err := problemStatus(ref)
			if err != nil {
				return nil, fmt.Errorf("components/responses/%s: %w", name, err)
			}
			if status != 0 {
				v.errorResponses[status] = ref
			}
		}
	}
	for _, status := range slices.Concat(unknownPathStatuses, methodNotAllowedStatuses) {
		if v.errorResponses[status] == nil {
			return nil, fmt.Errorf("components/responses has no Problem response for status %d", status)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			v.methodsByPath[path] = append(v.methodsByPath[path], strings.ToUpper(method))
		}
		sort.Strings(v.methodsByPath[path])
	}
	return v, nil
}

// problemStatus returns the HTTP status a shared Problem response is pinned
// to (the const of its schema's status property), or 0 if ref is not one.
func problemStatus(ref *openapi3.ResponseRef) (int, error) {
	if ref == nil || ref.Value == nil {
		return 0, errors.New("unresolved response")
	}
	mt := ref.Value.Content.Get(ProblemMediaType)
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return 0, nil
	}
	var find func(s *openapi3.Schema) int
	find = func(s *openapi3.Schema) int {
		if p := s.Properties["status"]; p != nil && p.Value != nil {
			if f, ok := p.Value.Const.(float64); ok {
				return int(f)
			}
		}
		for _, sub := range s.AllOf {
			if sub.Value != nil {
				if n := find(sub.Value); n != 0 {
					return n
				}
			}
		}
		return 0
	}
	status := find(mt.Schema.Value)
	if status == 0 {
		return 0, errors.New("problem response schema does not pin status with const")
	}
	return status, nil
}

// Check validates one response to req and reports every mismatch with
// t.Errorf (the test continues). It checks:
//
//   - the operation matched by req's method and path (under /api/v1)
//     documents status, and header and body match that response
//     (openapi3filter.ValidateResponse with IncludeResponseStatus; a JSON
//     body against its schema compiled once, body.go);
//   - X-Request-Id is present exactly once and is a UUID;
//   - for status >= 400: Content-Type is application/problem+json, the body is
//     an object with exactly the eight Problem keys, its status equals the
//     HTTP status, its request_id equals X-Request-Id, and Retry-After (an
//     integer >= 0) is present when retryable is true.
//
// A request to a path that is not in the document (e.g. /api/v1/nope) is
// checked against the shared error responses of components/responses
// instead: 404 is expected (401, 429, 500 and 503 are also accepted, as they
// can precede routing). A documented path with an undocumented method
// expects 405 (or 401, 429, 500, 503) and an Allow header that lists every
// documented method of the path.
func (v *Validator) Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := v.Validate(req, status, header, body); err != nil {
		t.Errorf("%s", err)
	}
}

// CheckResponse reads resp.Body, validates the response with Check, and
// returns the body; resp.Body is replaced by a reader over the same bytes so
// the caller can read it again. resp.Request must be set (it is for responses
// from an http.Client).
func (v *Validator) CheckResponse(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		t.Errorf("openapitest: read response body: %v", err)
		return body
	}
	if resp.Request == nil {
		t.Errorf("openapitest: response has no Request")
		return body
	}
	v.Check(t, resp.Request, resp.StatusCode, resp.Header, body)
	return body
}

// Validate is Check without a testing.TB: it returns nil when the response
// conforms, otherwise one error describing every problem found, prefixed with
// method, path and status and followed by the body (at most 2 KiB).
func (v *Validator) Validate(req *http.Request, status int, header http.Header, body []byte) error {
	if header == nil {
		header = http.Header{}
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	requestID, ok := checkRequestID(header, add)
	if status >= 400 && req.Method != http.MethodHead {
		checkProblem(status, header, body, requestID, ok, add)
	}

	// HEAD is GET without a body (RFC 9110 9.3.2): the GET operation's
	// status and headers, and no body at all.
	head := req.Method == http.MethodHead
	if head {
		if len(body) > 0 {
			add("HEAD answered with a %d-byte body", len(body))
		}
		req = req.Clone(req.Context())
		req.Method = http.MethodGet
	}
	route, _, err := v.router.FindRoute(req)
	switch {
	case err == nil:
		v.validateRoute(req, route, status, header, body, head, add)
	case errors.Is(err, routers.ErrPathNotFound):
		if !slices.Contains(unknownPathStatuses, status) {
			add("path is not in the document: want status 404 (or one of %v), got %d", unknownPathStatuses, status)
		} else {
			v.validateRoute(req, v.syntheticRoute(unknownPathStatuses), status, header, body, head, add)
		}
	case errors.Is(err, routers.ErrMethodNotAllowed):
		if !slices.Contains(methodNotAllowedStatuses, status) {
			add("method is not documented for this path: want status 405 (or one of %v), got %d", methodNotAllowedStatuses, status)
		} else {
			v.validateRoute(req, v.syntheticRoute(methodNotAllowedStatuses), status, header, body, head, add)
			if status == http.StatusMethodNotAllowed {
				v.checkAllow(req, header, add)
			}
		}
	default:
		add("find route: %v", err)
	}

	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("openapi: %s %s -> %d does not conform:\n  - %s\n  body: %s",
		req.Method, req.URL.RequestURI(), status, strings.Join(problems, "\n  - "), quoteBody(header, body))
}

// quoteBody renders body for a failure message: text up to 2 KiB, binary
// content as its size and media type.
func quoteBody(header http.Header, body []byte) string {
	if len(body) == 0 {
		return "(empty)"
	}
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	textual := mt == "" || strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")
	if !textual || !utf8.Valid(body) {
		return fmt.Sprintf("(%d bytes of %s)", len(body), header.Get("Content-Type"))
	}
	if len(body) > maxBodyInMessage {
		cut := maxBodyInMessage
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		return fmt.Sprintf("%s... (%d bytes in all)", body[:cut], len(body))
	}
	return string(body)
}

func (v *Validator) validateRoute(req *http.Request, route *routers.Route, status int, header http.Header, body []byte, head bool, add func(string, ...any)) {
	name := route.Path
	if route.Operation != nil && route.Operation.OperationID != "" {
		name = route.Operation.OperationID
	}
	// A JSON body is validated here (v.bodies), every other one by
	// kin-openapi with the status and headers.
	ownBody := !head && jsonBody(header.Get("Content-Type"))
	if ownBody {
		responses := route.Operation.Responses
		r := responses.Status(status)
		if r == nil {
			r = responses.Default()
		}
		if r != nil && r.Value != nil {
			v.bodies.validateBody(r.Value, header.Get("Content-Type"), body, func(msg string) { add("%s: %s", name, msg) })
		}
	}
	opts := &openapi3filter.Options{
		ExcludeResponseBody:   head || ownBody,
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{
			openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(uuidRE.String())),
		},
	}
	opts.WithCustomSchemaErrorFunc(schemaErrorMessage)
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: route, Options: opts},
		Status:                 status,
		Header:                 header,
		Options:                opts,
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), input); err != nil {
		msg := err.Error()
		if len(msg) > maxProblemMessage {
			cut := maxProblemMessage
			for cut > 0 && !utf8.RuneStart(msg[cut]) {
				cut--
			}
			msg = msg[:cut] + "... (truncated)"
		}
		add("%s: %s", name, msg)
	}
}

// schemaErrorMessage keeps schema errors to their reasons and locations: the
// default message repeats the failing value, which may be the whole body.
func schemaErrorMessage(err *openapi3.SchemaError) string {
	if err.Origin != nil {
		if inner := errors.Unwrap(err.Origin); inner != nil {
			return inner.Error()
		}
		return err.Origin.Error()
	}
	// Reasons from the JSON Schema 2020-12 validator read
	// `error at "<path>": at '<pointer>': <message>`; kin-openapi's <path>
	// repeats segments when schemas nest, the validator's own pointer does not.
	if rest, ok := strings.CutPrefix(err.Reason, `error at "`); ok {
		if _, after, found := strings.Cut(rest, `": `); found {
			return after
		}
	}
	if ptr := err.JSONPointer(); len(ptr) > 0 {
		return fmt.Sprintf("at '/%s': %s", strings.Join(ptr, "/"), err.Reason)
	}
	return err.Reason
}

// syntheticRoute is a route whose operation documents the shared error
// responses for statuses, used for requests no documented operation matches.
func (v *Validator) syntheticRoute(statuses []int) *routers.Route {
	responses := openapi3.NewResponses()
	for _, s := range statuses {
		if ref := v.errorResponses[s]; ref != nil {
			responses.Set(strconv.Itoa(s), ref)
		}
	}
	return &routers.Route{
		Spec:      v.doc,
		Path:      "(no documented operation)",
		Operation: &openapi3.Operation{OperationID: "(no documented operation)", Responses: responses},
	}
}

// checkAllow asserts that Allow lists every documented method of the path
// req matches under some method.
func (v *Validator) checkAllow(req *http.Request, header http.Header, add func(string, ...any)) {
	var path string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodPut} {
		probe := req.Clone(req.Context())
		probe.Method = m
		if route, _, err := v.router.FindRoute(probe); err == nil {
			path = route.Path
			break
		}
	}
	if path == "" {
		return
	}
	allowed := map[string]bool{}
	for _, part := range strings.Split(strings.Join(header.Values("Allow"), ","), ",") {
		if part = strings.TrimSpace(part); part != "" {
			allowed[strings.ToUpper(part)] = true
		}
	}
	for _, m := range v.methodsByPath[path] {
		if !allowed[m] {
			add("Allow %q does not list documented method %s of %s", header.Values("Allow"), m, path)
		}
	}
}

// checkRequestID asserts one X-Request-Id header holding a UUID.
func checkRequestID(header http.Header, add func(string, ...any)) (string, bool) {
	values := header.Values("X-Request-Id")
	switch {
	case len(values) == 0:
		add("X-Request-Id header is missing")
		return "", false
	case len(values) > 1:
		add("X-Request-Id header appears %d times", len(values))
		return "", false
	case !uuidRE.MatchString(values[0]):
		add("X-Request-Id %q is not a UUID", values[0])
		return "", false
	}
	return values[0], true
}

// checkProblem asserts the Problem invariants the schema cannot express
// (exact key set, equality with HTTP status and X-Request-Id, Retry-After).
func checkProblem(status int, header http.Header, body []byte, requestID string, haveRequestID bool, add func(string, ...any)) {
	ct := header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != ProblemMediaType {
		add("error response Content-Type is %q, want %s", ct, ProblemMediaType)
	}
	var problem map[string]json.RawMessage
	if err := json.Unmarshal(body, &problem); err != nil {
		add("error body is not a JSON object: %v", err)
		return
	}
	keys := make([]string, 0, len(problem))
	for k := range problem {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !slices.Equal(keys, problemKeys) {
		add("Problem keys are %v, want exactly %v", keys, problemKeys)
	}
	var got struct {
		Status    *int    `json:"status"`
		RequestID *string `json:"request_id"`
		Retryable *bool   `json:"retryable"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		add("Problem fields have wrong types: %v", err)
		return
	}
	if got.Status != nil && *got.Status != status {
		add("Problem status %d differs from HTTP status %d", *got.Status, status)
	}
	if haveRequestID && got.RequestID != nil && !strings.EqualFold(*got.RequestID, requestID) {
		add("Problem request_id %q differs from X-Request-Id %q", *got.RequestID, requestID)
	}
	if got.Retryable != nil && *got.Retryable {
		ra := header.Get("Retry-After")
		if n, err := strconv.Atoi(ra); err != nil || n < 0 {
			add("retryable Problem needs Retry-After as integer seconds >= 0, got %q", ra)
		}
	}
}

var problemCodes = sync.OnceValue(func() []string {
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		return nil
	}
	type schema struct {
		Ref        string            `json:"$ref"`
		Enum       []string          `json:"enum"`
		Properties map[string]schema `json:"properties"`
	}
	resolve := func(s schema) schema {
		for range 8 {
			name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/")
			if !ok {
				break
			}
			s = schema{}
			if err := json.Unmarshal(doc.Components.Schemas[name], &s); err != nil {
				return schema{}
			}
		}
		return s
	}
	problem := resolve(schema{Ref: "#/components/schemas/Problem"})
	return resolve(problem.Properties["code"]).Enum
})

// ProblemCodes returns the enumeration of Problem.code in the document, in
// document order (grouped by HTTP status). It returns nil if the document
// cannot be parsed. Each call returns a fresh slice.
func ProblemCodes() []string {
	return slices.Clone(problemCodes())
}
