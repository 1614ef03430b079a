package openapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// Pinned tools for the generated-client check; neither enters the module's
// go.mod nor the binary: the generator runs with `go run pkg@version` and the
// client is built as its own module in a temporary directory.
const (
	oapiCodegen    = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	oapiRuntime    = "github.com/oapi-codegen/runtime"
	oapiRuntimeVer = "v1.8.0"
)

// TestGeneratedClient generates a Go client from the document with
// oapi-codegen, builds it, and proves at compile time that Position is a
// slice of float64 (a []interface{} or []float32 would not compile), so
// integrators who generate clients get typed, lossless coordinates.
// It needs the Go module proxy (or a warm module cache); -short skips it.
func TestGeneratedClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the oapi-codegen build")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	dir := t.TempDir()
	run := func(workdir string, args ...string) {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = workdir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	spec, err := filepath.Abs("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(dir, "client.go")
	run(".", "run", oapiCodegen, "-generate", "types,client", "-package", "siteenvclient", "-o", client, spec)

	src, err := os.ReadFile(client)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^type Position =? ?(.*)$`).FindSubmatch(src); m == nil || string(m[1]) != "[]float64" {
		t.Errorf("generated Position: %q, want []float64", m)
	}
	files := map[string]string{
		"go.mod": "module siteenvclient\n\ngo 1.26\n\nrequire " + oapiRuntime + " " + oapiRuntimeVer + "\n",
		"check.go": `package siteenvclient

// Compile-time checks of the generated client: Position holds float64
// numbers, and the client and its typed responses exist.
var (
	_ []float64 = Position(nil)
	_           = NewClientWithResponses
	_           = (*ClientWithResponses).SearchLocationsWithResponse
	_           = (*ClientWithResponses).GetDocsWithResponse
)
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(dir, "mod", "tidy")
	run(dir, "build", "./...")
	run(dir, "vet", "./...")
}
