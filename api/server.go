// Package api is the fasthttp front end of the contract: routing, auth,
// problem errors, cursors, idempotency, rate limits and one file per resource.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"siteenv/api/openapi"
	"siteenv/clock"
	"siteenv/engine"
	"siteenv/internal/phase"
	"siteenv/ledger"
	"siteenv/queries"
	"siteenv/report"
	"siteenv/store"
)

// BasePath prefixes every API path.
const BasePath = "/api/v1"

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Secret signs cursors and capabilities; required, at least 32 bytes.
	Secret []byte
	// Clock; default clock.Real.
	Clock clock.Clock
	// Logger; default slog.Default().
	Logger *slog.Logger
	// CursorTTL bounds a cursor's life; default 1 hour.
	CursorTTL time.Duration
	// IdempotencyWait is how long a duplicate waits for the first request
	// before answering a retryable idempotency_conflict; default 10 s.
	IdempotencyWait time.Duration
	// Store holds releases and retained query results; required for queries.
	Store store.Store
	// Runner executes queries in this process (nil: another replica does;
	// POST /queries then answers 202 without waiting).
	Runner QueryRunner
	// Engine answers the searches behind map images; nil answers
	// feature_disabled for them.
	Engine *engine.Engine
	// MapRenders bounds concurrent map renders; default GOMAXPROCS.
	MapRenders int
	// BodyReadTimeout bounds how long the body may take to arrive once the
	// headers are in; default 5 s (1 MiB at 200 KiB/s). A request whose
	// Content-Length exceeds what the client sends is answered 400 when it
	// passes, instead of holding the connection for the whole ReadTimeout.
	BodyReadTimeout time.Duration
	// Basemap draws streets, water and places under every map image (an
	// open basemap.Archive); nil: none, and the maps say so.
	Basemap report.Basemap
	// Metrics collects this server's metrics; nil: New makes its own. Pass
	// one to wire its store wrapper and job observer before New.
	Metrics *Metrics
	// Phases, when set, receives the time spent in each phase of every
	// request (siteenv bench api); nil, the default, reads no clocks.
	Phases *phase.Timer
	// ReadsPerMinute is each account's read limit; default the contract's
	// 120. Only `siteenv bench api` raises it: it follows every page of
	// answers up to 100,000 features, which the contract's limit spreads
	// over minutes of waiting (policy, not speed: the bench leaves such
	// waits out of its latencies anyway, and says it raised the limit).
	ReadsPerMinute int
}

