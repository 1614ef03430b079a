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

// procCPU is a process's utime and stime (and, with reaped, its waited-for
// children's) from /proc/PID/stat.
func procCPU(pid int, reaped bool) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	// After "(comm)": state ppid ... utime is the 12th field, then
	// stime, cutime, cstime.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0
	}
	n := 2
	if reaped {
		n = 4
	}
	var ticks int64
	for _, s := range f[11 : 11+n] {
		v, _ := strconv.ParseInt(s, 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * clockTick
}
