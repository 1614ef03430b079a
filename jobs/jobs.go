// Package jobs runs asynchronous work claimed from the ledger, so any number
// of replicas share one queue: spatial queries and report builds.
package jobs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb/geojson"

	"siteenv/engine"
	"siteenv/geo"
	"siteenv/internal/phase"
	"siteenv/ledger"
	"siteenv/report"
	"siteenv/store"
)

// Config configures a Runner. Zero values take the documented defaults.
type Config struct {
	// Basemap draws streets, water and places under every report map (an
	// open basemap.Archive); nil: none, and the maps say so.
	Basemap report.Basemap
	// Workers executing queries in this process; default 2.
	Workers int
	// MaxRunning queries per account across replicas; default 4.
	MaxRunning int
	// Attempt bounds one execution; default 120 s.
	Attempt time.Duration
	// QueueLimit fails queries queued longer; default 10 min.
	QueueLimit time.Duration
	// Retain keeps results after completion; default 24 h.
	Retain time.Duration
	// WriteBehindBytes bounds the bytes of the results answered before
	// their files are stored (writebehind.go); default 256 MiB. When the
	// store falls behind (slow or unreachable), a result beyond it is
	// written before its answer, so memory holds at most this much.
	WriteBehindBytes int64
	// MaxAttempts before a repeatedly crashing query or report build fails
	// (a failed report is refunded); default 3.
	MaxAttempts int
	// ReportWorkers building reports in this process; default 1.
	ReportWorkers int
	// ReportAttempt bounds one report build; default 10 min.
	ReportAttempt time.Duration
	// Lease is how long a claim on a query or a report outlives its last
	// renewal; default 5 s. The living owner renews it every Lease/3, and
	// every replica looks for lapsed claims every Lease/2 (lease.go), so a
	// crashed replica's work is requeued within about 1.5 leases.
	Lease time.Duration
	// MaxReportBytes is the largest report PDF; default and ceiling
	// MaxPDFBytes (the contract's artifact limit). A larger PDF fails its
	// report output_too_large at once, with a refund.
	MaxReportBytes int
	// Poll is how often idle workers look for work queued by other replicas,
	// and running ones for a cancellation; default 500 ms.
	Poll time.Duration
	// Sweep is how often the janitor fails stale queries, requeues expired
	// attempts and deletes expired results; default 30 s.
	Sweep  time.Duration
	Logger *slog.Logger
	// TempDir for result files before upload; default os.TempDir().
	TempDir string
	// ObserveAttempt, when set, is called after every attempt with its
	// outcome (AttemptFinished, AttemptError, AttemptTimeout,
	// AttemptCancelled or AttemptRequeued) and duration, from the worker's
	// goroutine: it must be cheap and safe for concurrent use (metrics).
	ObserveAttempt func(outcome string, d time.Duration)
	// Phases, when set, receives the time spent claiming, in the engine,
	// writing results and finishing (siteenv bench api); nil reads no clocks.
	Phases *phase.Timer
}

