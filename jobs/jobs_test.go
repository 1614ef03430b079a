package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/clock"
	"siteenv/engine"
	"siteenv/ingest"
	"siteenv/internal/leakcheck"
	"siteenv/internal/syncbuf"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
	"siteenv/store"
	"siteenv/tiles"
)

func TestMain(m *testing.M) { ledgertest.Main(leakcheck.Wrap(removeBenchData{m})) }

// removeBenchData removes the report benchmark's data after the run.
type removeBenchData struct{ m *testing.M }

func (r removeBenchData) Run() int {
	code := r.m.Run()
	if reportBench.dir != "" {
		os.RemoveAll(reportBench.dir)
	}
	return code
}

// Near Parramatta: the site, and features at known offsets to its east.
var origin = orb.Point{151.0, -33.81}

func east(m float64) orb.Point { return orb.Point{origin[0] + m/(111_320*0.8309), origin[1]} }

const layerID = "nsw.bores"

// bundle is a real ledger (fake clock), a real file store holding one
// published point release, and an account with a site and an integration.
type bundle struct {
	t                    *testing.T
	ctx                  context.Context
	clk                  *clock.Fake
	led                  *ledger.Ledger
	store                store.Store
	release              string
	account, integ, site uuid.UUID
	frozen               []ledger.FrozenLayer
	logs                 *syncBuffer
	log                  *slog.Logger
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{t: t, ctx: context.Background(), clk: clock.NewFake(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)), logs: &syncBuffer{}}
	b.log = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b.led = ledgertest.New(t, b.clk)
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b.store = st
	b.release = b.publish(map[string]orb.Point{"b10": east(10), "b50": east(50), "b900": east(900)})
	acct, err := b.led.CreateAccount(b.ctx, "Jobs test", 0)
	if err != nil {
		t.Fatal(err)
	}
	b.account = acct.ID
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: b.account, Scopes: []string{ledger.ScopeSitesWrite}})
	if err != nil {
		t.Fatal(err)
	}
	b.integ = k.IntegrationID
	site, err := b.led.CreateSite(b.ctx, ledger.Site{AccountID: b.account, Geometry: b.siteGeometry(), Fingerprint: "test-site",
		Bounds: [4]float64{origin[0], origin[1], origin[0], origin[1]}})
	if err != nil {
		t.Fatal(err)
	}
	b.site = site.ID
	rel := b.release
	b.frozen = []ledger.FrozenLayer{{LayerID: layerID, ReleaseID: &rel, SectionKey: "water", SchemaVersion: "1"}}
	return b
}

