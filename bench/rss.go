package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Peak memory of every process a bench starts. The bench's own peak is
// its VmHWM (exact). A PostgreSQL cluster is a postmaster and its
// children, which share the buffer cache: its figure is the largest sum of
// their proportional set sizes (Pss, shared pages divided among the
// processes mapping them, so the sum counts each page once) seen by a
// sampler every pssSample. The sampler also guards the machine, once a
// second: when the
// memory available to new allocations (MemAvailable) falls under
// minAvailable, it cancels the run, which then fails with ErrLowMemory
// instead of pushing the machine into the OOM killer.

// ErrLowMemory ends a bench whose machine ran short of memory.
var ErrLowMemory = errors.New("bench: the machine's available memory fell under the guard")

// minAvailable is the guard: the bench stops when less is available.
const minAvailable = 2 << 30

// rssSample is how often the watch checks the machine's available memory,
// and pssSample how often it sums the clusters' Pss: reading smaps_rollup
// walks a process's page tables, which for two clusters' thirty processes
// took about 7% of a core at one sample a second, taken from the passes it
// measures.
const (
	rssSample = time.Second
	pssSample = 5 * time.Second
)

// memWatch samples the resident memory of the bench's processes.
type memWatch struct {
	log    *slog.Logger
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	mu struct {
		sync.Mutex
		groups   []*procGroup
		added    bool  // a group was added since the last Pss sum
		minAvail int64 // lowest MemAvailable seen (0: unknown)
	}
}

// procGroup is one process tree the watch follows: a PostgreSQL cluster,
// found through its postmaster.pid (re-read each sample: the cluster may
// be restarted).
type procGroup struct {
	name    string
	pidFile string
	peak    int64 // largest Pss sum seen
	procs   int   // processes at that peak
}

// startMemWatch starts sampling; ctx's derived context (returned) is
// cancelled with ErrLowMemory when the machine runs short. Stop ends it.
func startMemWatch(ctx context.Context, log *slog.Logger) (*memWatch, context.Context) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &memWatch{log: log, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w, ctx
}

// watchCluster adds the PostgreSQL cluster whose data directory is
// dataDir (pgembed's <dir>/data).
func (w *memWatch) watchCluster(name, dataDir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.groups = append(w.mu.groups, &procGroup{name: name, pidFile: filepath.Join(dataDir, "postmaster.pid")})
	w.mu.added = true
}

func (w *memWatch) run() {
	defer close(w.done)
	t := time.NewTicker(rssSample)
	defer t.Stop()
	for i := 0; ; i++ {
		w.sample(i%int(pssSample/rssSample) == 0)
		select {
		case <-w.stop:
			w.sample(true)
			return
		case <-t.C:
		}
	}
}

// sample checks the machine's available memory and, with clusters or
// when a cluster was added since, sums each cluster's Pss.
func (w *memWatch) sample(clusters bool) {
	avail := memAvailable()
	w.mu.Lock()
	groups := slices.Clone(w.mu.groups)
	clusters = clusters || w.mu.added
	w.mu.added = false
	if avail > 0 && (w.mu.minAvail == 0 || avail < w.mu.minAvail) {
		w.mu.minAvail = avail
	}
	w.mu.Unlock()
	if avail > 0 && avail < minAvailable {
		w.log.Error("bench: the machine is short of memory; stopping the run", "available_bytes", avail)
		w.cancel(fmt.Errorf("%w (%d MiB available, guard %d MiB)", ErrLowMemory, avail>>20, int64(minAvailable)>>20))
	}
	if !clusters || len(groups) == 0 {
		return
	}
	parents := parentPIDs()
	for _, g := range groups {
		root := postmasterPID(g.pidFile)
		if root <= 0 {
			continue
		}
		pids := append([]int{root}, parents[root]...)
		var sum int64
		for _, pid := range pids {
			sum += pss(pid)
		}
		w.mu.Lock()
		if sum > g.peak {
			g.peak, g.procs = sum, len(pids)
		}
		w.mu.Unlock()
	}
}

// Stop ends the sampling and returns the figures.
func (w *memWatch) Stop() memFigures {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.cancel(nil)
	w.mu.Lock()
	defer w.mu.Unlock()
	f := memFigures{MinAvailable: w.mu.minAvail}
	f.Self, _ = vmHWM(os.Getpid())
	for _, g := range w.mu.groups {
		f.Clusters = append(f.Clusters, clusterPeak{Name: g.name, Peak: g.peak, Procs: g.procs})
	}
	return f
}

// memFigures are the peaks a bench reports.
type memFigures struct {
	Self         int64 // the bench process's VmHWM
	Clusters     []clusterPeak
	MinAvailable int64 // the machine's lowest MemAvailable during the run
}

type clusterPeak struct {
	Name  string
	Peak  int64 // largest sum of Pss over its processes
	Procs int
}

// print writes the figures as one line per process.
func (f memFigures) print(w io.Writer) {
	fmt.Fprintf(w, "peak resident: bench process %.2f GiB (VmHWM)", gib(f.Self))
	for _, c := range f.Clusters {
		fmt.Fprintf(w, "; %s %.2f GiB (sum of Pss over %d processes, sampled every %s)", c.Name, gib(c.Peak), c.Procs, pssSample)
	}
	if f.MinAvailable > 0 {
		fmt.Fprintf(w, "; machine's lowest available memory %.1f GiB", gib(f.MinAvailable))
	}
	fmt.Fprintln(w)
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// postmasterPID reads the first line of a postmaster.pid (0 if none).
func postmasterPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0
	}
	return pid
}

// parentPIDs maps each process to its children, from /proc.
func parentPIDs() map[int][]int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := statFields(pid)
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out[ppid] = append(out[ppid], pid)
		}
	}
	return out
}

// pss is a process's proportional set size in bytes (0 if unreadable).
func pss(pid int) int64 {
	return procField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
}

// memAvailable is the machine's MemAvailable in bytes (0 if unknown).
func memAvailable() int64 { return procField("/proc/meminfo", "MemAvailable:") }

// procField reads a "Name:   N kB" line of a /proc file, in bytes.
func procField(path, name string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