// Attempt outcomes reported to Config.ObserveAttempt.
const (
	// AttemptFinished: the query reached a final status (succeeded,
	// partial, or failed with every layer unavailable).
	AttemptFinished = "finished"
	// AttemptError: the attempt failed before recording a result; the
	// query is retried until MaxAttempts.
	AttemptError     = "error"
	AttemptTimeout   = "timeout"
	AttemptCancelled = "cancelled"
	// AttemptRequeued: Stop (or RunOnce's ctx) interrupted the attempt and
	// the query went back to the queue.
	AttemptRequeued = "requeued"
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.MaxRunning == 0 {
		c.MaxRunning = 4
	}
	if c.Attempt == 0 {
		c.Attempt = 120 * time.Second
	}
	if c.QueueLimit == 0 {
		c.QueueLimit = 10 * time.Minute
	}
	if c.Retain == 0 {
		c.Retain = 24 * time.Hour
	}
	if c.WriteBehindBytes == 0 {
		c.WriteBehindBytes = 256 << 20
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 3
	}
	if c.ReportWorkers == 0 {
		c.ReportWorkers = 1
	}
	if c.ReportAttempt == 0 {
		c.ReportAttempt = 10 * time.Minute
	}
	if c.Lease == 0 {
		c.Lease = 5 * time.Second
	}
	if c.MaxReportBytes == 0 {
		c.MaxReportBytes = MaxPDFBytes
	}
	if c.Poll == 0 {
		c.Poll = 500 * time.Millisecond
	}
	if c.Sweep == 0 {
		c.Sweep = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// ErrInvalidConfig reports a Config field outside its range.
var ErrInvalidConfig = errors.New("jobs: invalid config")

// validate reports the first field of a filled config out of range
// (ErrInvalidConfig, naming the field): zero took the default, so a negative
// value was set on purpose and would panic a ticker or stop all work.
func (c Config) validate() error {
	for _, f := range []struct {
		name     string
		negative bool
		value    any
	}{
		{"Workers", c.Workers < 0, c.Workers}, {"MaxRunning", c.MaxRunning < 0, c.MaxRunning},
		{"MaxAttempts", c.MaxAttempts < 0, c.MaxAttempts}, {"Attempt", c.Attempt < 0, c.Attempt},
		{"MaxReportBytes", c.MaxReportBytes < 0, c.MaxReportBytes},
		{"QueueLimit", c.QueueLimit < 0, c.QueueLimit}, {"Retain", c.Retain < 0, c.Retain},
		{"Poll", c.Poll < 0, c.Poll}, {"Sweep", c.Sweep < 0, c.Sweep},
		{"ReportWorkers", c.ReportWorkers < 0, c.ReportWorkers}, {"ReportAttempt", c.ReportAttempt < 0, c.ReportAttempt},
		{"Lease", c.Lease < 0, c.Lease}, {"WriteBehindBytes", c.WriteBehindBytes < 0, c.WriteBehindBytes},
	} {
		if f.negative {
			return fmt.Errorf("%w: %s must not be negative (0 takes the default), got %v", ErrInvalidConfig, f.name, f.value)
		}
	}
	if c.Lease < 30*time.Millisecond {
		return fmt.Errorf("%w: Lease must be at least 30ms (renewed every Lease/3), got %v", ErrInvalidConfig, c.Lease)
	}
	if c.MaxReportBytes > MaxPDFBytes {
		return fmt.Errorf("%w: MaxReportBytes must be at most %d (the artifact limit), got %d", ErrInvalidConfig, MaxPDFBytes, c.MaxReportBytes)
	}
	return nil
}

// Runner executes queued queries and builds queued reports. Safe for
// concurrent use.
type Runner struct {
	cfg   Config
	led   *ledger.Ledger
	eng   *engine.Engine
	store store.Store
	// wake and reportWake wake a query worker and a report worker.
	wake       chan struct{}
	reportWake chan struct{}
	mu         struct {
		sync.Mutex
		// waiters receive the finished row (the zero Query when this
		// process did not keep one: the waiter reads the ledger).
		waiters map[uuid.UUID][]chan ledger.Query
		// recent are queries that finished here with nobody waiting yet,
		// the last recentFinishes of them (ring is their order): a POST
		// whose Wait begins only after the worker was quicker finds its
		// query finished instead of waiting out its Prefer: wait.
		recent map[uuid.UUID]struct{}
		ring   []uuid.UUID
		next   int
		// started: Start ran; stopClaiming ends the claim loops and the
		// janitor; interrupt ends the attempts in flight (Stop's deadline).
		started      bool
		stopClaiming context.CancelFunc
		interrupt    context.CancelCauseFunc
		// stopRenewal ends claim renewal and waits for it.
		stopRenewal func()
		// claimCtx and execCtx are Start's: RunNow (inrequest.go) runs
		// attempts under execCtx while claimCtx is live.
		claimCtx, execCtx context.Context
		// requeueErrs are interrupted attempts that could not be handed back
		// (their claims expire and the janitor of any replica requeues them).
		requeueErrs []error
	}
	// running counts the workers' and janitor's goroutines.
	running sync.WaitGroup
	// claims are the claims this process's attempts hold and renew.
	claims heldClaims
	// pre counts the precomputed answers (precompute.go).
	pre precomputes
	// inRequest counts the attempts running in requests (inrequest.go)
	// and the answers precomputed for them (precompute.go): one slot a
	// query, the attempt taking over its precomputation's.
	inRequest atomic.Int64
	// pending are results answered before their file is stored, and behind
	// counts the writes storing them (writebehind.go); once behindClosed
	// (Stop) a write is made in its caller instead.
	pending      pendingResults
	behind       sync.WaitGroup
	behindMu     sync.Mutex
	behindClosed bool
}

// New makes a Runner; Start launches its workers. Zero fields of cfg take
// their defaults (WithDefaults); a field out of range is refused with
// ErrInvalidConfig naming it.
func New(cfg Config, led *ledger.Ledger, eng *engine.Engine, st store.Store) (*Runner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, led: led, eng: eng, store: st, wake: make(chan struct{}, 1), reportWake: make(chan struct{}, 1)}
	r.mu.waiters = map[uuid.UUID][]chan ledger.Query{}
	r.mu.recent = map[uuid.UUID]struct{}{}
	r.pending.m = map[string]*pendingResult{}
	return r, nil
}

// recentFinishes bounds Runner.mu.recent.
const recentFinishes = 4096

// Config returns the filled configuration the runner enforces (GET /context
// reports its limits from it).
func (r *Runner) Config() Config { return r.cfg }

// ResultKey is where a query's retained result lives in the store.
func ResultKey(account, query uuid.UUID) string {
	return "results/" + account.String() + "/" + query.String() + ".ndjson"
}

// errInterrupted is the cause of an attempt stopped by Stop's deadline:
// the query is requeued, not failed.
var errInterrupted = errors.New("jobs: runner stopping")

// errAttemptTimeout is the cause of an attempt that ran out of its Attempt.
var errAttemptTimeout = errors.New("jobs: attempt timed out")

// Start runs workers and the janitor. They stop claiming when ctx ends or
// Stop is called; attempts in flight are not cut short by ctx (they finish,
// bounded by Attempt) but by Stop's deadline. Start is called at most once.
func (r *Runner) Start(ctx context.Context) {
	claimCtx, stopClaiming := context.WithCancel(ctx)
	// Attempts outlive ctx: a SIGTERM ends ctx, and in-flight work drains.
	execCtx, interrupt := context.WithCancelCause(context.WithoutCancel(ctx))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.started {
		stopClaiming()
		interrupt(nil)
		return
	}
	r.mu.started, r.mu.stopClaiming, r.mu.interrupt = true, stopClaiming, interrupt
	r.mu.claimCtx, r.mu.execCtx = claimCtx, execCtx
	for i := 0; i < r.cfg.Workers; i++ {
		r.running.Add(1)
		go func() {
			defer r.running.Done()
			r.work(claimCtx, execCtx)
		}()
	}
	for i := 0; i < r.cfg.ReportWorkers; i++ {
		r.running.Add(1)
		go func() {
			defer r.running.Done()
			r.reportWork(claimCtx, execCtx)
		}()
	}
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		r.janitor(claimCtx)
	}()
	// Renewal lasts as long as attempts may: it ends once the workers and
	// the janitor have exited (ctx ended and the attempts in flight
	// finished, or Stop).
	renewCtx, stopRenewal := context.WithCancel(context.WithoutCancel(ctx))
	renewed := make(chan struct{})
	r.mu.stopRenewal = func() {
		stopRenewal()
		<-renewed
	}
	go func() {
		defer close(renewed)
		r.renewClaims(renewCtx)
	}()
	go func() {
		r.running.Wait()
		stopRenewal()
	}()
}

