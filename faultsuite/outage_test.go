package faultsuite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"siteenv/ledger/pgembed"
)

// loadClients sends requests from a few goroutines until stopped and sorts
// every answer into phases, so a test can ask what clients saw while the
// database was down and after it came back.
type loadClients struct {
	t     *testing.T
	c     *client
	key   string
	phase atomic.Int32
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu   sync.Mutex
	seen map[int32][]outcome // by phase
}

type outcome struct {
	worker int
	status int
	code   string
	err    error
	body   string
}

// startLoad starts workers that send, in turn, requests that touch the
// database without counting against the per-minute read budget (POST
// /locations/resolve), and GET /context at a pace that stays under it.
func startLoad(t *testing.T, c *client, key string, workers int) *loadClients {
	lc := &loadClients{t: t, c: c, key: key, stop: make(chan struct{}), seen: map[int32][]outcome{}}
	for w := range workers {
		lc.wg.Add(1)
		go func() {
			defer lc.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-lc.stop:
					return
				default:
				}
				phase := lc.phase.Load()
				var res result
				var err error
				if w == 0 && i%8 == 0 {
					res, err = c.try("GET", "/context", key, nil)
				} else {
					res, err = c.try("POST", "/locations/resolve", key, map[string]any{"location": point(w)})
				}
				o := outcome{worker: w, err: err, status: res.status, code: res.problem().Code}
				if res.status >= 400 {
					o.body = string(res.body)
				}
				lc.mu.Lock()
				lc.seen[phase] = append(lc.seen[phase], o)
				lc.mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	return lc
}

// setPhase moves the clients to phase p (answers from now on count there).
func (lc *loadClients) setPhase(p int32) { lc.phase.Store(p) }

// waitFor polls until f holds for the outcomes of phase p (bounded).
func (lc *loadClients) waitFor(p int32, timeout time.Duration, f func([]outcome) bool) bool {
	return pollUntil(timeout, 20*time.Millisecond, func() bool {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		return f(lc.seen[p])
	})
}

func (lc *loadClients) outcomes(p int32) []outcome {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return append([]outcome(nil), lc.seen[p]...)
}

func (lc *loadClients) close() {
	lc.once.Do(func() { close(lc.stop) })
	lc.wg.Wait()
}

func countOK(os []outcome) int {
	n := 0
	for _, o := range os {
		if o.err == nil && o.status/100 == 2 {
			n++
		}
	}
	return n
}

// checkOutage fails for any answer that is neither a success nor the
// contract's retryable outage (503 service_unavailable; the response
// validation already checked retryable, Retry-After and the Problem shape).
func checkOutage(t *testing.T, phase string, os []outcome) {
	t.Helper()
	bad := 0
	for _, o := range os {
		switch {
		case o.err == nil && o.status/100 == 2:
			continue
		case o.err == nil && o.status == 503 && o.code == "service_unavailable":
			continue
		case o.err != nil:
			t.Errorf("%s: worker %d: no HTTP answer: %v", phase, o.worker, o.err)
		default:
			t.Errorf("%s: worker %d: %d %s, want a success or 503 service_unavailable: %s", phase, o.worker, o.status, o.code, o.body)
		}
		if bad++; bad == 20 {
			t.Errorf("%s: further bad answers not shown", phase)
			break
		}
	}
}

// TestDatabaseStopStartUnderLoad: with the server pointed at a PostgreSQL the
// test controls (SITEENV_DATABASE_URL), the database is stopped while clients
// send requests: they get 503 service_unavailable, retryable, with
// Retry-After; once it is started again requests succeed, with no restart of
// the service.
func TestDatabaseStopStartUnderLoad(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pgDir := filepath.Join(scratchDir(t), "pg")
	cluster, err := pgembed.Start(ctx, pgDir, pgembed.Options{Database: "siteenv", Ephemeral: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })
	dsn := cluster.DSN("siteenv")
	e := env{dataDir: scratchDir(t), dsn: dsn}
	l := openLedger(t, dsn)
	tn := newTenant(t, l, "Outage client", tenantCredits)
	l.Close()
	srv := startServer(t, e)
	c := newClient(t, func() string { return srv.addr })

	lc := startLoad(t, c, tn.key, 3)
	defer lc.close()
	if !lc.waitFor(0, 30*time.Second, func(os []outcome) bool { return countOK(os) >= 6 }) {
		t.Fatalf("no successes before the outage: %+v", lc.outcomes(0))
	}

	// Down: stop PostgreSQL (pg_ctl stop -m fast) under load.
	lc.setPhase(1)
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	lc.setPhase(2)
	// Every client sees the outage several times while it lasts.
	if !lc.waitFor(2, 30*time.Second, func(os []outcome) bool {
		per := map[int]int{}
		for _, o := range os {
			per[o.worker]++
		}
		return per[0] >= 3 && per[1] >= 3 && per[2] >= 3
	}) {
		t.Fatalf("clients got too few answers while the database was down: %d", len(lc.outcomes(2)))
	}
	down := lc.outcomes(2)
	for _, o := range down {
		if o.err != nil || o.status != 503 || o.code != "service_unavailable" {
			t.Errorf("database down: worker %d got %d %s %v, want 503 service_unavailable: %s", o.worker, o.status, o.code, o.err, o.body)
		}
	}

	// Up again: the same cluster, same socket; no restart of the service.
	lc.setPhase(3)
	cluster, err = pgembed.Start(ctx, pgDir, pgembed.Options{Database: "siteenv", Ephemeral: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if !cluster.Owned() {
		t.Fatal("the cluster was running again before the test started it")
	}
	lc.setPhase(4)
	recovered := lc.waitFor(4, 30*time.Second, func(os []outcome) bool {
		per := map[int]int{}
		for _, o := range os {
			if o.err == nil && o.status/100 == 2 {
				per[o.worker]++
			}
		}
		return per[0] >= 2 && per[1] >= 2 && per[2] >= 2
	})
	lc.close()
	if !recovered {
		t.Fatalf("requests did not succeed within 30s of the database's return: %s", summarize(lc.outcomes(4)))
	}
	if !srv.running() {
		t.Fatal("the server exited during the outage")
	}
	for p, name := range map[int32]string{0: "before", 1: "stopping", 3: "starting", 4: "after"} {
		checkOutage(t, name, lc.outcomes(p))
	}
	t.Logf("answers: before %s; stopping %s; down %s; starting %s; after %s",
		summarize(lc.outcomes(0)), summarize(lc.outcomes(1)), summarize(down), summarize(lc.outcomes(3)), summarize(lc.outcomes(4)))
}

func summarize(os []outcome) string {
	counts := map[string]int{}
	for _, o := range os {
		k := fmt.Sprint(o.status)
		if o.err != nil {
			k = "no-answer"
		} else if o.code != "" {
			k += " " + o.code
		}
		counts[k]++
	}
	return fmt.Sprint(counts)
}
