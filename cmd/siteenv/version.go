package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release this binary was built as; `go build -ldflags
// "-X main.version=v1.2.3"` sets it. Otherwise the module version of the
// build info is used ("(devel)" for a build from a checkout).
var version = ""

// buildInfo is what `siteenv version` prints: the version, the VCS commit
// the binary was built from (with "-modified" when the tree had changes;
// "unknown" when built without VCS stamping, e.g. -buildvcs=false or go
// test), and the Go version.
type buildInfo struct {
	Version, Commit, Go string
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: "unknown", Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if b.Version == "" {
			b.Version = "unknown"
		}
		return b
	}
	if b.Version == "" {
		b.Version = info.Main.Version
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	var rev string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		b.Commit = rev
		if modified {
			b.Commit += "-modified"
		}
	}
	return b
}

// printVersion writes one line: siteenv VERSION commit COMMIT GOVERSION OS/ARCH.
func printVersion(w io.Writer) {
	b := readBuildInfo()
	fmt.Fprintf(w, "siteenv %s commit %s %s %s/%s\n", b.Version, b.Commit, b.Go, runtime.GOOS, runtime.GOARCH)
}

// helpRequested reports whether args (after the command) ask for help:
// -h, -help or --help before any "--".
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// commandUsage is the part of the usage that documents the command named by
// the words of args before the first flag (e.g. "admin account"): every
// usage line of `siteenv WORDS...` with its continuation lines. Empty when
// no line matches.
func commandUsage(args []string) string {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		words = append(words, a)
	}
	prefix := "siteenv " + strings.Join(words, " ")
	var b strings.Builder
	in := false
	for _, line := range strings.Split(usage, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "siteenv "):
			in = t == prefix || strings.HasPrefix(t, prefix+" ")
		case !strings.HasPrefix(line, "   "):
			in = false
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "Usage:\n" + b.String() + "\nEvery command takes --data-dir (or SITEENV_DATA_DIR); `siteenv help` lists all commands and the environment.\n"
}
