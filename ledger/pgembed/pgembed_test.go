package pgembed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"siteenv/internal/syncbuf"
)

// testRoot returns a fresh directory whose parents the postgres user can
// traverse (os.MkdirTemp and t.TempDir make 0700 directories).
func testRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgembed-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// psql runs sql through the real psql client against c.DSN(db), as the
// server's OS user (postgres when we are root).
func psql(t *testing.T, c *Cluster, db, sql string) (string, error) {
	t.Helper()
	cmd := c.user.command(testCtx(t), c.tool("psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", c.DSN(db), "-c", sql)
	return run(cmd)
}

func mustPsql(t *testing.T, c *Cluster, db, sql string) string {
	t.Helper()
	out, err := psql(t, c, db, sql)
	if err != nil {
		t.Fatalf("psql %q: %v: %s", sql, err, out)
	}
	return out
}

func mustStart(t *testing.T, dir string, opt Options) *Cluster {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	c, err := Start(testCtx(t), dir, opt)
	if err != nil {
		t.Fatalf("Start(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("cleanup Stop: %v", err)
		}
	})
	return c
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(testRoot(t), "var", "pg")
	const db = "appdb"

	c := mustStart(t, dir, Options{Database: db, Ephemeral: true,
		Settings: map[string]string{"work_mem": "8MB", "log_statement_stats": "on", "application_name": "it's"}})
	if !c.Owned() {
		t.Fatal("first Start on a fresh dir should own the server")
	}
	if want := filepath.Join(c.dir, "run"); c.socketDir != want {
		t.Errorf("socket dir = %q, want %q", c.socketDir, want)
	}
	if !strings.Contains(c.DSN(db), "host="+c.socketDir+" port=5432 user=") ||
		!strings.HasSuffix(c.DSN(db), " dbname="+db+" sslmode=disable") {
		t.Errorf("unexpected DSN %q", c.DSN(db))
	}
	if os.Geteuid() == 0 && c.superuser != "postgres" {
		t.Errorf("superuser = %q, want postgres when running as root", c.superuser)
	}

	if got := mustPsql(t, c, db, "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1 = %q", got)
	}
	// The server runs with MallocTunables, or the environment's own
	// GLIBC_TUNABLES (its children inherit them). The dynamic loader parses
	// the variable in place, splitting it at its colons, so the variables
	// are joined with colons before looking.
	want := MallocTunables
	if v := os.Getenv("GLIBC_TUNABLES"); v != "" {
		want = v
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c.postmasterPID()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ReplaceAll(string(env), "\x00", ":"), "GLIBC_TUNABLES="+want) {
		t.Errorf("the postmaster's environment lacks GLIBC_TUNABLES=%s", want)
	}
	mustPsql(t, c, db, "CREATE EXTENSION pg_trgm")
	if got := mustPsql(t, c, db, "SELECT similarity('siteenv', 'siteenv') = 1"); got != "t" {
		t.Fatalf("pg_trgm similarity: %q", got)
	}
	for setting, want := range map[string]string{
		"listen_addresses": "", "max_connections": "200", "fsync": "off",
		"server_encoding": "UTF8", "lc_collate": "C",
		"work_mem": "8MB", "log_statement_stats": "on", // Options.Settings
	} {
		if got := mustPsql(t, c, db, "SHOW "+setting); got != want {
			t.Errorf("SHOW %s = %q, want %q", setting, got, want)
		}
	}
	mustPsql(t, c, db, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	if fi, err := os.Stat(filepath.Join(c.dir, "log", "postgres.log")); err != nil || fi.Size() == 0 {
		t.Errorf("server log missing or empty: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(c.dir, "socketdir")); err != nil || strings.TrimSpace(string(b)) != c.socketDir {
		t.Errorf("socketdir record = %q, %v", b, err)
	}

	// A second Start on the same dir attaches.
	c2 := mustStart(t, dir, Options{}) // default database "siteenv"
	if c2.Owned() {
		t.Fatal("second Start should attach, not own")
	}
	if c2.DSN(db) != c.DSN(db) {
		t.Errorf("attached DSN %q != %q", c2.DSN(db), c.DSN(db))
	}
	if got := mustPsql(t, c2, db, "SELECT v FROM kept"); got != "42" {
		t.Fatalf("attached cluster sees %q", got)
	}
	// Attaching with another database name creates it.
	mustPsql(t, c2, "siteenv", "SELECT 1")
	if err := c2.Stop(testCtx(t)); err != nil {
		t.Fatalf("Stop on attached cluster: %v", err)
	}
	mustPsql(t, c, db, "SELECT 1") // still running

	// Stop really stops; Stop twice is fine.
	if err := c.Stop(testCtx(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if c.Owned() {
		t.Error("Owned after Stop")
	}
	if out, err := psql(t, c, db, "SELECT 1"); err == nil {
		t.Fatalf("server still answers after Stop: %s", out)
	}
	if err := c.Stop(testCtx(t)); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	// A start failure reports the tail of the server log.
	auto := filepath.Join(c.dataDir, "postgresql.auto.conf")
	orig, err := os.ReadFile(auto)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(auto, append(append([]byte{}, orig...), "max_connections = 'banana'\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Start(testCtx(t), dir, Options{Database: db, Ephemeral: true})
	if err == nil {
		t.Fatal("Start with a broken config succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "last lines of") || !strings.Contains(msg, "banana") {
		t.Fatalf("start error lacks the log tail: %v", err)
	}
	t.Log(err)
	if err := os.WriteFile(auto, orig, 0o600); err != nil {
		t.Fatal(err)
	}

	// Restart (durable this time): data intact, fsync back on.
	c3 := mustStart(t, dir, Options{Database: db})
	if !c3.Owned() {
		t.Fatal("Start after Stop should own the server")
	}
	if got := mustPsql(t, c3, db, "SELECT v FROM kept"); got != "42" {
		t.Fatalf("after restart kept = %q", got)
	}
	if got := mustPsql(t, c3, db, "SHOW fsync"); got != "on" {
		t.Errorf("non-ephemeral fsync = %q", got)
	}
	if got := mustPsql(t, c3, db, "SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'"); got != "1" {
		t.Errorf("pg_trgm lost after restart: %q", got)
	}
}

// A cluster dir too deep for sun_path still works (socket under TempDir), and
// concurrent Starts on one fresh dir initialise and start it exactly once.
func TestDeepDirConcurrentStart(t *testing.T) {
	t.Parallel()
	dir := testRoot(t)
	for len(filepath.Join(dir, "pg", "run", ".s.PGSQL.5432")) <= 110 {
		dir = filepath.Join(dir, "a-rather-long-directory-name")
	}
	dir = filepath.Join(dir, "pg")

	const n = 3
	var wg sync.WaitGroup
	clusters := make([]*Cluster, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			clusters[i], errs[i] = Start(testCtx(t), dir, Options{Ephemeral: true, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
		})
	}
	wg.Wait()
	owned := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Start %d: %v", i, errs[i])
		}
		t.Cleanup(func() { clusters[i].Stop(context.Background()) })
		if clusters[i].Owned() {
			owned++
		}
	}
	if owned != 1 {
		t.Fatalf("%d of %d concurrent Starts own the server, want 1", owned, n)
	}
	c := clusters[0]
	if !strings.HasPrefix(c.socketDir, os.TempDir()) && !strings.HasPrefix(c.socketDir, "/tmp/") {
		t.Errorf("deep dir socket dir %q not under temp dir", c.socketDir)
	}
	if l := len(filepath.Join(c.socketDir, ".s.PGSQL.5432")); l > maxSocketPath {
		t.Errorf("socket path length %d", l)
	}
	if fi, err := os.Stat(c.socketDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket dir mode: %v %v", fi.Mode(), err)
	}
	if b, err := os.ReadFile(filepath.Join(c.dir, "socketdir")); err != nil || strings.TrimSpace(string(b)) != c.socketDir {
		t.Errorf("socketdir record = %q, %v", b, err)
	}
	for _, cl := range clusters {
		if cl.DSN("siteenv") != c.DSN("siteenv") {
			t.Errorf("DSNs differ: %q vs %q", cl.DSN("siteenv"), c.DSN("siteenv"))
		}
	}
	if got := mustPsql(t, c, "siteenv", "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1 = %q", got)
	}
	for _, cl := range clusters {
		if err := cl.Stop(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(c.socketDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp socket dir %s left behind after Stop: %v", c.socketDir, err)
	}
}

func TestUnreachableDataDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only relevant when running as root")
	}
	private := filepath.Join(testRoot(t), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(testCtx(t), filepath.Join(private, "pg"), Options{})
	if err == nil || !strings.Contains(err.Error(), "is not reachable by user postgres") ||
		!strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("want an actionable reachability error, got %v", err)
	}
	t.Log(err)
}

func TestFindBinaries(t *testing.T) {
	empty := t.TempDir()
	for _, v := range []string{empty, filepath.Join(empty, "missing")} {
		_, err := FindBinaries(v)
		if !errors.Is(err, ErrNoBinaries) {
			t.Fatalf("bin dir %s: err = %v, want ErrNoBinaries", v, err)
		}
		if !strings.Contains(err.Error(), "apt-get install postgresql") || !strings.Contains(err.Error(), "SITEENV_PG_BIN") {
			t.Errorf("error not actionable: %v", err)
		}
		t.Log(err)
	}
	if _, err := Start(testCtx(t), filepath.Join(empty, "pg"), Options{BinDir: empty}); !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("Start with a bad BinDir: %v", err)
	}

	found, err := FindBinaries("")
	if err != nil {
		t.Fatalf("FindBinaries: %v", err)
	}
	for _, name := range serverBinaries {
		if !isExecutable(filepath.Join(found, name)) {
			t.Errorf("%s has no %s", found, name)
		}
	}
	if got, err := FindBinaries(found); err != nil || got != found {
		t.Errorf("bin dir %s: got %q, %v", found, got, err)
	}
}

func TestDebianBinDirsOrder(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6", "10", "15", "16", "common"} {
		os.MkdirAll(filepath.Join(root, v, "bin"), 0o755)
	}
	var got []string
	for _, d := range debianBinDirs(root) {
		got = append(got, filepath.Base(filepath.Dir(d)))
	}
	if want := []string{"16", "15", "10", "9.6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func TestDSNQuote(t *testing.T) {
	c := &Cluster{socketDir: "/tmp/my dir/o'k", port: 5432, superuser: "postgres"}
	want := `host='/tmp/my dir/o\'k' port=5432 user=postgres dbname=siteenv sslmode=disable`
	if got := c.DSN("siteenv"); got != want {
		t.Errorf("DSN = %s, want %s", got, want)
	}
}

// TestHelperOwner is not a test: TestAdoptAfterOwnerCrash runs the test
// binary again with PGEMBED_HELPER_DIR set, so that a separate process starts
// (and owns) a cluster and can then be killed with SIGKILL.
func TestHelperOwner(t *testing.T) {
	dir := os.Getenv("PGEMBED_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process for TestAdoptAfterOwnerCrash")
	}
	c, err := Start(context.Background(), dir, Options{Ephemeral: true})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("ready owned=%v\n", c.Owned())
	select {} // until killed
}

// startOwnerProcess starts a cluster under dir from another process and
// returns that process once the cluster runs.
func startOwnerProcess(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PGEMBED_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready owned=true\n" {
		t.Fatalf("helper process: %q %v", line, err)
	}
	return cmd
}

