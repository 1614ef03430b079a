// Package pgembed runs the machine's own PostgreSQL binaries as an embedded
// default database for siteenv (the service, its CLI and its test suite).
//
// A cluster lives in one directory (the caller passes <data-dir>/pg):
//
//	<dir>/data             PGDATA (initdb -A trust, UTF8, locale C)
//	<dir>/log/postgres.log server log
//	<dir>/run              unix socket directory (or a short directory under
//	                       os.TempDir() when <dir> is too deep for sun_path)
//	<dir>/socketdir        records the socket directory in use
//	<dir>/owner            the process that owns the running server (pid and
//	                       start time); removed when the owner stops it
//	<dir>/.lock            flock held while starting/stopping
//
// The server listens on a unix socket only (no TCP listener). When the
// process runs as root, PostgreSQL runs as the `postgres` system user.
//
// Ownership: the process that starts the server owns it and stops it on exit;
// processes that find it running attach without owning it. A server whose
// owner died without stopping it (kill -9, power loss of the process) is
// adopted by the next process that starts or attaches, which then owns it.
// Supervise restarts a server that dies under a running process.
package pgembed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// defaultPort only names the socket file (.s.PGSQL.5432); there is no TCP.
	defaultPort = 5432
	// maxSocketPath is the longest socket path we allow: sun_path is 108 bytes
	// on Linux (107 usable) and 104 on BSD/macOS, so stay under both.
	maxSocketPath = 103
	confName      = "siteenv.conf"
	includeLine   = "include_if_exists = '" + confName + "'"
)

// MallocTunables is the server processes' GLIBC_TUNABLES (unless the
// environment sets its own). With glibc's defaults (trim at 128 kB, a
// dynamic mmap threshold) every statement's memory contexts shrank the heap
// when they were freed and the next statement grew it again: brk, munmap
// and page faults took about 8% of the CPU of bench api's read pass. These
// keep up to 16 MB of freed memory in each process and serve allocations
// under 8 MB from its heap. For a PostgreSQL of your own, set the same in
// its service's environment.
const MallocTunables = "glibc.malloc.trim_threshold=16777216:glibc.malloc.mmap_threshold=8388608:glibc.malloc.top_pad=1048576"

// ServerTunables is the GLIBC_TUNABLES a server Start starts now runs with:
// the environment's own, else MallocTunables.
func ServerTunables() string {
	if v := os.Getenv("GLIBC_TUNABLES"); v != "" {
		return v
	}
	return MallocTunables
}

