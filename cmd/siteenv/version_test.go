package main

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `siteenv version` and `siteenv --version` print one line
// with the version, the commit and the Go version, and exit 0, without
// needing a database.
func TestVersion(t *testing.T) {
	t.Setenv("SITEENV_DATABASE_URL", "not a url") // never read
	for _, arg := range []string{"version", "--version"} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), []string{arg}, &out, &errOut); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		f := strings.Fields(out.String())
		if len(f) != 6 || f[0] != "siteenv" || f[1] == "" || f[2] != "commit" || f[3] == "" || f[4] != runtime.Version() ||
			strings.Count(out.String(), "\n") != 1 {
			t.Fatalf("%s printed %q", arg, out.String())
		}
	}
}

// TestCommandHelp: every command's --help (or -h) prints its own usage on
// stdout and succeeds; the global usage lists bench api and version.
func TestCommandHelp(t *testing.T) {
	t.Setenv("SITEENV_DATABASE_URL", "not a url") // help reads no environment
	for _, tc := range []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"serve", "--help"}, []string{"siteenv serve", "--metrics-addr"}, "siteenv admin"},
		{[]string{"admin", "--help"}, []string{"siteenv admin account create", "siteenv admin key revoke"}, "siteenv serve"},
		{[]string{"admin", "account", "--help"}, []string{"siteenv admin account create --name NAME"}, "siteenv admin key"},
		{[]string{"admin", "key", "create", "-h"}, []string{"--datasets"}, "key revoke"},
		{[]string{"bench", "--help"}, []string{"siteenv bench engine", "siteenv bench api"}, "siteenv serve"},
		{[]string{"bench", "api", "--help"}, []string{"siteenv bench api"}, "siteenv bench engine"},
		{[]string{"ingest", "--help"}, []string{"siteenv ingest --layer", "siteenv ingest gazetteer"}, "siteenv serve"},
		{[]string{"demo", "--help"}, []string{"siteenv demo"}, "siteenv serve"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errOut)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: usage lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		if strings.Contains(out.String(), tc.not) {
			t.Errorf("%v: usage shows another command's %q:\n%s", tc.args, tc.not, out.String())
		}
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"siteenv bench api", "siteenv version", "SITEENV_JOB_LEASE"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("global usage lacks %q", w)
		}
	}
	// An unknown command still fails as a usage error.
	var ue usageError
	if err := run(context.Background(), []string{"nope", "--help"}, &out, &errOut); err != nil && !errors.As(err, &ue) {
		t.Errorf("nope --help: %v", err)
	}
}
