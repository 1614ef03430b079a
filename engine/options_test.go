package engine_test

import (
	"errors"
	"strings"
	"testing"

	"siteenv/engine"
)

// TestOptionsValidate: a bad value is refused with a message naming the
// field; zero takes the default.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opt   engine.Options
		field string
	}{
		{engine.Options{MemoryBudget: -1}, "MemoryBudget"},
		{engine.Options{Workers: -2}, "Workers"},
	} {
		err := tc.opt.Validate()
		if !errors.Is(err, engine.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions naming %s", tc.opt, err, tc.field)
		}
	}
	if err := (engine.Options{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := (engine.Options{MemoryBudget: 1 << 20, Workers: 1}).Validate(); err != nil {
		t.Fatal(err)
	}
}
