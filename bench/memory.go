package bench

import (
	"bufio"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// boundHeap gives the bench process a soft memory limit that leaves room
// for PostgreSQL's buffer cache and backends: without one the collector
// lets the heap grow to twice the engine's live data while the PostGIS
// load churns through tiles, which at the large scale is more than the
// machine has. A limit set by the caller wins (callerSet: GOMEMLIMIT, which
// the runtime reads only at start-up, or one set in process). It returns
// the limit (0: none set) and a function restoring the previous one.
//
// The limit is also at most the engine's budget plus benchHeadroom, so the
// bench process stays within what it was given whatever the data's size.
func boundHeap(features, engineBudget int64, callerSet bool, log *slog.Logger) (int64, func()) {
	total := memTotal()
	// SetMemoryLimit(-1) reads the limit: below MaxInt64, one was set.
	if total == 0 || callerSet || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return 0, func() {}
	}
	reserve := max(total/8, 2<<30) // PostgreSQL backends, page cache, the OS
	limit := total - sharedBuffersMiB(features)<<20 - reserve
	if engineBudget < total {
		limit = min(limit, engineBudget+benchHeadroom)
	}
	if limit < 1<<30 {
		return 0, func() {}
	}
	prev := debug.SetMemoryLimit(limit)
	log.Info("bench: Go memory limit", "bytes", limit, "machine_bytes", total)
	return limit, func() { debug.SetMemoryLimit(prev) }
}

// benchHeadroom is the bench process's memory beyond the engine's budget:
// shards in use beyond it, a shard being loaded, the server's results and
// buffers, the clients.
const benchHeadroom = 3 << 30

// memTotal is the machine's memory in bytes (Linux), or 0 if unknown.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// checkFits refuses to go on when the loaded engine alone takes most of the
// memory the bench may use: PostGIS would then run out of memory or swap,
// and the figures would measure the machine, not the software.
func checkFits(resident, limit int64, features int64) error {
	if limit == 0 || resident <= limit*9/10 {
		return nil
	}
	return fmt.Errorf("bench: the engine holds %.1f GiB for %d features, more than this machine can spare beside PostgreSQL's %d MiB buffer cache (Go limit %.1f GiB); use a smaller --scale or a larger machine",
		float64(resident)/(1<<30), features, sharedBuffersMiB(features), float64(limit)/(1<<30))
}
