package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestStoreRecent: SITEENV_STORE_RECENT takes bytes or KiB/MiB/GiB, 0 turns
// the recent-object cache off, unset is the default, and nonsense or an
// overflow is refused.
func TestStoreRecent(t *testing.T) {
	for v, want := range map[string]int64{"": store.DefaultRecentBytes, "0": 0, "64MiB": 64 << 20, "1GiB": 1 << 30, "4096": 4096} {
		t.Setenv("SITEENV_STORE_RECENT", v)
		if n, err := storeRecent(); err != nil || n != want {
			t.Errorf("%q: %d %v, want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"-1", "lots", "9000000000000GiB", "1TiB"} {
		t.Setenv("SITEENV_STORE_RECENT", v)
		if _, err := storeRecent(); err == nil || !strings.Contains(err.Error(), "SITEENV_STORE_RECENT") {
			t.Errorf("%q accepted: %v", v, err)
		}
	}
}

func TestLogLevel(t *testing.T) {
	for v, want := range map[string]string{"": "INFO", "debug": "DEBUG", "WARN": "WARN", "error": "ERROR"} {
		t.Setenv("SITEENV_LOG_LEVEL", v)
		if l, err := logLevel(); err != nil || l.String() != want {
			t.Errorf("%q: %v %v", v, l, err)
		}
	}
}

func TestS3ConfigFromEnv(t *testing.T) {
	t.Setenv("SITEENV_S3_ENDPOINT", "http://127.0.0.1:9000")
	t.Setenv("SITEENV_S3_ACCESS_KEY", "ak")
	t.Setenv("SITEENV_S3_SECRET_KEY", "sk")
	t.Setenv("SITEENV_S3_REGION", "")
	got := s3ConfigFromEnv()
	want := store.S3Config{Endpoint: "http://127.0.0.1:9000", AccessKey: "ak", SecretKey: "sk", UseSSL: false}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	t.Setenv("SITEENV_S3_ENDPOINT", "s3.ap-southeast-2.amazonaws.com")
	if !s3ConfigFromEnv().UseSSL {
		t.Fatal("bare endpoint should default to TLS")
	}
}

func TestQueryTimings(t *testing.T) {
	t.Setenv("SITEENV_QUERY_ATTEMPT", "")
	t.Setenv("SITEENV_QUERY_SWEEP", "")
	if cfg, err := queryTimings(); err != nil || cfg.Attempt != 0 || cfg.Sweep != 0 {
		t.Fatalf("unset: %+v %v (want zero: the runner's defaults)", cfg, err)
	}
	t.Setenv("SITEENV_QUERY_ATTEMPT", "4s")
	t.Setenv("SITEENV_QUERY_SWEEP", " 2m ")
	if cfg, err := queryTimings(); err != nil || cfg.Attempt != 4*time.Second || cfg.Sweep != 2*time.Minute {
		t.Fatalf("set: %+v %v", cfg, err)
	}
	for _, bad := range []string{"4", "0s", "500ms", "-3s", "25h", "soon"} {
		t.Setenv("SITEENV_QUERY_ATTEMPT", bad)
		if _, err := queryTimings(); err == nil || !strings.Contains(err.Error(), "SITEENV_QUERY_ATTEMPT") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	t.Setenv("SITEENV_QUERY_ATTEMPT", "")
	t.Setenv("SITEENV_JOB_LEASE", "3s")
	if cfg, err := queryTimings(); err != nil || cfg.Lease != 3*time.Second {
		t.Fatalf("SITEENV_JOB_LEASE=3s: %+v %v", cfg, err)
	}
	t.Setenv("SITEENV_JOB_LEASE", "200ms")
	if _, err := queryTimings(); err == nil || !strings.Contains(err.Error(), "SITEENV_JOB_LEASE") {
		t.Errorf("SITEENV_JOB_LEASE=200ms: %v", err)
	}
}
