package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// envReaders are the files (a path ending in / : a package) allowed to
// read the process's environment, each for a reason: settings.go reads
// every variable of the command once; pgembed hands the environment
// (GLIBC_TUNABLES, its own or the default) to the PostgreSQL it starts; the two test-support packages, compiled only into tests, find
// the test cluster and versitygw as `make test` configures them. Test files
// (_test.go) are not checked: a test may read its own variables (bench's
// development aids, child-process markers).
var envReaders = map[string]bool{
	"cmd/siteenv/settings.go":         true,
	"ledger/pgembed/":                 true, // a directory: every file of it
	"ledger/ledgertest/ledgertest.go": true, // SITEENV_TEST_DATABASE_URL, SITEENV_PG_BIN
	"store/s3test/s3test.go":          true, // GOPATH, GOBIN, PATH for versitygw
}

// TestOnlySettingsReadTheEnvironment: no non-test file of any package of the
// module reads the environment but those of envReaders, so settings.go is
// what a command reads (its variables documented, validated before any
// command runs) and a library's behaviour follows only its options.
func TestOnlySettingsReadTheEnvironment(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "var" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		checked++
		for _, call := range envCalls(t, path) {
			if !envReaders[rel] && !envReaders[filepath.ToSlash(filepath.Dir(rel))+"/"] {
				t.Errorf("%s calls %s: read the environment in cmd/siteenv/settings.go and pass the value in", rel, call)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files found under %s", checked, root)
	}
}

// envCalls lists the calls in the Go file at path that read the
// environment: os.Getenv, os.LookupEnv, os.Environ and syscall's, under
// whatever name the package is imported.
func envCalls(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	names := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "os" && p != "syscall" {
			continue
		}
		name := p
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	if len(names) == 0 {
		return nil
	}
	var calls []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || names[x.Name] == "" {
			return true
		}
		switch sel.Sel.Name {
		case "Getenv", "LookupEnv", "Environ":
			calls = append(calls, names[x.Name]+"."+sel.Sel.Name)
		}
		return true
	})
	return calls
}
