package faultsuite

import (
	"strconv"
	"testing"
	"time"
)

// TestKill9DuringReportBuilds: reports are ordered, the server is killed
// with SIGKILL while one of them is being built, and a new server starts on
// the same database and store. The build cut off holds a claim nobody will
// finish; once its attempt expires the janitor requeues it and it is built
// again. Every report must end completed with exactly one revision and one
// PDF, each order charged exactly once and never refunded, and `siteenv
// admin ledger check` must pass.
func TestKill9DuringReportBuilds(t *testing.T) {
	t.Parallel()
	const (
		n     = 4
		price = 30
	)
	dsn := newDatabase(t)
	// The killed build is taken over when its lease lapses (seconds), not
	// when its attempt would end: the attempt stays long enough that a
	// build on a loaded machine is not cut off by its own deadline.
	timings := []string{"SITEENV_REPORT_ATTEMPT=60s", "SITEENV_QUERY_SWEEP=1s"}
	e := env{dataDir: scratchDir(t), dsn: dsn, extra: timings}
	l := openLedger(t, dsn)
	loadCatalogue(t, e, l)
	cli(t, e, "admin", "config", "set", "report-price", strconv.Itoa(price))
	tn := newTenant(t, l, "Report crash", tenantCredits)
	srv := startServer(t, e)
	addr := srv.addr
	c := newClient(t, func() string { return addr })

	reports := make([]string, n)
	for i := range n {
		site := createSite(t, c, tn.key, 300+i, nil)
		res := c.do("POST", "/reports", tn.key, map[string]any{"site_id": site}, "Idempotency-Key", "crash-report-"+strconv.Itoa(i))
		if res.status != 202 {
			t.Fatalf("order %d: %d %s", i, res.status, res.body)
		}
		m := res.json(t)
		if m["credits_charged"] != float64(price) {
			t.Fatalf("order %d charged %v", i, m["credits_charged"])
		}
		reports[i] = m["report_id"].(string)
	}

	// Kill as soon as a build is seen running: that build is cut off
	// between its claim and its revision.
	var cut string
	if !pollUntil(60*time.Second, 5*time.Millisecond, func() bool {
		for _, id := range reports {
			if r := c.do("GET", "/reports/"+id, tn.key, nil); r.json(t)["report"].(map[string]any)["status"] == "running" {
				cut = id
				return true
			}
		}
		return false
	}) {
		t.Fatal("no report build was seen running")
	}
	srv.kill9()
	t.Logf("killed the server while report %s was being built", cut)

	srv2 := startServer(t, e)
	addr = srv2.addr
	final := map[string]map[string]any{}
	if !pollUntil(90*time.Second, 200*time.Millisecond, func() bool {
		for _, id := range reports {
			rep := c.do("GET", "/reports/"+id, tn.key, nil).json(t)["report"].(map[string]any)
			final[id] = rep
			if rep["status"] == "queued" || rep["status"] == "running" {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("reports not built within 90 s after the restart: %v", final)
	}
	for _, id := range reports {
		rep := final[id]
		revs := rep["revisions"].(map[string]any)
		arts, _ := rep["artifacts"].([]any)
		if rep["status"] != "completed" || revs["count"] != float64(1) || len(arts) != 1 {
			t.Errorf("report %s: status %v, %v revisions, %d artifacts (reason %v)", id, rep["status"], revs["count"], len(arts), rep["reason_code"])
		}
	}

	hist := c.do("GET", "/purchases?limit=100&kind=report", tn.key, nil).json(t)
	items, _ := hist["purchases"].([]any)
	if len(items) != n {
		t.Errorf("%d report purchases, want %d", len(items), n)
	}
	for _, it := range items {
		p := it.(map[string]any)
		if p["credits_charged"] != float64(price) || p["credits_refunded"] != float64(0) {
			t.Errorf("purchase %v: charged %v, refunded %v", p["purchase_id"], p["credits_charged"], p["credits_refunded"])
		}
	}
	u := c.do("GET", "/usage", tn.key, nil).json(t)["credits"].(map[string]any)
	if u["account_balance"] != float64(tenantCredits-n*price) {
		t.Errorf("balance after %d reports at %d: %v", n, price, u)
	}
	if out := cli(t, e, "admin", "ledger", "check"); out["ok"] != true {
		t.Errorf("siteenv admin ledger check: %v", out)
	}
}