// QueryRunner is the part of the job runner the API needs (jobs.Runner).
type QueryRunner interface {
	// Notify wakes a worker for a newly queued query.
	Notify()
	// Wait blocks until the query finishes here, ctx ends or d passes. It
	// returns the finished row when the runner kept one for this waiter
	// (its ID is then id); otherwise the caller reads the ledger.
	Wait(ctx context.Context, id uuid.UUID, d time.Duration) (ledger.Query, bool)
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.CursorTTL == 0 {
		c.CursorTTL = time.Hour
	}
	if c.ReadsPerMinute == 0 {
		c.ReadsPerMinute = readsPerMinute
	}
	if c.IdempotencyWait == 0 {
		c.IdempotencyWait = 10 * time.Second
	}
	if c.MapRenders == 0 {
		c.MapRenders = runtime.GOMAXPROCS(0)
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = 5 * time.Second
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	return c
}

// validate reports the first field of a filled config out of range, naming
// it.
func (c Config) validate() error {
	switch {
	case c.BodyReadTimeout < 0:
		return errors.New("api: Config.BodyReadTimeout must not be negative")
	case c.CursorTTL < 0:
		return errors.New("api: Config.CursorTTL must not be negative")
	case c.IdempotencyWait < 0:
		return errors.New("api: Config.IdempotencyWait must not be negative")
	case c.MapRenders < 0:
		return errors.New("api: Config.MapRenders must not be negative")
	case c.ReadsPerMinute < 0:
		return errors.New("api: Config.ReadsPerMinute must not be negative")
	}
	if len(c.Secret) < 32 {
		return errors.New("api: Config.Secret must be at least 32 bytes")
	}
	return nil
}

// handlerFunc serves one operation: args -> authorize -> operate -> respond.
// A returned error becomes a Problem.
type handlerFunc func(s *Server, r *request) error

// Server serves the contract. Safe for concurrent use.
type Server struct {
	cfg     Config
	led     *ledger.Ledger
	log     *slog.Logger
	clock   clock.Clock
	router  *router
	cursors cursorCodec
	store   store.Store
	runner  QueryRunner
	engine  *engine.Engine
	phases  *phase.Timer
	// mapSlots bounds concurrent map renders.
	mapSlots slots
	// handlers by operation id; operations without one answer feature_disabled.
	handlers map[string]handlerFunc
	metrics  *Metrics
	ready    readiness
	// finished caches finished queries' immutable rows (querycache.go).
	finished finishedQueries
	// queries is the query use case and the idempotency of every operation
	// that takes an Idempotency-Key.
	queries *queries.Service
	// catalogue caches catalogue reads of one version (cataloguecache.go).
	catalogue catalogueCache
	// limitsJSON is GET /context's limits, encoded (encodeLimits).
	limitsJSON json.RawMessage
	// opsEnc is GET /context's capabilities.operations, encoded per scope
	// set and report state (operationsJSON).
	opsEnc sync.Map
	// inFlight counts the requests being served (Handle to observe): the
	// load the answer-first wait stretches with (queries.Config.InFlight),
	// and the siteenv_http_requests_in_flight gauge.
	inFlight atomic.Int64
}

// New builds a Server over a ledger.
func New(cfg Config, led *ledger.Ledger) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ops, err := openapi.Operations()
	if err != nil {
		return nil, fmt.Errorf("api: embedded OpenAPI document: %w", err)
	}
	s := &Server{
		cfg:      cfg,
		led:      led,
		log:      cfg.Logger,
		clock:    cfg.Clock,
		cursors:  newCursorCodec(cfg.Secret, cfg.Clock, cfg.CursorTTL),
		store:    cfg.Store,
		runner:   cfg.Runner,
		engine:   cfg.Engine,
		phases:   cfg.Phases,
		mapSlots: make(slots, cfg.MapRenders),
		handlers: handlers(),
		metrics:  cfg.Metrics,
	}
	s.router = newRouter(ops, s.handlers)
	var scopes []string
	for _, op := range ops {
		if op.ID == "create_query" {
			scopes = op.Scopes // what a precomputed query's admission checks
		}
	}
	s.queries = queries.New(queries.Config{Ledger: led, Logger: cfg.Logger, IdempotencyWait: cfg.IdempotencyWait,
		Finished: func(q ledger.Query) { s.finished.put(q) }, Clock: cfg.Clock, Scopes: scopes, InFlight: s.inFlight.Load,
		Limits: queries.Limits{MaxQueued: maxQueuedQueries, MaxRetainedBytes: maxRetainedResultBytes, PerMinute: queryAdmissionsPerMinute}})
	s.queries.SetRunner(cfg.Runner)
	s.encodeLimits()
	if err := s.metrics.attach(s); err != nil {
		return nil, err
	}
	return s, nil
}

// routerOps lists the operations the router was built from.
func (s *Server) routerOps() []openapi.Operation {
	ops := make([]openapi.Operation, len(s.router.routes))
	for i, rt := range s.router.routes {
		ops[i] = rt.op
	}
	return ops
}

