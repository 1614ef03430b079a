package ledgertest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestMainsStopTheirClusters: every package whose tests start the
// throwaway PostgreSQL cluster (ledgertest.New, DSN) stops it when they
// end, in a TestMain calling ledgertest.Main: the review package's tests
// did not, and every `make test` left a cluster running.
func TestTestMainsStopTheirClusters(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	uses, stops := map[string]bool{}, map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, src := filepath.Dir(path), string(b)
		if strings.Contains(src, "ledgertest.New(") || strings.Contains(src, "ledgertest.DSN(") || strings.Contains(src, "ledgertest.NewProxy(") {
			uses[dir] = true
		}
		if strings.Contains(src, "ledgertest.Main(") {
			stops[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) == 0 {
		t.Fatal("no package uses ledgertest: the scan is broken")
	}
	for dir := range uses {
		if !stops[dir] {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s starts ledgertest's cluster but no TestMain calls ledgertest.Main: its cluster outlives every run", rel)
		}
	}
}