// Options configures Start.
type Options struct {
	// Database to ensure exists; default "siteenv".
	Database string
	// Logger for progress messages; default slog.Default(). PostgreSQL's own
	// log goes to <dir>/log/postgres.log.
	Logger *slog.Logger
	// BinDir holds initdb, pg_ctl and postgres; empty: FindBinaries
	// searches PATH, pg_config and /usr/lib/postgresql (the command passes
	// SITEENV_PG_BIN here: the library reads no settings of its own from
	// the environment; the server inherits it, GLIBC_TUNABLES included).
	BinDir string
	// Ephemeral trades durability for speed (fsync=off, synchronous_commit=off,
	// full_page_writes=off, initdb --no-sync): for test clusters only, never
	// for the service's own data. Only applied when this call starts the server.
	Ephemeral bool
	// Settings are more server settings (name: value, as in
	// postgresql.conf), written after siteenv's own and so overriding them;
	// siteenv bench api --ledger-statements sets log_statement_stats. Only
	// applied when this call starts the server.
	Settings map[string]string
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Database == "" {
		o.Database = "siteenv"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ErrInvalidOptions reports an Options field outside its range.
var ErrInvalidOptions = errors.New("pgembed: invalid options")

// validate reports a field of filled options out of range, naming it: the
// database name goes into createdb's arguments and connection URLs, so it is
// a plain PostgreSQL identifier (letters, digits, underscores; at most 63
// bytes).
func (o Options) validate() error {
	ok := len(o.Database) <= 63
	for i, r := range o.Database {
		ok = ok && (r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9')
	}
	if !ok {
		return fmt.Errorf("%w: Database must be letters, digits and underscores (at most 63, not starting with a digit), got %q", ErrInvalidOptions, o.Database)
	}
	for name, value := range o.Settings {
		// A setting's name goes into the configuration file unquoted, its
		// value quoted on the same line.
		ok := name != ""
		for _, r := range name {
			ok = ok && (r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}
		if !ok {
			return fmt.Errorf("%w: Settings: %q is not a setting's name", ErrInvalidOptions, name)
		}
		if strings.ContainsAny(value, "\n\r\x00") {
			return fmt.Errorf("%w: Settings: %s's value holds a line break or NUL", ErrInvalidOptions, name)
		}
	}
	return nil
}

// Cluster is a running PostgreSQL server, started or attached to by Start.
type Cluster struct {
	dir       string
	dataDir   string
	logFile   string
	binDir    string
	user      osUser
	superuser string
	socketDir string
	port      int
	logger    *slog.Logger

	// ephemeral and settings are remembered so a supervised restart keeps
	// them.
	ephemeral bool
	settings  map[string]string

	// mu guards owned and the connection fields (socketDir, port) that a
	// supervised restart may rewrite; it is held for a whole start or stop.
	mu    sync.Mutex
	owned bool

	// sup is the running supervisor, if any (see Supervise).
	supMu sync.Mutex
	sup   *supervisor
}

// Start initialises (first run) and starts a PostgreSQL cluster under dir, or
// attaches to the server already running for dir (then Owned is false and
// Stop is a no-op, unless the process that started the server has exited:
// then this Cluster adopts and owns it). It then ensures opt.Database exists.
// Concurrent Start calls on the same dir (from any process) are serialised
// with a lock file in dir.
func Start(ctx context.Context, dir string, opt Options) (*Cluster, error) {
	opt = opt.WithDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("pgembed: empty cluster directory")
	}
	binDir, err := FindBinaries(opt.BinDir)
	if err != nil {
		return nil, err
	}
	u, err := serverUser()
	if err != nil {
		return nil, err
	}

	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pgembed: %w", err)
	}
	// Parents get 0755 so the postgres user can traverse the ones we create.
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("pgembed: create cluster directory: %w (choose another --data-dir)", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if err := u.checkReachable(abs); err != nil {
		return nil, err
	}
	if err := u.chown(abs); err != nil {
		return nil, err
	}
	if err := os.Chmod(abs, 0o700); err != nil {
		return nil, fmt.Errorf("pgembed: %w", err)
	}

	c := &Cluster{
		dir:       abs,
		dataDir:   filepath.Join(abs, "data"),
		logFile:   filepath.Join(abs, "log", "postgres.log"),
		binDir:    binDir,
		user:      u,
		superuser: u.name,
		port:      defaultPort,
		logger:    opt.Logger.With("component", "pgembed", "dir", abs),
		ephemeral: opt.Ephemeral,
		settings:  opt.Settings,
	}

	unlock, err := lockDir(ctx, filepath.Join(abs, ".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := c.ensureDir(filepath.Dir(c.logFile), 0o700); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(c.logFile); err == nil {
		if err := u.chown(c.logFile); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		if err := c.initdb(ctx, opt.Ephemeral); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("pgembed: %w", err)
	} else if err := u.chownTree(c.dataDir); err != nil {
		return nil, err
	}
	c.superuser = dataDirOwner(c.dataDir, u.name)

	if err := c.ensureRunningLocked(ctx); err != nil {
		return nil, err
	}

	if err := c.ensureDatabase(ctx, opt.Database); err != nil {
		if c.owned {
			if c.stopLocked(context.WithoutCancel(ctx)) == nil {
				c.removeOwner()
			}
		}
		return nil, err
	}
	return c, nil
}

// DSN returns a libpq keyword/value DSN (usable by pgx) for database.
func (c *Cluster) DSN(database string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		dsnQuote(c.socketDir), c.port, dsnQuote(c.superuser), dsnQuote(database))
}

// LogFile is the server's log (its stderr), appended to across starts.
func (c *Cluster) LogFile() string { return c.logFile }

// Owned reports whether this Cluster started the server (and Stop stops it).
func (c *Cluster) Owned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owned
}

// Stop ends the supervisor (if any), then shuts the server down (pg_ctl stop
// -m fast) if this Cluster owns it; otherwise it does nothing more. Calling
// Stop more than once is harmless.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopSupervisor()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.owned {
		return nil
	}
	unlock, err := lockDir(ctx, filepath.Join(c.dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	// Another process may have restarted (and so owns) the server since.
	if o, ok := c.readOwner(); ok && !o.isSelf() && o.alive() {
		c.owned = false
		c.logger.Info("PostgreSQL is now owned by another process; leaving it running", "owner_pid", o.pid)
		return nil
	}
	if !c.postmasterAlive() {
		c.removeOwner()
		c.owned = false
		return nil
	}
	if err := c.stopLocked(ctx); err != nil {
		return err
	}
	c.removeOwner()
	c.owned = false
	return nil
}

func (c *Cluster) stopLocked(ctx context.Context) error {
	out, err := run(c.user.command(ctx, c.tool("pg_ctl"), "stop", "-D", c.dataDir, "-m", "fast", "-w", "-t", timeoutSecs(ctx)))
	if err != nil {
		if strings.Contains(out, "Is server running?") {
			return nil // already stopped by someone else
		}
		return fmt.Errorf("pgembed: pg_ctl stop -D %s: %v: %s%s", c.dataDir, err, out, c.logTail())
	}
	if !strings.HasPrefix(c.socketDir, c.dir+string(filepath.Separator)) {
		_ = os.Remove(c.socketDir) // the short temp socket dir; Start recreates it
	}
	c.logger.Info("stopped PostgreSQL")
	return nil
}

// tool returns the path of a PostgreSQL program: from the bin dir, else PATH.
func (c *Cluster) tool(name string) string {
	p := filepath.Join(c.binDir, name)
	if isExecutable(p) {
		return p
	}
	if lp, err := exec.LookPath(name); err == nil {
		return lp
	}
	return p
}

func (c *Cluster) ensureDir(path string, mode os.FileMode) error {
	if err := os.MkdirAll(path, mode); err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	return c.user.chown(path)
}

func (c *Cluster) initdb(ctx context.Context, ephemeral bool) error {
	c.logger.Info("initialising PostgreSQL cluster", "bin_dir", c.binDir, "superuser", c.user.name)
	args := []string{"-D", c.dataDir, "-U", c.user.name, "-A", "trust", "-E", "UTF8", "--locale=C"}
	if ephemeral {
		args = append(args, "--no-sync")
	}
	out, err := run(c.user.command(ctx, c.tool("initdb"), args...))
	if err != nil {
		return fmt.Errorf("pgembed: initdb -D %s failed: %v\n%s\n"+
			"(if %s holds something other than a PostgreSQL cluster, move it away or choose another --data-dir)",
			c.dataDir, err, out, c.dataDir)
	}
	return nil
}

// running reports whether a postmaster is alive for the data directory.
func (c *Cluster) running(ctx context.Context) (bool, error) {
	if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	// pg_ctl status takes a zombie postmaster (killed, and not reaped by a
	// container's init) for a running one; look at the process first.
	if !c.postmasterAlive() {
		return false, nil
	}
	cmd := c.user.command(ctx, c.tool("pg_ctl"), "status", "-D", c.dataDir)
	out, err := run(cmd)
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return false, nil // stale postmaster.pid; postgres cleans it up on start
	}
	return false, fmt.Errorf("pgembed: pg_ctl status -D %s: %v: %s", c.dataDir, err, out)
}

// attach reads the running server's socket directory and port from
// postmaster.pid and waits until it accepts connections.
func (c *Cluster) attach(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		lines := c.pidFile()
		if len(lines) >= 5 {
			if p, err := strconv.Atoi(strings.TrimSpace(lines[3])); err == nil && p > 0 {
				c.port = p
			}
			if s := strings.TrimSpace(lines[4]); s != "" {
				c.socketDir = s
			}
		}
		if c.socketDir == "" {
			if b, err := os.ReadFile(filepath.Join(c.dir, "socketdir")); err == nil {
				c.socketDir = strings.TrimSpace(string(b))
			}
		}
		if len(lines) >= 8 && strings.TrimSpace(lines[7]) == "ready" && c.socketDir != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgembed: a PostgreSQL server is running for %s (postmaster.pid) but did not become ready within 60s; "+
				"check %s, and if no postgres process is running remove %s%s",
				c.dataDir, c.logFile, filepath.Join(c.dataDir, "postmaster.pid"), c.logTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgembed: waiting for running PostgreSQL to become ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pidFile returns the lines of postmaster.pid (nil if unreadable).
func (c *Cluster) pidFile() []string {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		return nil
	}
	return strings.Split(string(b), "\n")
}

func (c *Cluster) start(ctx context.Context, ephemeral bool) error {
	sock, err := c.chooseSocketDir()
	if err != nil {
		return err
	}
	c.socketDir = sock
	if err := c.writeConfig(ephemeral); err != nil {
		return err
	}
	if err := c.clearStaleLocks(ctx); err != nil {
		return err
	}
	rec := filepath.Join(c.dir, "socketdir")
	if err := os.WriteFile(rec, []byte(sock+"\n"), 0o644); err != nil {
		return fmt.Errorf("pgembed: record socket dir: %w", err)
	}
	if err := c.user.chown(rec); err != nil {
		return err
	}

	cmd := c.user.command(ctx, c.tool("pg_ctl"), "start", "-D", c.dataDir, "-l", c.logFile, "-w", "-t", timeoutSecs(ctx), "-s")
	cmd.Env = append(cmd.Env, "GLIBC_TUNABLES="+ServerTunables())
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true // keep the server out of our terminal's process group
	out, err := run(cmd)
	if err != nil {
		return fmt.Errorf("pgembed: starting PostgreSQL (pg_ctl start -D %s) failed: %v: %s%s%s",
			c.dataDir, err, out, hintFor(c.readLogTail()), c.logTail())
	}
	return nil
}

// chooseSocketDir returns <dir>/run, or a short per-cluster directory under
// os.TempDir() when the socket path would exceed sun_path.
func (c *Cluster) chooseSocketDir() (string, error) {
	sock := filepath.Join(c.dir, "run")
	if !socketTooLong(sock) {
		return sock, c.ensureDir(sock, 0o700)
	}
	sum := sha256.Sum256([]byte(c.dir))
	name := "siteenv-pg-" + hex.EncodeToString(sum[:])[:16]
	sock = filepath.Join(os.TempDir(), name)
	if socketTooLong(sock) || c.user.checkReachable(sock) != nil {
		sock = filepath.Join("/tmp", name) // TMPDIR too deep or private to us
	}
	if err := os.Mkdir(sock, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("pgembed: create socket dir %s (cluster dir %s is too deep for a unix socket path): %w", sock, c.dir, err)
	}
	fi, err := os.Lstat(sock)
	if err != nil {
		return "", fmt.Errorf("pgembed: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || st == nil || (st.Uid != c.user.uid && st.Uid != uint32(os.Geteuid())) {
		return "", fmt.Errorf("pgembed: socket dir %s exists but is not a directory owned by us or user %s; remove it or choose a shorter --data-dir", sock, c.user.name)
	}
	if err := os.Chmod(sock, 0o700); err != nil {
		return "", fmt.Errorf("pgembed: %w", err)
	}
	if err := c.user.chown(sock); err != nil {
		return "", err
	}
	c.logger.Info("cluster directory too deep for a unix socket path; using a short socket dir", "socket_dir", sock)
	return sock, nil
}

func socketTooLong(dir string) bool {
	return len(filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(defaultPort))) > maxSocketPath
}

// writeConfig writes <data>/siteenv.conf (rewritten on every start) and makes
// postgresql.conf include it.
func (c *Cluster) writeConfig(ephemeral bool) error {
	var b strings.Builder
	b.WriteString("# Written by siteenv (ledger/pgembed) on every start; edits are overwritten.\n")
	fmt.Fprintf(&b, "listen_addresses = ''\n")
	fmt.Fprintf(&b, "port = %d\n", defaultPort)
	fmt.Fprintf(&b, "unix_socket_directories = %s\n", confQuote(c.socketDir))
	b.WriteString("max_connections = 200\n")
	b.WriteString("logging_collector = off\n")
	b.WriteString("log_destination = 'stderr'\n")
	if ephemeral {
		b.WriteString("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
	}
	names := make([]string, 0, len(c.settings))
	for name := range c.settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "%s = %s\n", name, confQuote(c.settings[name]))
	}
	conf := filepath.Join(c.dataDir, confName)
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("pgembed: write %s: %w", conf, err)
	}
	if err := c.user.chown(conf); err != nil {
		return err
	}
	main := filepath.Join(c.dataDir, "postgresql.conf")
	cur, err := os.ReadFile(main)
	if err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	if !bytes.Contains(cur, []byte(includeLine)) {
		f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("pgembed: %w", err)
		}
		_, err = f.WriteString("\n# Added by siteenv (ledger/pgembed).\n" + includeLine + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("pgembed: append to %s: %w", main, err)
		}
	}
	return nil
}

