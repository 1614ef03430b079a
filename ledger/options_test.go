package ledger_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"siteenv/clock"
	"siteenv/ledger"
)

// TestOptionsValidate: Open refuses a bad value with an error naming the
// field (not a panic), before connecting; zero takes the default.
func TestOptionsValidate(t *testing.T) {
	// Nothing listens on port 1: an Open that got as far as connecting
	// would fail with another error.
	const dsn = "postgres://siteenv@127.0.0.1:1/none?connect_timeout=1"
	for _, tc := range []struct {
		opt   ledger.Options
		field string
	}{
		{ledger.Options{MaxConns: -1}, "MaxConns"},
		{ledger.Options{IdempotencyLease: -time.Second}, "IdempotencyLease"},
		{ledger.Options{ActivityLinger: -time.Millisecond}, "ActivityLinger"},
	} {
		l, err := ledger.Open(context.Background(), dsn, tc.opt)
		if l != nil || !errors.Is(err, ledger.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, %v, want ErrInvalidOptions naming %s", tc.opt, l, err, tc.field)
		}
	}
}

// TestOptionsWithDefaults: every zero field takes its documented default and
// a set field is kept.
func TestOptionsWithDefaults(t *testing.T) {
	d := ledger.Options{}.WithDefaults()
	want := ledger.Options{Clock: clock.Real{}, Logger: slog.Default(), MaxConns: 20,
		IdempotencyLease: ledger.DefaultIdempotencyLease, ActivityLinger: 5 * time.Millisecond}
	if d != want {
		t.Fatalf("defaults %+v, want %+v", d, want)
	}
	set := ledger.Options{MaxConns: 3, IdempotencyLease: time.Minute}.WithDefaults()
	if set.MaxConns != 3 || set.IdempotencyLease != time.Minute || set.ActivityLinger != 5*time.Millisecond {
		t.Fatalf("set fields not kept: %+v", set)
	}
}
