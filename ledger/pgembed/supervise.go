package pgembed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Supervision defaults: how often the postmaster's liveness is checked and
// the bounds of the backoff between failed restarts.
const (
	superviseInterval = time.Second
	restartBackoffMin = time.Second
	restartBackoffMax = 30 * time.Second
	// restartTimeout bounds one restart; it is not tied to the supervisor's
	// context so that Stop never interrupts pg_ctl halfway through a start
	// (which could leave a server running that nobody owns).
	restartTimeout = 2 * time.Minute
)

// ensureRunningLocked makes sure a server runs for the cluster (the caller
// holds the directory lock): it attaches to a running server, adopting it when
// the process that started it has exited, or starts one and owns it.
func (c *Cluster) ensureRunningLocked(ctx context.Context) error {
	running, err := c.running(ctx)
	if err != nil {
		return err
	}
	if !running {
		if err := c.start(ctx, c.ephemeral); err != nil {
			return err
		}
		c.owned = true
		c.writeOwner()
		c.logger.Info("started PostgreSQL", "socket_dir", c.socketDir, "log", c.logFile, "ephemeral", c.ephemeral)
		return nil
	}
	if err := c.attach(ctx); err != nil {
		return err
	}
	o, ok := c.readOwner()
	switch {
	case ok && o.isSelf():
		// Started by this process (another Cluster value, or this one before
		// a supervised restart): the value that started it stops it.
		c.logger.Info("attached to running PostgreSQL", "socket_dir", c.socketDir)
	case ok && !o.alive():
		c.owned = true
		c.writeOwner()
		c.logger.Warn("adopted PostgreSQL left running by a process that exited; this process now stops it on exit",
			"socket_dir", c.socketDir, "previous_owner_pid", o.pid)
	default:
		// A live owner, or no record at all (started by hand or by an older
		// binary): leave its lifetime to whoever started it.
		c.logger.Info("attached to running PostgreSQL", "socket_dir", c.socketDir)
	}
	return nil
}

// owner identifies a process across pid reuse: its pid and its start time
// (field 22 of /proc/<pid>/stat; 0 where /proc is unavailable).
type owner struct {
	pid   int
	start uint64
}

func self() owner {
	pid := os.Getpid()
	st, _ := procStartTime(pid)
	return owner{pid: pid, start: st}
}

func (o owner) isSelf() bool { return o == self() }

// alive reports whether the recorded process still runs (and is the same
// process, not a later one that reused the pid).
func (o owner) alive() bool {
	if !processAlive(o.pid) {
		return false
	}
	if o.start == 0 {
		return true
	}
	st, err := procStartTime(o.pid)
	return err != nil || st == o.start
}

func (c *Cluster) ownerFile() string { return filepath.Join(c.dir, "owner") }

// writeOwner records this process as the server's owner. A failure is logged
// only: it costs adoption after a crash, not correctness now.
func (c *Cluster) writeOwner() {
	o := self()
	tmp := c.ownerFile() + ".tmp"
	err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %d\n", o.pid, o.start)), 0o644)
	if err == nil {
		err = os.Rename(tmp, c.ownerFile())
	}
	if err != nil {
		c.logger.Warn("cannot record the owner of PostgreSQL; after a crash it will not be adopted", "err", err)
	}
}