// handlers lists the implemented operations.
func handlers() map[string]handlerFunc {
	return map[string]handlerFunc{
		"get_openapi":                (*Server).getOpenAPI,
		"get_docs":                   (*Server).getDocs,
		"get_context":                (*Server).getContext,
		"get_usage":                  (*Server).getUsage,
		"list_activity":              (*Server).listActivity,
		"list_layers":                (*Server).listLayers,
		"get_layer":                  (*Server).getLayer,
		"get_layer_schema":           (*Server).getLayerSchema,
		"create_site":                (*Server).createSite,
		"get_site":                   (*Server).getSite,
		"list_sites":                 (*Server).listSites,
		"update_site":                (*Server).updateSite,
		"archive_site":               (*Server).archiveSite,
		"list_portfolios":            (*Server).listPortfolios,
		"create_acquisition":         (*Server).createAcquisition,
		"list_purchases":             (*Server).listPurchases,
		"get_purchase":               (*Server).getPurchase,
		"create_query":               (*Server).createQuery,
		"get_query":                  (*Server).getQuery,
		"get_query_results":          (*Server).getQueryResults,
		"delete_query":               (*Server).deleteQuery,
		"list_queries":               (*Server).listQueries,
		"get_query_layer_schema":     (*Server).getQueryLayerSchema,
		"search_locations":           (*Server).searchLocations,
		"resolve_location":           (*Server).resolveLocation,
		"get_site_section_map_image": (*Server).getMapImage,
		"get_artifact":               (*Server).getArtifact,
		"create_delivery":            (*Server).createDelivery,
		"get_delivery":               (*Server).getDelivery,
		"list_reports":               (*Server).listReports,
		"create_report":              (*Server).createReport,
		"get_report":                 (*Server).getReport,
		"list_report_revisions":      (*Server).listReportRevisions,
		"get_report_content":         (*Server).getReportContent,
	}
}

// requestTimeout bounds the work of one request.
const requestTimeout = 30 * time.Second

// MaxRequestBody is the contract's JSON request limit (1 MiB).
const MaxRequestBody = 1 << 20

// HTTPServer returns a fasthttp server for s; it refuses bodies over 1 MiB
// from Content-Length alone, before reading them.
func (s *Server) HTTPServer() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:            s.Handle,
		Name:               "siteenv",
		MaxRequestBodySize: MaxRequestBody,
		// ReadTimeout covers the request line and headers; the body then
		// gets BodyReadTimeout from when the headers are in.
		ReadTimeout: 30 * time.Second,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: s.cfg.BodyReadTimeout}
		},
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           2 * time.Minute,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		ErrorHandler:          s.handleTransportError,
		// Room for a 4096-character cursor plus filters in the request line.
		ReadBufferSize: 32 << 10,
		Logger:         fasthttpLogger{s.log},
	}
}

// handleTransportError answers requests fasthttp could not parse.
func (s *Server) handleTransportError(ctx *fasthttp.RequestCtx, err error) {
	rid := uuid.NewString()
	ctx.Response.Header.Set("X-Request-Id", rid)
	p := &Problem{Code: CodeInvalidRequest, Detail: "The HTTP request could not be parsed."}
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		p = newProblem(CodePayloadTooLarge, "The request body exceeds the %s limit.", byteSize(MaxRequestBody))
	case errors.As(err, &ne) && ne.Timeout():
		p = newProblem(CodeInvalidRequest, "The request did not arrive in time: send the headers promptly, then exactly Content-Length bytes of body within %s of them.", s.cfg.BodyReadTimeout)
	}
	s.writeProblem(ctx, rid, p)
	ctx.SetConnectionClose()
}