func (c *Cluster) ensureDatabase(ctx context.Context, name string) error {
	cmd := c.user.command(ctx, c.tool("createdb"), "-h", c.socketDir, "-p", strconv.Itoa(c.port), "-U", c.superuser, "--", name)
	out, err := run(cmd)
	if err != nil {
		if strings.Contains(out, "already exists") {
			return nil
		}
		return fmt.Errorf("pgembed: createdb %s: %v: %s%s", name, err, out, c.logTail())
	}
	c.logger.Info("created database", "database", name)
	return nil
}

// readLogTail returns the last lines of the server log.
func (c *Cluster) readLogTail() string {
	f, err := os.Open(c.logFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 4096
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 1 && int64(len(b)) == max {
		lines = lines[1:] // first line is probably partial
	}
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}

// logTail formats the log tail for inclusion in an error message.
func (c *Cluster) logTail() string {
	t := c.readLogTail()
	if t == "" {
		return ""
	}
	return "\n--- last lines of " + c.logFile + " ---\n" + t
}

// hintFor suggests a fix for common start failures seen in the log.
func hintFor(log string) string {
	switch {
	case strings.Contains(log, "database files are incompatible with server"):
		return "\nhint: the cluster was created by another PostgreSQL major version; set SITEENV_PG_BIN to that version's bin dir or choose another --data-dir"
	case strings.Contains(log, "could not create shared memory segment"),
		strings.Contains(log, "could not map anonymous shared memory"):
		return "\nhint: not enough shared memory for PostgreSQL; free memory or raise the container's /dev/shm and memory limits"
	case strings.Contains(log, "already exists") && strings.Contains(log, "lock file"):
		return "\nhint: another PostgreSQL is using this data or socket directory; stop it, or remove the stale lock file named in the log if no postgres process is running"
	case strings.Contains(log, "Permission denied"):
		return "\nhint: PostgreSQL (user postgres when run as root) cannot access a file or directory; check ownership of the --data-dir"
	}
	return ""
}

// dataDirOwner returns the name of the account owning dataDir (the cluster's
// bootstrap superuser, since initdb -U used that name), or def.
func dataDirOwner(dataDir, def string) string {
	fi, err := os.Stat(dataDir)
	if err != nil {
		return def
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return def
	}
	if u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10)); err == nil && u.Username != "" {
		return u.Username
	}
	return def
}

// timeoutSecs gives pg_ctl -t from ctx's deadline (default 60s).
func timeoutSecs(ctx context.Context) string {
	secs := 60
	if d, ok := ctx.Deadline(); ok {
		secs = int(time.Until(d).Seconds())
		if secs < 1 {
			secs = 1
		}
	}
	return strconv.Itoa(secs)
}

// dsnQuote quotes a libpq keyword/value if needed.
func dsnQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}

// confQuote quotes a postgresql.conf string value.
func confQuote(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), "'", "''") + "'"
}
