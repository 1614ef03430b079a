package faultsuite

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"siteenv/ledger/pgembed"
)

// embeddedPGData is the data directory of the embedded cluster of a data dir.
func embeddedPGData(t *testing.T, dataDir string) string {
	t.Helper()
	d := filepath.Join(dataDir, "pg", "data")
	if real, err := filepath.EvalSymlinks(d); err == nil {
		return real
	}
	return d
}

// postmasterPID reads the first line of postmaster.pid (0 if absent).
func postmasterPID(pgData string) int {
	b, err := os.ReadFile(filepath.Join(pgData, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// processesIn lists live (not zombie) processes working in dir: every
// PostgreSQL process works in its data directory.
func processesIn(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err != nil || cwd != dir {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid runs and is not a zombie (this container's init
// does not reap orphans, so a killed postmaster stays a zombie).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// cleanupEmbedded makes sure no PostgreSQL of dataDir outlives the test,
// whatever the server did: it stops a cluster left behind (adopting it) and
// kills any process still working in its data directory.
func cleanupEmbedded(t *testing.T, dataDir string) {
	t.Cleanup(func() {
		pgData := embeddedPGData(t, dataDir)
		if len(processesIn(pgData)) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := pgembed.Start(ctx, filepath.Join(dataDir, "pg"), pgembed.Options{Logger: quietLogger()}); err == nil {
			_ = c.Stop(ctx)
		}
		for _, pid := range processesIn(pgData) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// assertClusterStopped fails unless no process of the embedded cluster runs.
func assertClusterStopped(t *testing.T, pgData string) {
	t.Helper()
	// pg_ctl stop -w returned before serve exited, but its helpers may take
	// a moment to leave: a bounded poll, then a hard check.
	pollUntil(10*time.Second, 50*time.Millisecond, func() bool { return len(processesIn(pgData)) == 0 })
	if pids := processesIn(pgData); len(pids) > 0 {
		t.Fatalf("PostgreSQL processes %v of %s still run after the server exited", pids, pgData)
	}
	if pid := postmasterPID(pgData); pid != 0 {
		t.Fatalf("postmaster.pid (pid %d) remains after the server exited", pid)
	}
}

// TestEmbeddedCrashThenSIGTERMStopsCluster: serve starts its embedded
// PostgreSQL and is killed with SIGKILL, which leaves the cluster running. A
// new serve re-attaches to it, and must then own it: on SIGTERM it stops the
// cluster, and no process of it remains.
func TestEmbeddedCrashThenSIGTERMStopsCluster(t *testing.T) {
	t.Parallel()
	e := env{dataDir: scratchDir(t)}
	cleanupEmbedded(t, e.dataDir)
	pgData := embeddedPGData(t, e.dataDir)

	srv := startServer(t, e)
	c := newClient(t, func() string { return srv.addr })
	// An unknown key is looked up in the database: a 401 proves it answers.
	if r := c.do("GET", "/context", "sk_unknown_key", nil); r.status != 401 {
		t.Fatalf("with the embedded database: %d %s", r.status, r.body)
	}
	pid := postmasterPID(pgData)
	srv.kill9()
	if !alive(pid) {
		t.Fatalf("the embedded postmaster (pid %d) died with the server; the crash case cannot be tested", pid)
	}

	srv2 := startServer(t, e)
	c2 := newClient(t, func() string { return srv2.addr })
	if r := c2.do("GET", "/context", "sk_unknown_key", nil); r.status != 401 {
		t.Fatalf("after re-attaching: %d %s", r.status, r.body)
	}
	if got := postmasterPID(pgData); got != pid {
		t.Fatalf("the second server restarted PostgreSQL (pid %d, was %d) instead of re-attaching", got, pid)
	}
	srv2.terminate()
	assertClusterStopped(t, pgData)
}

// TestEmbeddedPostmasterKilledUnderServe: the embedded postmaster is killed
// with SIGKILL under a running server. While it is down requests answer 503
// service_unavailable (retryable, Retry-After); the server's supervisor
// starts PostgreSQL again and requests succeed, with no restart of the
// server. SIGTERM then stops the restarted cluster too.
func TestEmbeddedPostmasterKilledUnderServe(t *testing.T) {
	t.Parallel()
	e := env{dataDir: scratchDir(t)}
	cleanupEmbedded(t, e.dataDir)
	pgData := embeddedPGData(t, e.dataDir)

	srv := startServer(t, e)
	acct := cli(t, e, "admin", "account", "create", "--name", "Embedded", "--credits", "100")
	key := cli(t, e, "admin", "key", "create", "--account", acct["account_id"].(string), "--scopes", "all")
	c := newClient(t, func() string { return srv.addr })

	lc := startLoad(t, c, key["key"].(string), 2)
	defer lc.close()
	if !lc.waitFor(0, 30*time.Second, func(os []outcome) bool { return countOK(os) >= 4 }) {
		t.Fatalf("no successes before the kill: %s", summarize(lc.outcomes(0)))
	}
	old := postmasterPID(pgData)
	lc.setPhase(1)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Down, then back: at least one outage answer, then successes again.
	recovered := lc.waitFor(1, 60*time.Second, func(os []outcome) bool {
		sawOutage, per := false, map[int]int{}
		for _, o := range os {
			if o.status == 503 {
				sawOutage = true
			}
			if sawOutage && o.err == nil && o.status/100 == 2 {
				per[o.worker]++
			}
		}
		return per[0] >= 2 && per[1] >= 2
	})
	lc.close()
	during := lc.outcomes(1)
	t.Logf("answers after the kill: %s", summarize(during))
	if !recovered {
		t.Fatalf("requests did not succeed again within 60s of the postmaster's death: %s", summarize(during))
	}
	checkOutage(t, "postmaster killed", during)
	if !srv.running() {
		t.Fatal("the server exited")
	}
	if pid := postmasterPID(pgData); pid == old || !alive(pid) {
		t.Fatalf("postmaster pid %d after restart (was %d)", pid, old)
	}
	if !strings.Contains(srv.stderr.String(), "embedded PostgreSQL is not running; restarting it") {
		t.Error("the server did not log the restart")
	}
	srv.terminate()
	assertClusterStopped(t, pgData)
}
