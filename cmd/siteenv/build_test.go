package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestProductionBuildLeavesBenchOut: the full build links package bench (so
// `siteenv bench` runs), the production build (-tags nobench, `make
// build-prod`) does not, and its `siteenv bench` says so and exits 1.
func TestProductionBuildLeavesBenchOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	deps := func(tags ...string) []string {
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.Command(goBin, append(args, ".")...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	if !slices.Contains(deps(), "siteenv/bench") {
		t.Fatal("the full build does not link siteenv/bench")
	}
	if slices.Contains(deps("-tags", "nobench"), "siteenv/bench") {
		t.Fatal("the production build (-tags nobench) links siteenv/bench")
	}
	bin := filepath.Join(t.TempDir(), "siteenv")
	if out, err := exec.Command(goBin, "build", "-tags", "nobench", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nobench: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "bench", "engine", "--scale", "small")
	cmd.Env = append(os.Environ(), "SITEENV_DATA_DIR="+filepath.Join(t.TempDir(), "var"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "without the benchmark harness") {
		t.Fatalf("production `siteenv bench`: %v, stderr %q; want exit 1 saying the harness is left out", err, stderr.String())
	}
}