// assertNoServer fails unless no live process works in the cluster's data
// directory (PostgreSQL's processes all do) and postmaster.pid is gone.
func assertNoServer(t *testing.T, c *Cluster) {
	t.Helper()
	// Children of a postmaster killed earlier in the test exit when they
	// notice its death, which on a loaded machine can trail Stop by a
	// moment: wait for them (bounded), then insist.
	deadline := time.Now().Add(30 * time.Second)
	for len(processesIn(c.dataDir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if pids := processesIn(c.dataDir); len(pids) > 0 {
		t.Fatalf("PostgreSQL processes %v still run in %s", pids, c.dataDir)
	}
	if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("postmaster.pid remains: %v", err)
	}
}

// A server whose owner died by SIGKILL is adopted by the next Start, which
// then stops it; while the owner lives, Start only attaches.
func TestAdoptAfterOwnerCrash(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(testRoot(t), "pg")
	owner := startOwnerProcess(t, dir)

	attached := mustStart(t, dir, Options{})
	if attached.Owned() {
		t.Fatal("Start adopted a server whose owner is alive")
	}
	if err := attached.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !attached.postmasterAlive() {
		t.Fatal("an attached Cluster's Stop stopped the server")
	}

	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	pid := attached.postmasterPID()

	c := mustStart(t, dir, Options{})
	if !c.Owned() {
		t.Fatal("Start did not adopt the server its crashed owner left running")
	}
	if c.postmasterPID() != pid {
		t.Fatalf("adopting restarted the server (pid %d, was %d)", c.postmasterPID(), pid)
	}
	if got := mustPsql(t, c, "siteenv", "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1 = %q", got)
	}
	if err := c.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	assertNoServer(t, c)
	if _, err := os.Stat(filepath.Join(c.dir, "owner")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("owner record remains after Stop: %v", err)
	}
}

