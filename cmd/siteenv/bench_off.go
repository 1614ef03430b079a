//go:build nobench

package main

import (
	"context"
	"errors"
	"io"
)

// errNoBench answers `siteenv bench` in a production build.
var errNoBench = errors.New("this siteenv was built without the benchmark harness (-tags nobench); `make build` builds the full binary")

// benchCmd in a production build (-tags nobench): package bench (synthetic
// data at scale, the PostGIS and ogr2ogr baselines) is not linked in.
func benchCmd(context.Context, settings, []string, io.Writer, io.Writer) error {
	return errNoBench
}