// Stop stops claiming, lets the attempts in flight finish until ctx ends,
// then interrupts the rest and requeues them (an interrupted query is run
// again, by this or another replica, never failed or lost), and returns
// once every goroutine Start launched has exited. Call it before closing
// the ledger. The error joins the requeues that failed (those queries are
// requeued by the janitor once their claims expire); nil otherwise, also
// when attempts were interrupted and requeued.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	if !r.mu.started {
		r.mu.Unlock()
		return nil
	}
	stopClaiming, interrupt, stopRenewal := r.mu.stopClaiming, r.mu.interrupt, r.mu.stopRenewal
	// Under mu: RunNow adds to running only while claimCtx is live.
	stopClaiming()
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		interrupt(errInterrupted)
		<-done
	}
	interrupt(nil) // releases the context
	stopRenewal()
	r.behindMu.Lock()
	r.behindClosed = true
	r.behindMu.Unlock()
	r.behind.Wait() // the results answered from memory are stored
	r.mu.Lock()
	defer r.mu.Unlock()
	err := errors.Join(r.mu.requeueErrs...)
	r.mu.requeueErrs = nil
	return err
}

// Notify wakes a query worker and a report worker: a query or a report
// was just queued here.
func (r *Runner) Notify() {
	for _, ch := range []chan struct{}{r.wake, r.reportWake} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Wait blocks until query id finishes in this process, ctx ends or d passes.
// It reports whether the query finished here, with its finished row as the
// worker stored it when the worker kept one and this Wait was already
// waiting (q.ID is then id); otherwise callers read the ledger.
func (r *Runner) Wait(ctx context.Context, id uuid.UUID, d time.Duration) (ledger.Query, bool) {
	if d <= 0 {
		return ledger.Query{}, false
	}
	ch := make(chan ledger.Query, 1)
	r.mu.Lock()
	if _, ok := r.mu.recent[id]; ok {
		// Finished before this Wait began (Notify woke a worker that was
		// quicker than the caller).
		delete(r.mu.recent, id)
		r.mu.Unlock()
		return ledger.Query{}, true
	}
	r.mu.waiters[id] = append(r.mu.waiters[id], ch)
	r.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case q := <-ch:
		return q, true
	case <-t.C:
	case <-ctx.Done():
	}
	r.mu.Lock()
	ws := r.mu.waiters[id]
	for i, w := range ws {
		if w == ch {
			r.mu.waiters[id] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(r.mu.waiters[id]) == 0 {
		delete(r.mu.waiters, id)
	}
	r.mu.Unlock()
	return ledger.Query{}, false
}

// finished wakes id's waiters with row (the zero Query: none kept here).
func (r *Runner) finished(id uuid.UUID, row *ledger.Query) {
	r.mu.Lock()
	ws := r.mu.waiters[id]
	delete(r.mu.waiters, id)
	if len(ws) == 0 {
		if len(r.mu.ring) < recentFinishes {
			r.mu.ring = append(r.mu.ring, id)
		} else {
			delete(r.mu.recent, r.mu.ring[r.mu.next])
			r.mu.ring[r.mu.next] = id
			r.mu.next = (r.mu.next + 1) % recentFinishes
		}
		r.mu.recent[id] = struct{}{}
	}
	r.mu.Unlock()
	for _, w := range ws {
		w <- *row // buffered: never blocks
	}
}

func (r *Runner) work(claimCtx, execCtx context.Context) {
	t := time.NewTicker(r.cfg.Poll)
	defer t.Stop()
	for {
		for claimCtx.Err() == nil {
			ran, err := r.runOnce(claimCtx, execCtx)
			if err != nil && claimCtx.Err() == nil {
				r.cfg.Logger.Error("query worker", "err", err)
			}
			if !ran {
				break
			}
		}
		select {
		case <-claimCtx.Done():
			return
		case <-r.wake:
		case <-t.C:
		}
	}
}

func (r *Runner) janitor(ctx context.Context) {
	t := time.NewTicker(r.cfg.Sweep)
	defer t.Stop()
	// Lapsed claims are looked for every Lease/2, more often than the
	// whole sweep.
	rt := time.NewTicker(r.cfg.Lease / 2)
	defer rt.Stop()
	for {
		if err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("query janitor", "err", err)
		}
	recover:
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				break recover
			case <-rt.C:
				if err := r.Recover(ctx); err != nil && ctx.Err() == nil {
					r.cfg.Logger.Error("job recovery", "err", err)
				}
			}
		}
	}
}

