package pgembed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// osUser is the operating-system account the PostgreSQL processes run as.
type osUser struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32
	home   string
	// switchTo is true when we run as root and must drop to this user for
	// initdb/pg_ctl/createdb (PostgreSQL refuses to run as root).
	switchTo bool
}

// serverUser returns the account PostgreSQL runs as: the postgres system
// user when we are root, otherwise the current user.
func serverUser() (osUser, error) {
	if os.Geteuid() != 0 {
		u := osUser{uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}
		// user.Current itself falls back to $USER when the account
		// database cannot be read.
		cu, err := user.Current()
		if err != nil || cu.Username == "" {
			return osUser{}, fmt.Errorf("pgembed: cannot determine the current user name (needed as the PostgreSQL superuser): %v", err)
		}
		u.name, u.home = cu.Username, cu.HomeDir
		return u, nil
	}
	pu, err := user.Lookup("postgres")
	if err != nil {
		return osUser{}, fmt.Errorf("pgembed: running as root, but PostgreSQL refuses to run as root and there is no `postgres` system user to run it as (%v): "+
			"create one (e.g. `useradd --system --home-dir /var/lib/postgresql postgres`, which `apt-get install postgresql` does), "+
			"run siteenv as a non-root user, or set SITEENV_DATABASE_URL", err)
	}
	uid, err1 := strconv.ParseUint(pu.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(pu.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return osUser{}, fmt.Errorf("pgembed: user postgres has non-numeric uid/gid %q/%q", pu.Uid, pu.Gid)
	}
	u := osUser{name: pu.Username, uid: uint32(uid), gid: uint32(gid), home: pu.HomeDir, switchTo: true}
	if ids, err := pu.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.ParseUint(s, 10, 32); err == nil {
				u.groups = append(u.groups, uint32(g))
			}
		}
	}
	if len(u.groups) == 0 {
		u.groups = []uint32{u.gid}
	}
	return u, nil
}

// command builds a command that runs as u, with a clean libpq environment
// (no PG* variables leaking in) and a working directory u can access.
func (u osUser) command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = "/"
	cmd.WaitDelay = 5 * time.Second
	env := make([]string, 0, len(os.Environ())+4)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || k == "LC_ALL" || k == "LANG" || k == "LANGUAGE" {
			continue
		}
		if u.switchTo && (k == "HOME" || k == "USER" || k == "LOGNAME") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "LC_ALL=C")
	if u.switchTo {
		env = append(env, "HOME="+u.home, "USER="+u.name, "LOGNAME="+u.name)
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: u.groups},
		}
	}
	cmd.Env = env
	return cmd
}

// run runs the command and returns its combined output.
func run(cmd *exec.Cmd) (string, error) {
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	return strings.TrimSpace(buf.String()), err
}

// chown gives path to u when we are switching users; otherwise a no-op.
func (u osUser) chown(path string) error {
	if !u.switchTo {
		return nil
	}
	if err := os.Lchown(path, int(u.uid), int(u.gid)); err != nil {
		return fmt.Errorf("pgembed: chown %s to user %s: %w", path, u.name, err)
	}
	return nil
}

// chownTree gives the whole tree under root to u if root is not already
// owned by u (e.g. a cluster created by another account).
func (u osUser) chownTree(root string) error {
	if !u.switchTo {
		return nil
	}
	fi, err := os.Lstat(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == u.uid {
		return nil
	}
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return u.chown(p)
	})
}

// checkReachable verifies that u can traverse every ancestor of dir (which
// must be absolute and symlink-free). Only relevant when switching users.
func (u osUser) checkReachable(dir string) error {
	if !u.switchTo {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("pgembed: data dir %s: %w", dir, err)
		}
		if !u.canSearch(fi) {
			st, _ := fi.Sys().(*syscall.Stat_t)
			owner := -1
			if st != nil {
				owner = int(st.Uid)
			}
			return fmt.Errorf("pgembed: data dir %s is not reachable by user %s (PostgreSQL runs as %s because we run as root; %s has mode %v, owner uid %d): "+
				"make it world-executable (chmod o+x %s) or choose another --data-dir",
				dir, u.name, u.name, p, fi.Mode().Perm(), owner, p)
		}
		if p == "/" || p == filepath.Dir(p) {
			return nil
		}
	}
}

// canSearch applies the POSIX owner/group/other rule for the x bit of a
// directory (ACLs are not consulted).
func (u osUser) canSearch(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	if st.Uid == u.uid {
		return perm&0o100 != 0
	}
	for _, g := range append([]uint32{u.gid}, u.groups...) {
		if st.Gid == g {
			return perm&0o010 != 0
		}
	}
	return perm&0o001 != 0
}

// lockDir takes an exclusive flock on path, waiting (and honouring ctx)
// while another process or goroutine holds it.
func lockDir(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgembed: open lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("pgembed: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("pgembed: waiting for lock %s (another process is starting or stopping this cluster): %w", path, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}
