package main

import (
	"context"
	"flag"
	"io"
)

func reviewCmd(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("review", flag.ContinueOnError)
	fs.SetOutput(stderr)
	_ = dataDirFlag(fs, set)
	_ = fs.String("addr", "127.0.0.1:8090", "address to serve the review pages on (loopback)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	return usageError{"review: not yet"}
}