// Sweep fails queries past their queue time, requeues crashed attempts of
// queries and report builds (a report whose build used MaxAttempts fails,
// refunded once) and deletes expired results. Expired payloads are never
// restored.
func (r *Runner) Sweep(ctx context.Context) error {
	if err := r.Recover(ctx); err != nil {
		return err
	}
	keys, err := r.led.ExpireResults(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		if err := r.store.Delete(ctx, k); err != nil && !errors.Is(err, store.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RunOnce claims and executes one queued query; false when none was ready.
// If ctx ends while the query executes, the attempt stops and the query is
// requeued.
func (r *Runner) RunOnce(ctx context.Context) (bool, error) {
	return r.runOnce(ctx, ctx)
}

// requeueTimeout bounds handing an interrupted query back: Stop must not
// hang on a database that stopped answering.
const requeueTimeout = 10 * time.Second

// runOnce claims under claimCtx and executes under execCtx; an attempt cut
// short by execCtx is requeued.
func (r *Runner) runOnce(claimCtx, execCtx context.Context) (bool, error) {
	tc := r.cfg.Phases.Start()
	q, err := r.led.ClaimQuery(claimCtx, r.cfg.MaxRunning, r.cfg.Lease)
	if errors.Is(err, ledger.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer r.claims.hold(queryClaim, ledger.JobClaim{ID: q.ID, Attempt: q.Attempts})()
	r.cfg.Phases.Done(phase.Claim, tc)
	var row ledger.Query // the finished row, when this attempt kept one
	defer r.finished(q.ID, &row)
	began := time.Now()
	tctx, cancelTimeout := context.WithTimeoutCause(execCtx, r.cfg.Attempt, errAttemptTimeout)
	defer cancelTimeout()
	actx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	stop := r.watchCancel(actx, q.ID, cancel)
	var rec recorded
	err = r.execute(actx, q, &rec, &row)
	stop()
	if obs := r.cfg.ObserveAttempt; obs != nil {
		obs(attemptOutcome(actx, err, rec), time.Since(began))
	}
	if errors.Is(context.Cause(actx), errCancelled) {
		return true, nil // DELETE cancelled it: nothing to record
	}
	if interrupted(actx) {
		rctx, cancelRequeue := context.WithTimeout(context.WithoutCancel(execCtx), requeueTimeout)
		defer cancelRequeue()
		requeued, rerr := r.led.RequeueQuery(rctx, q.ID)
		if rerr != nil {
			rerr = fmt.Errorf("jobs: requeue interrupted query %s: %w", q.ID, rerr)
			r.mu.Lock()
			r.mu.requeueErrs = append(r.mu.requeueErrs, rerr)
			r.mu.Unlock()
			return true, rerr
		}
		if requeued {
			r.cfg.Logger.Info("query attempt interrupted; requeued", "query_id", q.ID)
		}
		return true, nil
	}
	return true, err
}

// recorded notes that an attempt stored its query's final status and kept
// it (the cancellation watch may still fire after that, seeing the query no
// longer running).
type recorded bool

// attemptOutcome classifies a finished attempt for Config.ObserveAttempt.
func attemptOutcome(actx context.Context, err error, rec recorded) string {
	cause := context.Cause(actx)
	switch {
	case bool(rec):
		return AttemptFinished
	case errors.Is(cause, errCancelled):
		return AttemptCancelled
	case interrupted(actx):
		return AttemptRequeued
	case errors.Is(cause, errAttemptTimeout):
		return AttemptTimeout
	case err != nil:
		return AttemptError
	}
	return AttemptFinished
}

// interrupted reports whether the attempt was stopped from outside (Stop's
// deadline, or RunOnce's ctx) rather than by its own timeout or a
// cancellation of its query.
func interrupted(actx context.Context) bool {
	if actx.Err() == nil {
		return false
	}
	cause := context.Cause(actx)
	return !errors.Is(cause, errCancelled) && !errors.Is(cause, errAttemptTimeout)
}

// errCancelled is the cause of an attempt stopped because its query was
// cancelled.
var errCancelled = errors.New("jobs: query cancelled")

// watchCancel polls the query's status every Poll while it executes and
// stops the attempt once it is no longer running (DELETE cancelled it), so
// a cancelled query frees its worker instead of computing a result nobody
// keeps. stop ends the watch.
func (r *Runner) watchCancel(ctx context.Context, id uuid.UUID, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(r.cfg.Poll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			status, err := r.led.QueryStatus(ctx, id)
			if err == nil && status != ledger.QueryRunning {
				cancel(errCancelled)
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// FeatureRecord is one line of a retained result, as the API pages it.
type FeatureRecord struct {
	LayerID    string            `json:"layer_id"`
	FeatureID  string            `json:"feature_id"`
	DistanceM  float64           `json:"distance_m"`
	Properties map[string]any    `json:"properties"`
	Geometry   *geojson.Geometry `json:"geometry"`
}

// computed is what the engine found for a query: its outcome, status,
// count and the records to store, in the order the result file holds them.
type computed struct {
	status  string
	outcome []ledger.LayerOutcome
	chunks  []recordChunk
	count   *int64
}

// compute runs q on the engine from its frozen inputs (site, radius, layers,
// releases): the same records in the same order on every run, so a result
// computed again has the bytes of the one first answered (recompute).
func (r *Runner) compute(ctx context.Context, q ledger.Query) (computed, error) {
	return r.computeFrom(ctx, q, DecodedSite{})
}

// computeFrom is compute from site, when it holds q's site geometry
// decoded (Precompute).
func (r *Runner) computeFrom(ctx context.Context, q ledger.Query, site DecodedSite) (computed, error) {
	req, unavailable, err := r.engineRequest(q, site)
	if err != nil {
		return computed{}, err
	}
	te := r.cfg.Phases.Start()
	results, err := r.eng.Query(ctx, req)
	r.cfg.Phases.Done(phase.Engine, te)
	if err != nil {
		return computed{}, &engineError{err}
	}
	byLayer := map[string]engine.LayerResult{}
	for _, res := range results {
		byLayer[res.LayerID] = res
	}
	var c computed
	var total int64
	failed := 0
	for _, id := range q.LayerIDs {
		if unavailable[id] {
			c.outcome = append(c.outcome, ledger.LayerOutcome{LayerID: id, DataStatus: "unavailable", Reason: "source_unavailable", Coverage: "unknown"})
			failed++
			continue
		}
		res := byLayer[id]
		o := ledger.LayerOutcome{LayerID: id, DataStatus: res.Status, Reason: res.Reason, Coverage: res.Coverage}
		if res.Count != nil {
			n := int64(*res.Count)
			o.Count = &n
			total += n
		}
		if res.Status == "unavailable" {
			failed++
		}
		c.chunks = appendChunks(c.chunks, id, res.Features)
		c.outcome = append(c.outcome, o)
	}
	c.status = ledger.QuerySucceeded
	switch {
	case failed == len(q.LayerIDs):
		c.status = ledger.QueryFailed
	case failed > 0:
		c.status = ledger.QueryPartial
	}
	if failed == 0 {
		c.count = &total
	}
	return c, nil
}

// engineRequest is q's engine request from its frozen inputs, and the
// layers it leaves out (no release: unavailable). Its site is decoded
// from q's stored SiteGeometry unless site holds it decoded already.
func (r *Runner) engineRequest(q ledger.Query, site DecodedSite) (engine.Request, map[string]bool, error) {
	req := engine.Request{Site: site.Geometry, SiteChecked: site.Checked && site.Geometry != nil, RadiusM: q.RadiusM}
	if req.Site == nil {
		g, err := geo.DecodeStored("site of query "+q.ID.String(), q.SiteGeometry)
		if err != nil {
			return engine.Request{}, nil, err
		}
		req.Site = g
	}
	var err error
	unavailable := map[string]bool{}
	for _, f := range q.Frozen {
		if f.ReleaseID == nil {
			unavailable[f.LayerID] = true
			continue
		}
		lr := engine.LayerRequest{LayerID: f.LayerID, ReleaseID: *f.ReleaseID, IncludeGeometry: q.IncludeGeometry}
		if lr.Coverage, err = geo.DecodeCoverage(geo.CoverageKey{Layer: f.LayerID, Release: *f.ReleaseID}, f.Coverage); err != nil {
			return engine.Request{}, nil, err
		}
		req.Layers = append(req.Layers, lr)
	}
	return req, unavailable, nil
}

// engineError is the engine's failure in compute (the query fails
// source_unavailable).
type engineError struct{ err error }

func (e *engineError) Error() string { return e.err.Error() }
func (e *engineError) Unwrap() error { return e.err }

func (r *Runner) execute(ctx context.Context, q ledger.Query, rec *recorded, row *ledger.Query) error {
	pre, _ := ctx.Value(precomputedKey{}).(*Precomputed)
	var (
		c   computed
		err error
	)
	if pre != nil {
		c, err = pre.wait(ctx)
		if errors.Is(err, errRecompute) {
			pre = nil
		} else {
			r.pre.used.Add(1)
		}
	}
	if pre == nil {
		c, err = r.compute(ctx, q)
	}
	var ee *engineError
	if errors.As(err, &ee) {
		return r.fail(ctx, q, rec, "source_unavailable", ee.err)
	}
	if err != nil {
		return err
	}
	tw := r.cfg.Phases.Start()
	key := ResultKey(q.AccountID, q.ID)
	// An in-request attempt's result of up to writeBehindMaxFeatures
	// features is answered from memory and its file written behind the
	// answer (writebehind.go): the request does not wait for the write and
	// its fsyncs.
	_, inRequest := ctx.Value(handoffKey{}).(handoff)
	behind := inRequest && len(c.chunks) > 0 && chunkFeatures(c.chunks) <= writeBehindMaxFeatures
	// A result without records stores nothing: its key is still recorded
	// (the result is retained, of 0 bytes) and its pages are read as empty
	// without opening it. That spares the most common answer a file's
	// creation and two fsyncs.
	var out store.Writer = discardWriter{}
	var mem *memWriter
	encoded := behind && pre != nil && pre.mem != nil
	switch {
	case encoded:
		// Encoded while the admission was in the ledger.
		mem = &memWriter{b: pre.mem}
	case behind:
		mem = &memWriter{}
		out = mem
	case len(c.chunks) > 0:
		out, err = r.resultWriter(ctx, key)
		if errors.Is(err, store.ErrExists) {
			// An earlier attempt stored it (the same records: the releases are
			// frozen); this one only counts its size.
			out, err = discardWriter{}, nil
		}
		if err != nil {
			return r.fail(ctx, q, rec, "source_unavailable", err)
		}
	}
	defer out.Abort()
	var size int64
	if encoded {
		size = pre.size
	} else {
		size, err = writeRecords(out, c.chunks, q.IncludeGeometry, runtime.GOMAXPROCS(0))
	}
	var we *writeError
	if errors.As(err, &we) {
		return r.fail(ctx, q, rec, "source_unavailable", we.err)
	}
	if err != nil {
		return err
	}
	if err := out.Commit(); err != nil && !errors.Is(err, store.ErrExists) {
		return r.fail(ctx, q, rec, "source_unavailable", err)
	}
	if mem != nil && !r.pending.reserve(key, mem.b, r.cfg.WriteBehindBytes) {
		// Too much awaits its write already (the store is slow or
		// unreachable): this result is stored before its answer.
		if err := r.storeResult(ctx, key, mem.b); err != nil {
			return r.fail(ctx, q, rec, "source_unavailable", err)
		}
		mem = nil
	}
	r.cfg.Phases.Done(phase.ResultWrite, tw)
	// Not abandoned halfway once the result is stored: a cancellation from
	// here on is settled by FinishQuery (then the result is deleted).
	done, kept, err := r.finishQuery(ctx, q, c.status, c.outcome, key, size, c.count)
	if mem != nil {
		if kept && err == nil {
			r.writeBehind(ctx, key)
		} else {
			r.pending.remove(key)
		}
	}
	if err != nil {
		return err
	}
	if kept {
		*row = done
	}
	*rec = recorded(kept)
	if !kept && mem == nil {
		// Cancelled while running: its result is not retained.
		if err := r.store.Delete(context.WithoutCancel(ctx), key); err != nil && !errors.Is(err, store.ErrNotExist) {
			return err
		}
	}
	return nil
}

// resultWriter writes a result in place where the store can (the file
// store: no staging copy), and otherwise stages it in a temporary file and
// Puts it at Commit.
func (r *Runner) resultWriter(ctx context.Context, key string) (store.Writer, error) {
	if c, ok := r.store.(store.Creator); ok {
		return c.Create(ctx, key)
	}
	f, err := os.CreateTemp(r.cfg.TempDir, "siteenv-result-*.ndjson")
	if err != nil {
		return nil, err
	}
	return &stagedWriter{ctx: ctx, st: r.store, key: key, f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// discardWriter stores nothing.
type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) Commit() error               { return nil }
func (discardWriter) Abort()                      {}

// stagedWriter is a store.Writer over a temporary file and Store.Put.
type stagedWriter struct {
	ctx  context.Context
	st   store.Store
	key  string
	f    *os.File // nil once finished
	w    *bufio.Writer
	size int64
}

func (s *stagedWriter) Write(p []byte) (int, error) {
	if s.f == nil {
		return 0, os.ErrClosed
	}
	n, err := s.w.Write(p)
	s.size += int64(n)
	return n, err
}

func (s *stagedWriter) Commit() error {
	if s.f == nil {
		return os.ErrClosed
	}
	defer s.Abort()
	if err := s.w.Flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return s.st.Put(s.ctx, s.key, s.f, s.size)
}

func (s *stagedWriter) Abort() {
	if s.f == nil {
		return
	}
	s.f.Close()
	os.Remove(s.f.Name())
	s.f = nil
}

// fail records an execution failure: every layer unavailable with reason.
func (r *Runner) fail(ctx context.Context, q ledger.Query, rec *recorded, reason string, cause error) error {
	if errors.Is(context.Cause(ctx), errCancelled) || interrupted(ctx) {
		return nil // not a failure: the query was cancelled, or is requeued
	}
	r.cfg.Logger.Error("query failed", "query_id", q.ID, "err", cause)
	var outcome []ledger.LayerOutcome
	for _, id := range q.LayerIDs {
		outcome = append(outcome, ledger.LayerOutcome{LayerID: id, DataStatus: "unavailable", Reason: reason, Coverage: "unknown"})
	}
	_, kept, err := r.led.FinishQueryRow(context.WithoutCancel(ctx), q, ledger.QueryFailed, outcome, "", 0, nil, r.cfg.Retain)
	*rec = recorded(kept && err == nil)
	return err
}
