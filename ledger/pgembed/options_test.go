package pgembed

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionsValidate: Start refuses a bad database name with an error
// naming the field (not a panic), before creating anything.
func TestOptionsValidate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pg")
	for _, name := range []string{"bad name", "x;drop", "9lives", strings.Repeat("a", 64), "naïve"} {
		c, err := Start(context.Background(), dir, Options{Database: name})
		if c != nil || !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Database") {
			t.Errorf("%q: %v, %v, want ErrInvalidOptions naming Database", name, c, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused options created the cluster dir: %v", err)
	}
	for _, name := range []string{"", "work mem", "a=b", "x\ny", "Work_Mem"} {
		err := (Options{Database: "siteenv", Settings: map[string]string{name: "1"}}).validate()
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Settings") {
			t.Errorf("setting %q: %v, want ErrInvalidOptions naming Settings", name, err)
		}
	}
	for _, value := range []string{"a\nb", "a\rb", "a\x00b"} {
		err := (Options{Database: "siteenv", Settings: map[string]string{"work_mem": value}}).validate()
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "work_mem") {
			t.Errorf("value %q: %v, want ErrInvalidOptions naming the setting", value, err)
		}
	}
	for _, name := range []string{"siteenv", "fs_12_3", "appdb", "Bench"} {
		if err := (Options{Database: name}).validate(); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
}

// TestOptionsWithDefaults: every zero field takes its documented default and
// a set field is kept.
func TestOptionsWithDefaults(t *testing.T) {
	if d := (Options{}).WithDefaults(); d.Database != "siteenv" || d.Logger != slog.Default() || d.BinDir != "" || d.Ephemeral {
		t.Fatalf("defaults: %+v", d)
	}
	if d := (Options{Database: "bench", BinDir: "/x"}).WithDefaults(); d.Database != "bench" || d.BinDir != "/x" {
		t.Fatalf("set fields not kept: %+v", d)
	}
}
