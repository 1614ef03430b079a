package pgembed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoBinaries is returned (wrapped) by FindBinaries and Start when no
// usable PostgreSQL server binaries (initdb, pg_ctl, postgres) are found.
var ErrNoBinaries = errors.New("pgembed: PostgreSQL server binaries (initdb, pg_ctl, postgres) not found")

const installHint = "install PostgreSQL server binaries, e.g. `apt-get install postgresql`, " +
	"or set SITEENV_DATABASE_URL to use an existing server, " +
	"or SITEENV_PG_BIN to the directory holding initdb and pg_ctl"

// serverBinaries must all be present in a bin dir for it to be usable.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// FindBinaries locates initdb/pg_ctl/postgres: binDir if not empty (the
// command passes SITEENV_PG_BIN; then nothing else is tried), else PATH
// (look for pg_ctl AND initdb together), then `pg_config --bindir`, then the
// highest version in /usr/lib/postgresql/*/bin. Returns ErrNoBinaries
// (wrapped with a message saying: install PostgreSQL server binaries, e.g.
// `apt-get install postgresql`, or set SITEENV_DATABASE_URL / SITEENV_PG_BIN).
//
// Symbolic links are resolved, so a PATH entry such as /usr/local/bin/pg_ctl ->
// /usr/lib/postgresql/15/bin/pg_ctl yields the real directory, which also holds
// the client tools (createdb, psql, pg_isready).
func FindBinaries(binDir string) (string, error) {
	if binDir != "" {
		if d, ok := usableBinDir(binDir); ok {
			return d, nil
		}
		return "", fmt.Errorf("%w: the bin dir %q (SITEENV_PG_BIN) does not contain executable %s; fix SITEENV_PG_BIN or unset it; %s",
			ErrNoBinaries, binDir, strings.Join(serverBinaries, ", "), installHint)
	}

	// PATH: pg_ctl and initdb must come from the same directory.
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if d, ok := usableBinDir(filepath.Dir(real)); ok {
				return d, nil
			}
		}
		if d, ok := usableBinDir(filepath.Dir(p)); ok {
			return d, nil
		}
	}

	// pg_config --bindir.
	if p, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(p, "--bindir").Output(); err == nil {
			if d, ok := usableBinDir(strings.TrimSpace(string(out))); ok {
				return d, nil
			}
		}
	}

	// Highest version under /usr/lib/postgresql.
	for _, d := range debianBinDirs("/usr/lib/postgresql") {
		if d, ok := usableBinDir(d); ok {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrNoBinaries, installHint)
}

// debianBinDirs lists root/<version>/bin, highest version first.
func debianBinDirs(root string) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	type ver struct {
		name string
		num  []int
	}
	var vs []ver
	for _, e := range entries {
		var num []int
		ok := true
		for _, part := range strings.Split(e.Name(), ".") {
			n, err := strconv.Atoi(part)
			if err != nil {
				ok = false
				break
			}
			num = append(num, n)
		}
		if ok && len(num) > 0 {
			vs = append(vs, ver{e.Name(), num})
		}
	}
	sort.Slice(vs, func(i, j int) bool {
		a, b := vs[i].num, vs[j].num
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return len(a) > len(b)
	})
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, filepath.Join(root, v.name, "bin"))
	}
	return out
}

// usableBinDir reports whether dir holds executable initdb, pg_ctl and
// postgres, returning the absolute directory.
func usableBinDir(dir string) (string, bool) {
	if dir == "" {
		return "", false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for _, name := range serverBinaries {
		if !isExecutable(filepath.Join(abs, name)) {
			return "", false
		}
	}
	return abs, true
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