// request is the per-request state handed to handlers.
type request struct {
	// http is fasthttp's request and response; ctx the request's context
	// (its deadline and cancellation), which every ledger and store call
	// takes.
	http      *fasthttp.RequestCtx
	ctx       context.Context
	id        string
	op        *openapi.Operation
	params    map[string]string
	principal ledger.Principal
	// resource named in the audit record, set by handlers.
	resourceType, resourceID string
	// problemCode is the error code answered, for the audit record.
	problemCode string
	// audited is the status whose audit record is already written (with
	// the stored idempotent response); 0: none.
	audited int
	// paramErrs are bad parameters Server.serve found; query reports them
	// and sets paramsRead.
	paramErrs  []FieldError
	paramsRead bool
	// rate is the rate-limit window the request was counted in.
	rate rateState
	// etag, when a handler knows it, spares hashing the body.
	etag string
	// probe is "healthz" or "readyz" for the probe paths.
	probe string
	// phases times the request's phases (nil: off).
	phases *phase.Timer
	// prefetch is the handler's first read, made with the key lookup
	// (Server.prefetchFor); nil: none.
	prefetch ledger.Prefetch
	// pending is the answer of a query this request ran, whose finish is
	// stored with its idempotent response (queries.Service.Settle).
	pending queries.Pending
	// keyHash is the bearer key's hash while the key is not yet
	// authenticated: its operation's admission authenticates it in the same
	// round trip (admitWithKey). Until then provisional is true and
	// principal holds only the catalogue version the handler reads at.
	keyHash     []byte
	provisional bool
	// authenticated: the request is being served again after its
	// provisional pass, with the key authenticated first.
	authenticated bool
}

// Handle is the fasthttp handler.
func (s *Server) Handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	s.inFlight.Add(1)
	// The request's phase recorder rides in its context: the ledger pool's
	// tracer times every round trip made with it (phase.Ledger).
	c, cancel := context.WithTimeout(phase.WithRecorder(context.Background(), s.phases), requestTimeout)
	defer cancel()
	t0 := s.phases.Start()
	r := &request{http: ctx, ctx: c, id: uuid.NewString(), phases: s.phases}
	ctx.Response.Header.Set("X-Request-Id", r.id)
	defer s.observe(r, start)
	defer func() {
		// A panic is a bug: answer internal_error, never a stack trace.
		if v := recover(); v != nil {
			s.log.Error("panic serving request", "request_id", r.id, "panic", fmt.Sprint(v))
			ctx.Response.ResetBody()
			s.writeProblem(ctx, r.id, &Problem{Code: CodeInternalError, Detail: "An internal error occurred; retry with backoff.", RetryAfter: 1})
		}
	}()
	if err := s.serve(r); err != nil {
		p := problemFor(r.ctx, s.log, err)
		r.problemCode = string(p.Code)
		s.writeProblem(ctx, r.id, p)
	}
	s.finishResponse(r)
	ta := s.phases.Start()
	s.audit(r)
	s.phases.Done(phase.Audit, ta)
	if s.phases != nil && r.op != nil {
		s.phases.Request(r.op.ID, t0)
	}
}

func (s *Server) serve(r *request) error {
	path := string(r.http.Path())
	switch path {
	case HealthzPath, ReadyzPath:
		r.probe = path[1:]
		return s.serveProbe(r, path)
	}
	if path != BasePath && !strings.HasPrefix(path, BasePath+"/") {
		return newProblem(CodeNotFound, "No such path; the API lives under %s.", BasePath)
	}
	rt, params, allow := s.router.match(string(r.http.Method()), strings.TrimPrefix(path, BasePath))
	if rt == nil {
		if len(allow) > 0 {
			return &Problem{Code: CodeMethodNotAllowed, Detail: "This path accepts " + strings.Join(allow, ", ") + ".", Allow: strings.Join(allow, ", ")}
		}
		return newProblem(CodeNotFound, "No such path.")
	}
	r.op, r.params = &rt.op, params
	err := s.serveRoute(r, rt)
	if r.provisional {
		// The request was refused before its use case was called (the
		// queries package authenticates a provisional key itself on every
		// path: queries.Service.Admit): nothing was written, and the
		// request is served again with the key authenticated first, as
		// every other operation is, so that it is answered as it would
		// have been.
		s.resetProvisional(r)
		err = s.serveRoute(r, rt)
	}
	return err
}

