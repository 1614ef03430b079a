package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestHelpListsFlags: every command's --help succeeds and lists its flags
// with their descriptions (not only after a mistyped flag).
func TestHelpListsFlags(t *testing.T) {
	t.Setenv("SITEENV_DATABASE_URL", "not a url") // help reads no environment
	for _, tc := range []struct {
		args  []string
		flags []string // "-name" and a word of its description
	}{
		{[]string{"serve", "--help"}, []string{"-addr", "listen address", "-metrics-addr", "-shutdown-timeout"}},
		{[]string{"ingest", "--help"}, []string{"-repair", "ST_MakeValid", "-drop-unknown-fields", "-keep-unknown-fields", "-publish", "-json", "-out"}},
		{[]string{"ingest", "gazetteer", "--help"}, []string{"-addresses", "-parcels"}},
		{[]string{"release", "diff", "--help"}, []string{"-tolerance", "moved no further", "-from"}},
		{[]string{"release", "promote", "-h"}, []string{"-release", "release to make current"}},
		{[]string{"review", "--help"}, []string{"-addr", "loopback"}},
		{[]string{"demo", "--help"}, []string{"-scale", "-data-dir", "data directory"}},
		{[]string{"admin", "account", "create", "--help"}, []string{"-name", "account name", "-credits"}},
		{[]string{"help", "serve"}, []string{"-addr", "listen address"}},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), tc.args, &out, &errOut); err != nil {
			t.Errorf("%v: %v (rc != 0)", tc.args, err)
			continue
		}
		if !strings.Contains(out.String(), "Flags:\n") {
			t.Errorf("%v: no flags listed:\n%s", tc.args, out.String())
		}
		for _, w := range tc.flags {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: help lacks %q:\n%s", tc.args, w, out.String())
			}
		}
	}
}

// TestUnknownCommandNamesTheNearest: a misspelt command gets a suggestion,
// not the whole usage.
func TestUnknownCommandNamesTheNearest(t *testing.T) {
	for typo, want := range map[string]string{"srve": `"serve"`, "ingets": `"ingest"`, "relase": `"release"`, "reveiw": `"review"`} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{typo}, &out, &errOut)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "did you mean "+want) {
			t.Errorf("%s: %v, want a usage error suggesting %s", typo, err, want)
		}
		if n := strings.Count(out.String()+errOut.String(), "\n"); n > 2 {
			t.Errorf("%s: printed %d lines:\n%s%s", typo, n, out.String(), errOut.String())
		}
	}
	if err := run(context.Background(), []string{"zzzzzzzz"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("far from every command: %v", err)
	}
}
