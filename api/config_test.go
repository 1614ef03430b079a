package api_test

import (
	"bytes"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/store"
)

// A configuration is validated once, in New, and a bad value is named.
func TestConfigValidated(t *testing.T) {
	secret := bytes.Repeat([]byte("s"), 32)
	for _, tc := range []struct {
		cfg   api.Config
		field string
	}{
		{api.Config{}, "Secret"},
		{api.Config{Secret: secret[:31]}, "Secret"},
		{api.Config{Secret: secret, CursorTTL: -time.Second}, "CursorTTL"},
		{api.Config{Secret: secret, IdempotencyWait: -time.Second}, "IdempotencyWait"},
		{api.Config{Secret: secret, BodyReadTimeout: -time.Second}, "BodyReadTimeout"},
		{api.Config{Secret: secret, MapRenders: -1}, "MapRenders"},
	} {
		_, err := api.New(tc.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("config with a bad %s: err %v, want one naming it", tc.field, err)
		}
	}
	if _, err := api.New(api.Config{Secret: secret}, nil); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
}

// TestConfigWithDefaults: every zero field takes its documented default and
// a set field is kept.
func TestConfigWithDefaults(t *testing.T) {
	d := api.Config{}.WithDefaults()
	if d.Clock == nil || d.Logger != slog.Default() || d.CursorTTL != time.Hour || d.IdempotencyWait != 10*time.Second ||
		d.MapRenders != runtime.GOMAXPROCS(0) || d.BodyReadTimeout != 5*time.Second || d.Metrics == nil {
		t.Fatalf("defaults: %+v", d)
	}
	set := api.Config{CursorTTL: time.Minute, MapRenders: 3}.WithDefaults()
	if set.CursorTTL != time.Minute || set.MapRenders != 3 || set.IdempotencyWait != 10*time.Second {
		t.Fatalf("set fields not kept: %+v", set)
	}
}

// newEngine is engine.New for tests: an error fails tb.
func newEngine(tb testing.TB, st store.Store, opt engine.Options) *engine.Engine {
	tb.Helper()
	e, err := engine.New(st, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// newRunner is jobs.New for tests: an error fails tb.
func newRunner(tb testing.TB, cfg jobs.Config, led *ledger.Ledger, eng *engine.Engine, st store.Store) *jobs.Runner {
	tb.Helper()
	r, err := jobs.New(cfg, led, eng, st)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
