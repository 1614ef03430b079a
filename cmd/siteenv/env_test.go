package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"siteenv/ingest"
	"siteenv/jobs"
	"siteenv/store"
)

// TestServeRefusesABadEnvironment: the binary exits non-zero with a message
// naming the variable, before touching the data dir, instead of ignoring it.
func TestServeRefusesABadEnvironment(t *testing.T) {
	if os.Getenv("SITEENV_TEST_AS_MAIN") == "1" {
		os.Args = []string{"siteenv", "serve", "--addr", "127.0.0.1:0"}
		main()
		os.Exit(0)
	}
	for _, tc := range []struct{ name, value string }{
		{"SITEENV_LOG_LEVEL", "bogus"},
		{"SITEENV_ENGINE_MEMORY", "lots"},
		{"SITEENV_INGEST_MEMORY", "0"},
		{"SITEENV_STORE_RECENT", "-1MiB"},
		{"SITEENV_SECRET", "short"},
		{"SITEENV_QUERY_ATTEMPT", "5"},
		{"SITEENV_QUERY_SWEEP", "-1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "var")
			cmd := exec.Command(os.Args[0], "-test.run=^TestServeRefusesABadEnvironment$")
			// An unreachable database: were the value let through, serve
			// fails at once (naming no variable) instead of running on.
			cmd.Env = append(os.Environ(), "SITEENV_TEST_AS_MAIN=1", "SITEENV_DATA_DIR="+dataDir,
				"SITEENV_DATABASE_URL=postgres://siteenv@127.0.0.1:1/none?connect_timeout=2", tc.name+"="+tc.value)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("serve with %s=%s: %v, want a non-zero exit; stderr:\n%s", tc.name, tc.value, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.name) {
				t.Fatalf("the message does not name %s:\n%s", tc.name, stderr.String())
			}
			if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the data dir was created before the environment was checked: %v", err)
			}
		})
	}
	// In-process, every command checks first.
	t.Setenv("SITEENV_LOG_LEVEL", "bogus")
	for _, args := range [][]string{{"serve"}, {"admin", "account", "create", "--name", "x"}, {"ingest", "--layer", "x.json", "f"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "SITEENV_LOG_LEVEL") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// envOf is a getenv over vars (readSettings' input in tests).
func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// TestStoreRecent: SITEENV_STORE_RECENT takes bytes or KiB/MiB/GiB, 0 turns
// the recent-object cache off, unset is the default, and nonsense or an
// overflow is refused.
func TestStoreRecent(t *testing.T) {
	for v, want := range map[string]int64{"": store.DefaultRecentBytes, "0": 0, "64MiB": 64 << 20, "1GiB": 1 << 30, "4096": 4096} {
		if s, err := readSettings(envOf(map[string]string{"SITEENV_STORE_RECENT": v})); err != nil || s.StoreRecent != want {
			t.Errorf("%q: %d %v, want %d", v, s.StoreRecent, err, want)
		}
	}
	for _, v := range []string{"-1", "lots", "9000000000000GiB", "1TiB"} {
		if _, err := readSettings(envOf(map[string]string{"SITEENV_STORE_RECENT": v})); err == nil || !strings.Contains(err.Error(), "SITEENV_STORE_RECENT") {
			t.Errorf("%q accepted: %v", v, err)
		}
	}
}

func TestLogLevel(t *testing.T) {
	for v, want := range map[string]string{"": "INFO", "debug": "DEBUG", "WARN": "WARN", "error": "ERROR"} {
		if s, err := readSettings(envOf(map[string]string{"SITEENV_LOG_LEVEL": v})); err != nil || s.LogLevel.String() != want {
			t.Errorf("%q: %v %v", v, s.LogLevel, err)
		}
	}
}

func TestS3ConfigFromEnv(t *testing.T) {
	vars := map[string]string{
		"SITEENV_S3_ENDPOINT": "http://127.0.0.1:9000", "SITEENV_S3_ACCESS_KEY": "ak", "SITEENV_S3_SECRET_KEY": "sk", "SITEENV_S3_REGION": "",
	}
	s, err := readSettings(envOf(vars))
	want := store.S3Config{Endpoint: "http://127.0.0.1:9000", AccessKey: "ak", SecretKey: "sk", UseSSL: false}
	if err != nil || s.S3 != want {
		t.Fatalf("got %+v %v, want %+v", s.S3, err, want)
	}
	vars["SITEENV_S3_ENDPOINT"] = "s3.ap-southeast-2.amazonaws.com"
	if s, err := readSettings(envOf(vars)); err != nil || !s.S3.UseSSL {
		t.Fatalf("bare endpoint should default to TLS: %+v %v", s.S3, err)
	}
}

func TestQueryTimings(t *testing.T) {
	read := func(vars map[string]string) (jobs.Config, error) {
		s, err := readSettings(envOf(vars))
		return s.Jobs, err
	}
	if cfg, err := read(nil); err != nil || cfg.Attempt != 0 || cfg.Sweep != 0 {
		t.Fatalf("unset: %+v %v (want zero: the runner's defaults)", cfg, err)
	}
	if cfg, err := read(map[string]string{"SITEENV_QUERY_ATTEMPT": "4s", "SITEENV_QUERY_SWEEP": " 2m "}); err != nil || cfg.Attempt != 4*time.Second || cfg.Sweep != 2*time.Minute {
		t.Fatalf("set: %+v %v", cfg, err)
	}
	for _, bad := range []string{"4", "0s", "500ms", "-3s", "25h", "soon"} {
		if _, err := read(map[string]string{"SITEENV_QUERY_ATTEMPT": bad}); err == nil || !strings.Contains(err.Error(), "SITEENV_QUERY_ATTEMPT") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if cfg, err := read(map[string]string{"SITEENV_JOB_LEASE": "3s"}); err != nil || cfg.Lease != 3*time.Second {
		t.Fatalf("SITEENV_JOB_LEASE=3s: %+v %v", cfg, err)
	}
	if _, err := read(map[string]string{"SITEENV_JOB_LEASE": "200ms"}); err == nil || !strings.Contains(err.Error(), "SITEENV_JOB_LEASE") {
		t.Errorf("SITEENV_JOB_LEASE=200ms: %v", err)
	}
}

// TestSettingsDefaults: an empty environment takes the documented defaults.
func TestSettingsDefaults(t *testing.T) {
	s, err := readSettings(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.DataDir != "./var" || s.DatabaseURL != "" || s.Store != "" || s.Secret != "" || s.LogLevel != slog.LevelInfo ||
		s.EngineMemory != 0 || s.IngestMemory != ingest.DefaultMemoryBudget || s.StoreRecent != store.DefaultRecentBytes ||
		s.MetricsAddr != "" || s.MetricsPublic || !s.S3.UseSSL {
		t.Fatalf("defaults: %+v", s)
	}
	s, err = readSettings(envOf(map[string]string{"SITEENV_DATA_DIR": "/d", "SITEENV_METRICS_PUBLIC": "1", "SITEENV_SECRET": strings.Repeat("s", 32)}))
	if err != nil || s.DataDir != "/d" || !s.MetricsPublic || len(s.Secret) != 32 {
		t.Fatalf("set: %+v %v", s, err)
	}
}

// TestReadmeDocumentsEveryVariable: every variable readSettings reads is
// in envVars and in the README's configuration table (that no other file
// reads the environment: TestOnlySettingsReadTheEnvironment).
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	read := map[string]bool{}
	if _, err := readSettings(func(name string) string { read[name] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	if len(read) != len(envVars) {
		t.Errorf("readSettings reads %d variables, envVars lists %d", len(read), len(envVars))
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range envVars {
		if !read[name] {
			t.Errorf("envVars lists %s, which readSettings does not read", name)
		}
		if !configRow(readme, name) {
			t.Errorf("README's configuration table has no row for %s", name)
		}
	}
}

// configRow reports whether the README has a configuration table row whose
// first cell names the variable.
func configRow(readme []byte, name string) bool {
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		if strings.Contains(cells[1], "`"+name+"`") || strings.Contains(cells[1], "`"+name+"=") {
			return true
		}
	}
	return false
}
