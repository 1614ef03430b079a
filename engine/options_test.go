package engine_test

import (
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"siteenv/engine"
	"siteenv/store"
)

// TestOptionsValidate: New refuses a bad value with an error naming the
// field (not a panic); zero takes the default.
func TestOptionsValidate(t *testing.T) {
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opt   engine.Options
		field string
	}{
		{engine.Options{MemoryBudget: -1}, "MemoryBudget"},
		{engine.Options{Workers: -2}, "Workers"},
	} {
		e, err := engine.New(st, tc.opt)
		if e != nil || !errors.Is(err, engine.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, %v, want ErrInvalidOptions naming %s", tc.opt, e, err, tc.field)
		}
	}
	for _, opt := range []engine.Options{{}, {MemoryBudget: 1 << 20, Workers: 1}} {
		if _, err := engine.New(st, opt); err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
	}
}

// TestOptionsWithDefaults: every zero field takes its documented default,
// and a set field is kept.
func TestOptionsWithDefaults(t *testing.T) {
	got := engine.Options{}.WithDefaults()
	if got.MemoryBudget != engine.DefaultMemoryBudget || got.Workers != runtime.GOMAXPROCS(0) || got.Logger != slog.Default() {
		t.Fatalf("defaults: %+v", got)
	}
	set := engine.Options{MemoryBudget: 1 << 20, Workers: 3, Logger: slog.New(slog.DiscardHandler)}
	if got := set.WithDefaults(); got != set {
		t.Fatalf("set fields changed: %+v, want %+v", got, set)
	}
}
