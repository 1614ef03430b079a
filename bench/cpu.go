package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTimes is CPU time used (user and system) by the bench process (the
// server and its clients, or the PostGIS side's clients) and by each
// PostgreSQL cluster the bench runs. Over a pass, divided by its queries,
// it is what a query costs the machine wherever it runs: on a shared or
// loaded machine the latencies measure the wait for a core, the CPU does
// not, and with 2 cores an idle machine's throughput is at most 2 s of
// CPU a second over the CPU a query.
type cpuTimes struct{ Self, Ledger, PostGIS time.Duration }

func (c cpuTimes) minus(o cpuTimes) cpuTimes {
	return cpuTimes{c.Self - o.Self, c.Ledger - o.Ledger, c.PostGIS - o.PostGIS}
}

// perQuery formats c over n queries: the bench process, the ledger and
// PostGIS, in ms.
func (c cpuTimes) perQuery(n int) string {
	if n == 0 || c == (cpuTimes{}) {
		return "-"
	}
	f := func(d time.Duration) float64 { return ms(d) / float64(n) }
	return fmt.Sprintf("%.3f + %.3f + %.3f ms", f(c.Self), f(c.Ledger), f(c.PostGIS))
}

// cpuMeter reads cpuTimes: the clusters by their data directories.
type cpuMeter struct{ ledger, postgis string }

func (m cpuMeter) now() cpuTimes {
	var ru syscall.Rusage
	var self time.Duration
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	kids := parentPIDs()
	return cpuTimes{Self: self, Ledger: clusterCPU(m.ledger, kids), PostGIS: clusterCPU(m.postgis, kids)}
}

// clusterCPU is the CPU a cluster used so far: its postmaster's, its
// children's that exited (the postmaster's cutime and cstime) and its
// live children's (0 when the cluster is not running).
func clusterCPU(dataDir string, kids map[int][]int) time.Duration {
	if dataDir == "" {
		return 0
	}
	root := postmasterPID(dataDir + "/postmaster.pid")
	if root == 0 {
		return 0
	}
	total := procCPU(root, true)
	for _, pid := range kids[root] {
		total += procCPU(pid, false)
	}
	return total
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times (100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// procCPU is a process's CPU time (and, with reaped, its waited-for
// children's): a single-threaded process's scheduler run time from
// /proc/PID/sched, to the microsecond, when the kernel reports it, else
// its utime and stime from /proc/PID/stat; the children's always from
// /proc/PID/stat. The ticks
// alone were too coarse for a pass of a few hundred small queries: 10 ms
// a process, 0.025 ms a query over 400, on each of a cluster's dozen
// busy processes.
func procCPU(pid int, reaped bool) time.Duration {
	// After "(comm)": state ppid ... utime is the 12th field, then
	// stime, cutime, cstime.
	f := statFields(pid)
	if len(f) < 15 {
		return 0
	}
	// /proc/PID/sched counts the process's first thread only: used for a
	// single-threaded process (PostgreSQL's), never for this one.
	own, ok := time.Duration(0), false
	if len(f) > 17 && f[17] == "1" {
		own, ok = schedRuntime(pid)
	}
	if !ok {
		own = ticks(f[11:13])
	}
	if reaped {
		own += ticks(f[13:15])
	}
	return own
}

// statFields are the fields of /proc/PID/stat after "(comm)", which may
// hold spaces and parentheses: state, ppid, ... (nil when unreadable).
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// ticks sums stat fields counted in clock ticks.
func ticks(fields []string) (d time.Duration) {
	for _, s := range fields {
		v, _ := strconv.ParseInt(s, 10, 64)
		d += time.Duration(v) * clockTick
	}
	return d
}

// schedRuntime is a process's se.sum_exec_runtime from /proc/PID/sched
// (milliseconds with six decimals; kernels built with CONFIG_SCHED_DEBUG).
func schedRuntime(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/sched")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "se.sum_exec_runtime"); ok {
			_, v, ok := strings.Cut(rest, ":")
			if !ok {
				return 0, false
			}
			ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, false
			}
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return 0, false
}
