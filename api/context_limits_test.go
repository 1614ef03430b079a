package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/jobs"
	"siteenv/store"
)

// TestContextLimitsAreTheEnforcedValues: GET /context reports the runner's
// configured limits, not copies of the defaults, and the runner enforces
// the very value reported (max_running_queries 1: a second query of the
// account is not claimed while the first runs).
func TestContextLimitsAreTheEnforcedValues(t *testing.T) {
	t.Parallel()
	h := setup(t)
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{}, 16)
	eng := newEngine(t, stalledTiles{st, opened}, engine.Options{MemoryBudget: 16 << 20})
	runner := newRunner(t, jobs.Config{MaxRunning: 1, Attempt: 90 * time.Second, Retain: 2 * time.Hour, QueueLimit: 5 * time.Minute,
		Poll: 20 * time.Millisecond, TempDir: t.TempDir()}, h.led, eng, st)
	api.SetQueryBackend(h.srv, st, runner)
	qh := &queryHarness{harness: h, store: st, runner: runner}
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b": east(10)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")

	lim := qh.do("GET", "/context", k.Secret, nil).json(t)["limits"].(map[string]any)
	for name, want := range map[string]float64{
		"max_running_queries": 1, "query_attempt_timeout_seconds": 90, "result_retention_seconds": 7200,
		"query_queue_timeout_seconds": 300, "max_radius_m": engine.MaxRadiusM,
		"max_query_features": engine.DefaultMaxFeatures, "max_query_result_bytes": engine.DefaultMaxBytes,
	} {
		if lim[name] != want {
			t.Errorf("limits.%s = %v, want %v", name, lim[name], want)
		}
	}

	body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]}, "layer_ids": []string{"nsw.bores"}, "radius_m": 100}
	qh.query(k.Secret, body)
	qh.query(k.Secret, body)
	ctx, cancel := context.WithCancel(qh.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := runner.RunOnce(ctx)
		done <- err
	}()
	<-opened // the first query runs, held on its tile
	if ran, err := runner.RunOnce(qh.ctx); ran || err != nil {
		t.Fatalf("a second query ran past max_running_queries 1: %v, %v", ran, err)
	}
	u := qh.do("GET", "/context", k.Secret, nil).json(t)["usage"].(map[string]any)
	if u["running_queries"] != float64(1) || u["queued_queries"] != float64(1) {
		t.Fatalf("usage %v", u)
	}
	cancel() // the held attempt is interrupted and requeued
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	u = qh.do("GET", "/context", k.Secret, nil).json(t)["usage"].(map[string]any)
	if u["running_queries"] != float64(0) || u["queued_queries"] != float64(2) {
		t.Fatalf("after the interrupted attempt: usage %v", u)
	}
}