func (c *Cluster) readOwner() (owner, bool) {
	b, err := os.ReadFile(c.ownerFile())
	if err != nil {
		return owner{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return owner{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	st, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return owner{}, false
	}
	return owner{pid: pid, start: st}, true
}

func (c *Cluster) removeOwner() {
	if o, ok := c.readOwner(); ok && o.isSelf() {
		_ = os.Remove(c.ownerFile())
	}
}

// postmasterPID returns the pid recorded in postmaster.pid (0 if none).
func (c *Cluster) postmasterPID() int {
	lines := c.pidFile()
	if len(lines) == 0 {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// postmasterAlive reports whether the postmaster named by postmaster.pid
// runs. It is cheap (a file read and a signal 0), so the supervisor can poll.
func (c *Cluster) postmasterAlive() bool {
	pid := c.postmasterPID()
	return pid > 0 && processAlive(pid)
}

// processAlive reports whether pid is a live process; a zombie (killed but
// not yet reaped, as under a container init that does not reap) is dead.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesised command name, which may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// procStartTime returns field 22 (starttime) of /proc/<pid>/stat.
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("pgembed: malformed /proc stat")
	}
	// Fields after the command: state is field 3, starttime field 22.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, errors.New("pgembed: short /proc stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// supervisor is the goroutine started by Supervise.
type supervisor struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Supervise watches the server from a goroutine until ctx ends or Stop is
// called: about once a second it checks that the postmaster is alive, and
// when it is not (it crashed, was killed, or was stopped by hand) it starts
// it again, with backoff between failed attempts, and logs each step. The
// restarted server is owned by this Cluster (Stop stops it), unless another
// process restarted it first. Clients reconnect on their own: the socket
// path does not change. Calling Supervise again while it runs does nothing.
func (c *Cluster) Supervise(ctx context.Context) {
	c.supMu.Lock()
	defer c.supMu.Unlock()
	if c.sup != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &supervisor{cancel: cancel, done: make(chan struct{})}
	c.sup = s
	go func() {
		defer close(s.done)
		c.supervise(ctx, superviseInterval)
	}()
}

// stopSupervisor ends the supervisor and waits for it (a restart in
// progress finishes first).
func (c *Cluster) stopSupervisor() {
	c.supMu.Lock()
	s := c.sup
	c.sup = nil
	c.supMu.Unlock()
	if s != nil {
		s.cancel()
		<-s.done
	}
}

func (c *Cluster) supervise(ctx context.Context, interval time.Duration) {
	backoff := restartBackoffMin
	next := interval
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		next = interval
		if c.postmasterAlive() {
			backoff = restartBackoffMin
			continue
		}
		c.logger.Warn("embedded PostgreSQL is not running; restarting it", "postmaster_pid", c.postmasterPID())
		if err := c.restart(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.logger.Error("restarting embedded PostgreSQL failed; retrying", "err", err, "retry_in", backoff)
			next = backoff
			backoff = min(2*backoff, restartBackoffMax)
			continue
		}
		backoff = restartBackoffMin
		c.mu.Lock()
		owned, sock := c.owned, c.socketDir
		c.mu.Unlock()
		c.logger.Info("embedded PostgreSQL is running again", "postmaster_pid", c.postmasterPID(), "owned", owned, "socket_dir", sock)
	}
}

// restart brings the server back under the directory lock (another process
// may be restarting it at the same moment).
func (c *Cluster) restart(ctx context.Context) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restartTimeout)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	unlock, err := lockDir(rctx, filepath.Join(c.dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return c.ensureRunningLocked(rctx)
}

// staleProcessWait bounds how long a start waits for the processes of a
// server that died (its backends and helpers exit on postmaster death) to go.
const staleProcessWait = 15 * time.Second

// clearStaleLocks removes the lock files of a postmaster that is gone.
// PostgreSQL removes stale lock files itself, except when the dead
// postmaster is a zombie (kill -9 under a container init that does not reap
// orphans): its pid still answers signal 0, and PostgreSQL refuses to start.
// The files are removed only once no live process works in the data
// directory, so two servers never share it.
func (c *Cluster) clearStaleLocks(ctx context.Context) error {
	pid := c.postmasterPID()
	if pid == 0 || processAlive(pid) {
		return nil // no lock, or a live one (pg_ctl start reports it)
	}
	deadline := time.Now().Add(staleProcessWait)
	for {
		left := processesIn(c.dataDir)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgembed: PostgreSQL's postmaster (pid %d) is gone but processes %v still run in %s; stop them, then start again",
				pid, left, c.dataDir)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgembed: waiting for the processes of a dead PostgreSQL server to exit: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, f := range []string{
		filepath.Join(c.dataDir, "postmaster.pid"),
		filepath.Join(c.socketDir, ".s.PGSQL."+strconv.Itoa(c.port)+".lock"),
	} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pgembed: remove stale lock file: %w", err)
		}
	}
	c.logger.Info("removed the lock files of a PostgreSQL server that died", "postmaster_pid", pid)
	return nil
}

// processesIn lists the live processes whose working directory is dir
// (PostgreSQL's processes all work in their data directory).
func processesIn(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil || cwd != dir {
			continue
		}
		if processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