// serveRoute authenticates the request and runs its route's handler.
func (s *Server) serveRoute(r *request, rt *route) error {
	if !rt.op.Public {
		ta := s.phases.Start()
		err := s.admit(r)
		s.phases.Done(phase.Auth, ta)
		if err != nil {
			return err
		}
	}
	// Parameters are checked after authentication, as the read routes always
	// did, and before any handler can write or charge. A read that declares
	// query parameters runs its handler so that one answer names every bad
	// parameter, the handler's findings included; if the handler does not
	// refuse them, the refusal stands anyway.
	if fe := r.checkParams(); len(fe) > 0 {
		safe := r.op.Method == "GET" || r.op.Method == "HEAD"
		if !safe || len(r.op.Query) == 0 || rt.handler == nil {
			return paramProblem(fe)
		}
		r.paramErrs = fe
		err := rt.handler(s, r)
		var p *Problem
		if r.paramsRead && errors.As(err, &p) && p.Code == CodeInvalidRequest {
			return err
		}
		r.http.Response.Reset()
		r.http.Response.Header.Set("X-Request-Id", r.id)
		return paramProblem(fe)
	}
	if rt.handler == nil || (rt.op.ID == "get_delivery" && s.store == nil) {
		return newProblem(CodeFeatureDisabled, "The operation %s is not available on this server yet.", rt.op.ID)
	}
	return rt.handler(s, r)
}

// writeJSON writes a successful JSON body.
func (r *request) writeJSON(status int, v any) error {
	defer r.phases.Done(phase.JSON, r.phases.Start())
	b, err := marshalNoEscape(v)
	if err != nil {
		return err
	}
	r.writeBody(status, b)
	return nil
}

// writeEncoded writes the body encode returns, the JSON encoding a handler
// does itself (a cached or spliced body), timed as phase.JSON.
func (r *request) writeEncoded(status int, encode func() ([]byte, error)) error {
	return r.encodeJSON(func() error {
		b, err := encode()
		if err != nil {
			return err
		}
		r.writeBody(status, b)
		return nil
	})
}

// encodeJSON runs write, a handler's own encoding of its response into the
// response, timed as phase.JSON.
func (r *request) encodeJSON(write func() error) error {
	defer r.phases.Done(phase.JSON, r.phases.Start())
	return write()
}

// writeBody writes an encoded JSON body.
func (r *request) writeBody(status int, b []byte) {
	r.http.SetStatusCode(status)
	r.http.SetContentType("application/json")
	r.http.SetBody(b)
}

// marshalNoEscape is the JSON encoding of every body: compact, no HTML
// escaping, no trailing newline.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("api: encode response: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (s *Server) writeProblem(ctx *fasthttp.RequestCtx, requestID string, p *Problem) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p.body(requestID)); err != nil {
		buf.Reset()
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	ctx.Response.Header.Del("Location")
	ctx.SetStatusCode(p.status())
	ctx.SetContentType(problemMediaType)
	if ra := p.retryAfter(); ra != "" {
		ctx.Response.Header.Set("Retry-After", ra)
	}
	if p.Code == CodeUnauthenticated || p.Code == CodeCredentialRevoked {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="siteenv"`)
	}
	if p.Allow != "" {
		ctx.Response.Header.Set("Allow", p.Allow)
	}
	if p.ContentRange != "" {
		ctx.Response.Header.Set("Content-Range", p.ContentRange)
	}
	ctx.SetBody(b)
}

// fasthttpLogger routes fasthttp's connection-level messages (client resets,
// refused oversized bodies) to debug logs.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Debug(redactCapabilities(fmt.Sprintf(format, args...)), "component", "fasthttp")
}

// capabilityPathRE matches a download link's secret path segment, however
// mangled, so a message quoting a request line never carries it.
var capabilityPathRE = regexp.MustCompile(`(?i)(/deliveries/)[^\s"'?#]*|dl_[0-9a-f-]{36}\.[A-Za-z0-9_-]+`)

// redactCapabilities removes download capabilities from a log message.
func redactCapabilities(msg string) string {
	return capabilityPathRE.ReplaceAllString(msg, "${1}[redacted]")
}