// A postmaster killed under a supervised Cluster is started again, data
// intact; Stop then ends the supervisor and the server.
func TestSuperviseRestartsKilledPostmaster(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(testRoot(t), "pg")
	var logBuf syncBuffer
	// Durable: with synchronous_commit off a crash may lose the last commit.
	c := mustStart(t, dir, Options{Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logBuf, t.Output()), nil))})
	mustPsql(t, c, "siteenv", "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)")
	c.Supervise(testCtx(t))
	c.Supervise(testCtx(t)) // a second call is harmless

	for round := range 2 {
		old := c.postmasterPID()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		var last string
		for {
			pid := c.postmasterPID()
			if pid != 0 && pid != old && c.postmasterAlive() {
				out, err := psql(t, c, "siteenv", "SELECT v FROM kept")
				if err == nil && out == "7" {
					break
				}
				last = fmt.Sprintf("%s %v", out, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: PostgreSQL was not restarted within 60s (last psql: %s)\n%s", round, last, logBuf.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !c.Owned() {
		t.Fatal("the restarted server is not owned by the supervising Cluster")
	}
	if !strings.Contains(logBuf.String(), "embedded PostgreSQL is not running; restarting it") {
		t.Fatalf("no log line for the restart:\n%s", logBuf.String())
	}
	if err := c.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	assertNoServer(t, c)
	// Stop ended the supervisor (it waits for the goroutine to return).
	c.supMu.Lock()
	defer c.supMu.Unlock()
	if c.sup != nil {
		t.Fatal("the supervisor outlived Stop")
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer = syncbuf.Buffer