func (b *bundle) siteGeometry() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"Point","coordinates":[%v,%v]}`, origin[0], origin[1]))
}

// publish ingests a point layer through the real pipeline and codec.
func (b *bundle) publish(pts map[string]orb.Point) string {
	b.t.Helper()
	if err := b.led.SetSection(b.ctx, "water", "Water", 0); err != nil {
		b.t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{
		"layer_id": layerID, "section_key": "water", "name": "Bores", "description": "Test bores", "schema_version": "1",
		"field_schema": map[string]any{"depth_m": map[string]any{"type": []string{"number", "null"}}},
		"units":        map[string]any{"depth_m": "m"}, "radius_max_m": 5000,
		"sources":       []map[string]any{{"source_variant_id": "v1", "provider": "Test Survey", "licence": "CC-BY-4.0", "attribution": "© Test"}},
		"jurisdictions": []string{"NSW"}, "geometry_types": []string{"Point"}, "coverage": nil,
	})
	def, err := ingest.ParseLayerDef(raw)
	if err != nil {
		b.t.Fatal(err)
	}
	sum, err := ingest.RunRows(b.ctx, ingest.Options{Layer: def, Store: b.store, Publisher: ingest.LedgerPublisher{Ledger: b.led}, TempDir: b.t.TempDir()},
		func(yield func(ingest.Row) error) error {
			n := int64(0)
			for id, p := range pts {
				n++
				if err := yield(ingest.Row{File: "test", Row: n, Feature: tiles.Feature{ID: id, Geometry: p, Properties: map[string]any{"depth_m": 12.5}}}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		b.t.Fatal(err)
	}
	return sum.ReleaseID
}

// query queues a 100 m query of the release.
func (b *bundle) query() uuid.UUID { return b.queryWithin(100) }

// queryWithin queues a query of the release within radiusM of the site.
func (b *bundle) queryWithin(radiusM float64) uuid.UUID {
	b.t.Helper()
	q, err := b.led.CreateQuery(b.ctx, ledger.Query{AccountID: b.account, IntegrationID: b.integ, SiteID: b.site,
		SiteGeometry: b.siteGeometry(), RadiusM: radiusM, LayerIDs: []string{layerID}, Frozen: b.frozen},
		ledger.QueryLimits{MaxQueued: 1000, MaxRetainedBytes: 1 << 30})
	if err != nil {
		b.t.Fatal(err)
	}
	return q.ID
}

func (b *bundle) get(id uuid.UUID) ledger.Query {
	b.t.Helper()
	q, err := b.led.Query(b.ctx, b.account, id)
	if err != nil {
		b.t.Fatal(err)
	}
	return q
}

// runner makes a runner over the bundle's ledger; engineStore (nil: the
// store itself) is what the engine reads tiles through.
func (b *bundle) runner(cfg jobs.Config, engineStore store.Store) *jobs.Runner {
	b.t.Helper()
	if engineStore == nil {
		engineStore = b.store
	}
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	cfg.TempDir, cfg.Logger = b.t.TempDir(), b.log
	eng := newEngine(b.t, engineStore, engine.Options{MemoryBudget: 16 << 20, Logger: b.log})
	return newRunner(b.t, cfg, b.led, eng, b.store)
}

// waitFor polls cond (bounded) until it holds: state, not time, is asserted.
func (b *bundle) waitFor(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *bundle) status(id uuid.UUID) string { return b.get(id).Status }

// gatedTiles holds every tile open until open is closed (or the opener's
// context ends), announcing each held open on opened.
type gatedTiles struct {
	store.Store
	opened chan struct{}
	open   chan struct{}
}

func newGate(s store.Store) *gatedTiles {
	return &gatedTiles{Store: s, opened: make(chan struct{}, 64), open: make(chan struct{})}
}

func (g *gatedTiles) Open(ctx context.Context, key string) (store.Object, error) {
	if strings.HasSuffix(key, ".parquet") {
		g.opened <- struct{}{}
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Store.Open(ctx, key)
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer = syncbuf.Buffer

func featureCount(t *testing.T, q ledger.Query) int64 {
	t.Helper()
	if q.ResultCount == nil {
		t.Fatalf("query %s has no count (status %s, outcome %+v)", q.ID, q.Status, q.Outcome)
	}
	return *q.ResultCount
}

// TestRunOnceRunsAQueryAndKeepsItsResult: the basic path, exactly: two of
// the three features lie within 100 m, and the result is stored.
func TestRunOnceRunsAQueryAndKeepsItsResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(jobs.Config{}, nil)
	id := b.query()
	if ran, err := r.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	q := b.get(id)
	if q.Status != ledger.QuerySucceeded || featureCount(t, q) != 2 || q.Attempts != 1 || q.ResultKey == nil {
		t.Fatalf("query %+v", q)
	}
	if _, err := b.store.Stat(b.ctx, *q.ResultKey); err != nil {
		t.Fatalf("result not stored: %v", err)
	}
	if ran, err := r.RunOnce(b.ctx); ran || err != nil {
		t.Fatalf("second RunOnce = %v, %v; the queue is empty", ran, err)
	}
}

// TestEmptyResultStoresNothing: a query that matches nothing succeeds with
// a count of 0 and its key recorded (retained, 0 bytes), and no object is
// stored under that key; releasing it deletes nothing and fails nothing.
func TestEmptyResultStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(jobs.Config{}, nil)
	id := b.queryWithin(5) // the nearest feature is 10 m away
	if ran, err := r.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	q := b.get(id)
	if q.Status != ledger.QuerySucceeded || featureCount(t, q) != 0 || q.ResultKey == nil || q.ResultBytes != 0 {
		t.Fatalf("query %+v", q)
	}
	if _, err := b.store.Stat(b.ctx, *q.ResultKey); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("an empty result was stored: %v", err)
	}
	if infos, err := b.store.List(b.ctx, "results/"); err != nil || len(infos) != 0 {
		t.Fatalf("results stored: %v %v", infos, err)
	}
	b.clk.Advance(25 * time.Hour)
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatalf("sweeping an empty result: %v", err)
	}
	if q := b.get(id); q.ResultKey != nil {
		t.Fatalf("not released at its expiry: %+v", q)
	}
}

// TestWaitAfterTheWorkerFinished: a Wait that begins only after this
// process's worker finished the query (Notify woke a worker quicker than
// the caller) reports it finished at once instead of waiting out its time;
// a query that finished elsewhere (here: never ran) still waits.
func TestWaitAfterTheWorkerFinished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(jobs.Config{}, nil)
	id := b.query()
	if ran, err := r.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	done := make(chan bool)
	go func() { _, ok := r.Wait(b.ctx, id, time.Hour); done <- ok }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("Wait reported the query not finished here")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Wait waited for a query that had finished")
	}
	ended, cancel := context.WithCancel(b.ctx)
	cancel()
	if _, ok := r.Wait(ended, uuid.New(), time.Hour); ok {
		t.Fatal("Wait reported an unknown query finished")
	}
}

// TestWaitHandsOverTheFinishedRow: a request waiting on its query gets the
// row the worker stored (POST /queries answers from it without reading it
// back), equal to what the ledger then holds.
func TestWaitHandsOverTheFinishedRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(jobs.Config{}, nil)
	id := b.query()
	type waited struct {
		q  ledger.Query
		ok bool
	}
	done := make(chan waited, 1)
	waiting := make(chan struct{})
	go func() {
		close(waiting)
		q, ok := r.Wait(b.ctx, id, time.Hour)
		done <- waited{q, ok}
	}()
	<-waiting
	// Let Wait register before the worker finishes (a Wait that comes
	// later is TestWaitAfterTheWorkerFinished's case).
	deadline := time.Now().Add(10 * time.Second)
	for !jobs.Waiting(r, id) {
		if time.Now().After(deadline) {
			t.Fatal("Wait never registered")
		}
		time.Sleep(time.Millisecond)
	}
	if ran, err := r.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	w := <-done
	if !w.ok || w.q.ID != id || w.q.Status != ledger.QuerySucceeded {
		t.Fatalf("Wait = %+v, %v", w.q, w.ok)
	}
	stored, err := b.led.Query(b.ctx, w.q.AccountID, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.q, stored) {
		t.Fatalf("handed over %+v\nledger holds %+v", w.q, stored)
	}
}

// TestTwoRunnersNeverRunTheSameQuery: two runners (replicas) with several
// workers each share one queue; every query runs exactly once.
func TestTwoRunnersNeverRunTheSameQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []uuid.UUID
	for range 16 {
		ids = append(ids, b.query())
	}
	r1 := b.runner(jobs.Config{Workers: 3, MaxRunning: 16}, nil)
	r2 := b.runner(jobs.Config{Workers: 3, MaxRunning: 16}, nil)
	r1.Start(b.ctx)
	r2.Start(b.ctx)
	r1.Notify()
	r2.Notify()
	b.waitFor("every query to finish", func() bool {
		for _, id := range ids {
			if b.status(id) != ledger.QuerySucceeded {
				return false
			}
		}
		return true
	})
	if err := errors.Join(r1.Stop(b.ctx), r2.Stop(b.ctx)); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if q := b.get(id); q.Attempts != 1 || featureCount(t, q) != 2 {
			t.Fatalf("query %s: %d attempts, count %v: claimed more than once", id, q.Attempts, q.ResultCount)
		}
	}
}

// TestMaxRunningHoldsAcrossRunners: with MaxRunning 1, a second runner
// does not claim the account's next query while the first one runs.
func TestMaxRunningHoldsAcrossRunners(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := newGate(b.store)
	r1 := b.runner(jobs.Config{MaxRunning: 1}, gate)
	r2 := b.runner(jobs.Config{MaxRunning: 1}, nil)
	first, second := b.query(), b.query()
	done := make(chan error, 1)
	go func() {
		_, err := r1.RunOnce(b.ctx)
		done <- err
	}()
	<-gate.opened // first is running, held on its tile
	if ran, err := r2.RunOnce(b.ctx); ran || err != nil {
		t.Fatalf("second runner claimed past MaxRunning: %v, %v", ran, err)
	}
	if s := b.status(second); s != ledger.QueryQueued {
		t.Fatalf("second query %s", s)
	}
	close(gate.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ran, err := r2.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("after the first finished: %v, %v", ran, err)
	}
	if b.status(first) != ledger.QuerySucceeded || b.status(second) != ledger.QuerySucceeded {
		t.Fatalf("statuses %s %s", b.status(first), b.status(second))
	}
}

// TestExpiredAttemptIsRequeuedAndCompletedByAnotherWorker: a worker that
// claimed a query and died leaves it running; once its attempt expires
// (fake clock) the janitor requeues it and another worker completes it.
func TestExpiredAttemptIsRequeuedAndCompletedByAnotherWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(jobs.Config{Attempt: time.Minute}, nil)
	id := b.query()
	if _, err := b.led.ClaimQuery(b.ctx, 4, time.Minute); err != nil { // the worker that dies
		t.Fatal(err)
	}
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if s := b.status(id); s != ledger.QueryRunning {
		t.Fatalf("requeued before its attempt expired: %s", s)
	}
	if ran, _ := r.RunOnce(b.ctx); ran {
		t.Fatal("a running query was claimed again")
	}
	b.clk.Advance(time.Minute + time.Second)
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if s := b.status(id); s != ledger.QueryQueued {
		t.Fatalf("after expiry: %s, want queued", s)
	}
	if ran, err := r.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	if q := b.get(id); q.Status != ledger.QuerySucceeded || q.Attempts != 2 || featureCount(t, q) != 2 {
		t.Fatalf("query %+v", q)
	}
}

// TestQueryFailingItsAttemptsIsFailed: MaxAttempts attempts that all
// expire fail the query (source_unavailable), instead of retrying forever.
func TestQueryFailingItsAttemptsIsFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(jobs.Config{Attempt: time.Minute, MaxAttempts: 2}, nil)
	id := b.query()
	for attempt := 1; attempt <= 2; attempt++ {
		if _, err := b.led.ClaimQuery(b.ctx, 4, time.Minute); err != nil {
			t.Fatalf("claim %d: %v", attempt, err)
		}
		b.clk.Advance(2 * time.Minute)
		if err := r.Sweep(b.ctx); err != nil {
			t.Fatal(err)
		}
		want := ledger.QueryQueued
		if attempt == 2 {
			want = ledger.QueryFailed
		}
		if s := b.status(id); s != want {
			t.Fatalf("after attempt %d: %s, want %s", attempt, s, want)
		}
	}
	q := b.get(id)
	if q.Attempts != 2 || len(q.Outcome) != 1 || q.Outcome[0].Reason != "source_unavailable" || q.Outcome[0].DataStatus != "unavailable" {
		t.Fatalf("failed query %+v", q)
	}
	if ran, _ := r.RunOnce(b.ctx); ran {
		t.Fatal("a failed query was claimed")
	}
}

// TestQueueTimeout: a query nobody claims within QueueLimit fails as
// queue_timeout.
func TestQueueTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(jobs.Config{QueueLimit: time.Minute}, nil)
	id := b.query()
	b.clk.Advance(time.Minute)
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if q := b.get(id); q.Status != ledger.QueryFailed || q.Outcome[0].Reason != "queue_timeout" {
		t.Fatalf("query %+v", q)
	}
}

// TestCancelledQueryIsNotRun: a query cancelled while queued is never
// claimed; one cancelled while running stops (long before its attempt
// would end) and keeps no result.
func TestCancelledQueryIsNotRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := newGate(b.store)
	r := b.runner(jobs.Config{}, gate)

	queued := b.query()
	if _, err := b.led.CancelOrRelease(b.ctx, b.account, queued); err != nil {
		t.Fatal(err)
	}
	if ran, err := r.RunOnce(b.ctx); ran || err != nil {
		t.Fatalf("a cancelled query was claimed: %v, %v", ran, err)
	}

	running := b.query()
	done := make(chan error, 1)
	go func() {
		ran, err := r.RunOnce(b.ctx)
		if err == nil && !ran {
			err = errors.New("nothing was claimed")
		}
		done <- err
	}()
	<-gate.opened // executing, held on its tile: only the cancellation can end it
	if _, err := b.led.CancelOrRelease(b.ctx, b.account, running); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if q := b.get(running); q.Status != ledger.QueryCancelled || q.ResultKey != nil {
		t.Fatalf("query %+v", q)
	}
	if infos, err := b.store.List(b.ctx, "results/"); err != nil || len(infos) != 0 {
		t.Fatalf("results stored: %v %v", infos, err)
	}
}

// TestRetentionSweepReleasesResults: the janitor deletes a result once
// Retain has passed on the (fake) clock, and not before.
func TestRetentionSweepReleasesResults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(jobs.Config{Retain: time.Hour}, nil)
	id := b.query()
	if ran, err := r.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	key := *b.get(id).ResultKey
	b.clk.Advance(time.Hour - time.Second)
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if q := b.get(id); q.ResultKey == nil {
		t.Fatal("released before its retention ended")
	}
	if _, err := b.store.Stat(b.ctx, key); err != nil {
		t.Fatalf("deleted before its retention ended: %v", err)
	}
	b.clk.Advance(time.Second)
	if err := r.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if q := b.get(id); q.ResultKey != nil || q.ResultBytes != 0 || q.Status != ledger.QuerySucceeded {
		t.Fatalf("after retention: %+v", q)
	}
	if _, err := b.store.Stat(b.ctx, key); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("result still stored: %v", err)
	}
}

// TestStopDrainsRunningAttempts: Stop lets an attempt in flight finish
// (its ctx has no deadline) and returns once every goroutine has exited;
// nothing is claimed afterwards.
func TestStopDrainsRunningAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := newGate(b.store)
	r := b.runner(jobs.Config{Workers: 2}, gate)
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	r.Start(ctx)
	id := b.query()
	r.Notify()
	<-gate.opened
	cancel() // as SIGTERM does: claiming ends, the attempt goes on
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop(context.Background()) }()
	close(gate.open)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if q := b.get(id); q.Status != ledger.QuerySucceeded || q.Attempts != 1 {
		t.Fatalf("drained query %+v", q)
	}
	later := b.query()
	r.Notify()
	if s := b.status(later); s != ledger.QueryQueued {
		t.Fatalf("claimed after Stop: %s", s)
	}
	if err := r.Stop(b.ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestStopRequeuesInterruptedAttempts: an attempt still running when
// Stop's ctx ends is interrupted and requeued - not failed, not lost, its
// attempt not counted - and another runner completes it.
func TestStopRequeuesInterruptedAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := newGate(b.store) // never opened: the attempt cannot finish
	r := b.runner(jobs.Config{Workers: 1}, gate)
	r.Start(b.ctx)
	id := b.query()
	r.Notify()
	<-gate.opened
	ctx, cancel := context.WithCancel(b.ctx)
	cancel() // no time left to drain
	if err := r.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if q := b.get(id); q.Status != ledger.QueryQueued || q.Attempts != 0 || q.Outcome != nil {
		t.Fatalf("interrupted query %+v", q)
	}
	if strings.Contains(b.logs.String(), "query failed") {
		t.Fatalf("an interrupted attempt was logged as a failure:\n%s", b.logs)
	}
	other := b.runner(jobs.Config{}, nil)
	if ran, err := other.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	if q := b.get(id); q.Status != ledger.QuerySucceeded || q.Attempts != 1 || featureCount(t, q) != 2 {
		t.Fatalf("query %+v", q)
	}
}

// TestStopWithoutStart is harmless.
func TestStopWithoutStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.runner(jobs.Config{}, nil).Stop(b.ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMissingTileIsLogged: a tile missing from the store answers the
// layer source_unavailable and logs a WARN naming the layer, release and
// tile.
func TestMissingTileIsLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	infos, err := b.store.List(b.ctx, "releases/"+layerID+"/"+b.release+"/tiles/")
	if err != nil || len(infos) == 0 {
		t.Fatalf("tiles: %v %v", infos, err)
	}
	for _, in := range infos {
		if err := b.store.Delete(b.ctx, in.Key); err != nil {
			t.Fatal(err)
		}
	}
	r := b.runner(jobs.Config{}, nil)
	id := b.query()
	if ran, err := r.RunOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	q := b.get(id)
	if q.Status != ledger.QueryFailed || q.Outcome[0].DataStatus != "unavailable" || q.Outcome[0].Reason != "source_unavailable" {
		t.Fatalf("query %+v", q)
	}
	var warn string
	for _, line := range strings.Split(b.logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "tile unavailable") {
			warn = line
		}
	}
	for _, want := range []string{"layer_id=" + layerID, "release_id=" + b.release, "tile_key=releases/" + layerID + "/" + b.release + "/tiles/", "err="} {
		if !strings.Contains(warn, want) {
			t.Fatalf("WARN line %q lacks %q; log:\n%s", warn, want, b.logs)
		}
	}
	named := false
	for _, in := range infos {
		named = named || strings.Contains(warn, "tile_key="+in.Key+" ")
	}
	if !named {
		t.Fatalf("WARN line %q names none of the missing tiles %v", warn, infos)
	}
}

// TestConfigValidate: New refuses a bad value with an error naming the
// field (not a panic); zero takes the default.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   jobs.Config
		field string
	}{
		{jobs.Config{Poll: -time.Millisecond}, "Poll"},
		{jobs.Config{Workers: -1}, "Workers"},
		{jobs.Config{MaxRunning: -4}, "MaxRunning"},
		{jobs.Config{MaxAttempts: -1}, "MaxAttempts"},
		{jobs.Config{Attempt: -time.Second}, "Attempt"},
		{jobs.Config{QueueLimit: -time.Second}, "QueueLimit"},
		{jobs.Config{Retain: -time.Hour}, "Retain"},
		{jobs.Config{Sweep: -time.Second}, "Sweep"},
		{jobs.Config{ReportWorkers: -1}, "ReportWorkers"},
		{jobs.Config{ReportAttempt: -time.Second}, "ReportAttempt"},
		{jobs.Config{MaxReportBytes: -1}, "MaxReportBytes"},
		{jobs.Config{MaxReportBytes: jobs.MaxPDFBytes + 1}, "MaxReportBytes"},
	} {
		r, err := jobs.New(tc.cfg, nil, nil, nil)
		if r != nil || !errors.Is(err, jobs.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, %v, want ErrInvalidConfig naming %s", tc.cfg, r, err, tc.field)
		}
	}
	r, err := jobs.New(jobs.Config{}, nil, nil, nil)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if !reflect.DeepEqual(r.Config(), jobs.Config{}.WithDefaults()) {
		t.Fatalf("the runner enforces %+v, not the defaults", r.Config())
	}
}

// TestConfigWithDefaults: every zero field takes its documented default and
// a set field is kept.
func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	d := jobs.Config{}.WithDefaults()
	want := jobs.Config{Workers: 2, MaxRunning: 4, Attempt: 120 * time.Second, QueueLimit: 10 * time.Minute, Retain: 24 * time.Hour, WriteBehindBytes: 256 << 20,
		MaxAttempts: 3, ReportWorkers: 1, ReportAttempt: 10 * time.Minute, Lease: 5 * time.Second, MaxReportBytes: jobs.MaxPDFBytes,
		Poll: 500 * time.Millisecond, Sweep: 30 * time.Second, Logger: slog.Default()}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("defaults %+v, want %+v", d, want)
	}
	set := jobs.Config{Workers: 7, Lease: time.Minute, Logger: slog.New(slog.DiscardHandler)}.WithDefaults()
	if set.Workers != 7 || set.Lease != time.Minute || set.Logger == slog.Default() || set.MaxRunning != 4 {
		t.Fatalf("set fields not kept: %+v", set)
	}
}
