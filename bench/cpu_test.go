package bench

import (
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
