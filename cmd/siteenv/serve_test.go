package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsStayPrivate: --metrics-addr takes loopback addresses only,
// unless --metrics-public (or SITEENV_METRICS_PUBLIC=1) says otherwise; a
// refused address stops serve before it touches the data dir.
func TestMetricsStayPrivate(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9090": true, "127.0.0.1:0": true, "[::1]:9090": true, "localhost:9090": true,
		"0.0.0.0:9090": false, ":9090": false, "[::]:9090": false, "10.1.2.3:9090": false, "metrics.example.com:9090": false, "127.0.0.1": false,
	} {
		if err := loopbackOnly(addr); (err == nil) != ok {
			t.Errorf("loopbackOnly(%q) = %v", addr, err)
		}
	}
	t.Setenv("SITEENV_METRICS_PUBLIC", "")
	for _, args := range [][]string{
		{"serve", "--metrics-addr", "0.0.0.0:9090"},
		{"serve", "--metrics-addr", ":9090"},
		{"serve", "--shutdown-timeout", "0s"},
	} {
		dataDir := filepath.Join(t.TempDir(), "var")
		err := run(context.Background(), append(args, "--data-dir", dataDir), &bytes.Buffer{}, &bytes.Buffer{})
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
		if strings.Contains(args[1], "metrics") && !strings.Contains(err.Error(), "--metrics-public") {
			t.Errorf("%v: the refusal does not say how to allow it: %v", args, err)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: the data dir was created before the refusal", args)
		}
	}
}
