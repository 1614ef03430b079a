package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// commands are the first words siteenv knows.
var commands = []string{"serve", "admin", "ingest", "release", "review", "demo", "bench", "version", "help"}

func isCommand(name string) bool {
	for _, c := range commands {
		if c == name {
			return true
		}
	}
	return false
}

// commandHelp prints the usage lines of the command args names, then its
// flags with their descriptions, on stdout: the command is run with its
// flag output sent there, and stops at --help (flag.ErrHelp) before doing
// anything. A command that refuses its words before parsing flags (a
// missing sub-command) leaves the usage lines alone, which is still help.
func commandHelp(ctx context.Context, args []string, stdout io.Writer) error {
	if !isCommand(args[0]) {
		return unknownCommand(args[0], stdout)
	}
	u := commandUsage(args)
	if u == "" {
		u = usage
	}
	fmt.Fprint(stdout, u)
	if args[0] == "version" {
		return nil
	}
	set, err := loadSettings()
	if err != nil {
		set = settings{}
	}
	err = dispatch(ctx, set, args, io.Discard, &flagsOnly{w: stdout})
	var ue usageError
	if err == nil || errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// flagsOnly passes on the flags a flag set prints for --help (lines
// "  -name type" and their indented descriptions) under a "Flags:"
// heading, and nothing else (commandHelp has printed the usage lines; a
// command refusing its words prints its own usage text).
type flagsOnly struct {
	w       io.Writer
	partial []byte
	started bool
}

func (f *flagsOnly) Write(p []byte) (int, error) {
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.partial[:i+1]
		if bytes.HasPrefix(line, []byte("  -")) || bytes.HasPrefix(line, []byte("    \t")) {
			if !f.started {
				f.started = true
				if _, err := io.WriteString(f.w, "\nFlags:\n"); err != nil {
					return 0, err
				}
			}
			if _, err := f.w.Write(line); err != nil {
				return 0, err
			}
		}
		f.partial = f.partial[i+1:]
	}
}

// unknownCommand names the nearest command instead of printing the whole
// usage.
func unknownCommand(name string, stderr io.Writer) error {
	best, bestD := "", 1<<30
	for _, c := range commands {
		if d := editDistance(strings.ToLower(name), c); d < bestD {
			best, bestD = c, d
		}
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if bestD <= max(2, len(name)/2) {
		msg += fmt.Sprintf(": did you mean %q?", best)
	}
	return usageError{msg + " (siteenv help lists the commands)"}
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
