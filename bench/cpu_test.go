package bench

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestProcCPU: a single-threaded process's CPU time as procCPU reads it
// (from /proc/PID/sched where the kernel has it) agrees with its utime and
// stime ticks to within a few ticks, and is not zero.
func TestProcCPU(t *testing.T) {
	// A shell spending about a quarter second of CPU, then waiting.
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 5`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	var got time.Duration
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = procCPU(pid, false); got > 50*time.Millisecond {
			prev := got
			time.Sleep(100 * time.Millisecond)
			if got = procCPU(pid, false); got-prev < 5*time.Millisecond {
				break // the loop is over: sleeping
			}
		}
	}
	f := statFields(pid)
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, f)
	}
	inTicks := ticks(f[11:13])
	if got < 50*time.Millisecond || got < inTicks-30*time.Millisecond || got > inTicks+30*time.Millisecond {
		t.Fatalf("procCPU %v, the process's utime and stime %v", got, inTicks)
	}
	if r, ok := schedRuntime(pid); !ok {
		t.Log("no /proc/PID/sched here: procCPU reads 10 ms ticks")
	} else if d := r - got; d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Fatalf("procCPU %v, not the scheduler's run time %v", got, r)
	}
}

// The ledger's statement statistics (--ledger-statements) are summed by
// statement from a real PostgreSQL 15 log: a simple query, a statement's
// bind and execute messages together (one call), a statement written over
// several lines, and a message cut short at the end of the read left out.
func TestParseStatementStats(t *testing.T) {
	f, err := os.Open("testdata/ledger-statement-stats.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := parseStatementStats(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []statementCPU{
		{SQL: "SELECT pg_catalog.set_config('search_path', '', false);", Calls: 1, CPU: 365 * time.Microsecond},
		{SQL: "SELECT * FROM siteenv_admit_answered($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $1", Calls: 1, CPU: 337 * time.Microsecond},
		{SQL: "WITH fin AS ( UPDATE queries SET status = $18, outcome = $19, result_key = $20, result_byt", Calls: 1, CPU: 259 * time.Microsecond},
		{SQL: "SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force", Calls: 1, CPU: 14 * time.Microsecond},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d statements, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		if g.SQL != want[i].SQL || g.Calls != want[i].Calls || (g.CPU-want[i].CPU).Abs() > time.Microsecond {
			t.Errorf("statement %d: got %+v, want %+v", i, g, want[i])
		}
	}
}

// A pass's ledger cost is reported per query of the pass, WAL bytes in kB;
// an empty pass divides by one, not zero.
func TestLedgerCostPerQuery(t *testing.T) {
	c := ledgerCost{Trips: 110, Statements: 140, WALWrites: 70, WALSyncs: 1, WALFPI: 3, WALBytes: 660_000}
	if got, want := c.perQuery(100), "1.10 round trips, 1.40 statements; WAL 0.70 writes, 0.01 flushes, 0.03 full-page images, 6.6 kB"; got != want {
		t.Errorf("perQuery(100) = %q, want %q", got, want)
	}
	if got := c.perQuery(0); got != "110.00 round trips, 140.00 statements; WAL 70.00 writes, 1.00 flushes, 3.00 full-page images, 660.0 kB" {
		t.Errorf("perQuery(0) = %q", got)
	}
}
