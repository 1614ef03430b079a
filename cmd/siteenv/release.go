package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"siteenv/ingest"
	"siteenv/ledger"
	"siteenv/tiles"
)

const releaseUsage = `usage:
  siteenv release list --layer ID
  siteenv release diff --layer ID [--from R1] [--to R2] [--tolerance 1mm] [--out changes.csv|changes.parquet]
  siteenv release promote --layer ID --release R
  siteenv release discard --layer ID --release R`

// releaseCmd reviews a layer's releases: list them, compare two, make one
// current (a staged one, or an earlier one: the rollback).
func releaseCmd(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{releaseUsage}
	}
	sub := args[0]
	fs := flag.NewFlagSet("release "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	layer := fs.String("layer", "", "layer id (required)")
	var from, to, out, rel, tol *string
	switch sub {
	case "list":
	case "diff":
		from = fs.String("from", "", "release to compare from (default: the current release)")
		to = fs.String("to", "", "release to compare to (default: the newest staged release)")
		out = fs.String("out", "", "file of the added, removed and changed features: GeoParquet when it ends in .parquet, CSV otherwise (default <data-dir>/out/<layer>.<from>..<to>.csv; - for none)")
		tol = fs.String("tolerance", "1mm", "a geometry whose vertices moved no further is unchanged (e.g. 1mm, 5cm, 0.5m; 0 for exact)")
	case "promote":
		rel = fs.String("release", "", "release to make current (required)")
	case "discard":
		rel = fs.String("release", "", "staged release to discard after review (required)")
	default:
		return usageError{releaseUsage}
	}
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if *layer == "" || fs.NArg() != 0 || (rel != nil && *rel == "") {
		return usageError{releaseUsage}
	}
	e, err := openEnv(ctx, set, *dataDir, set.logger(stderr))
	if err != nil {
		return err
	}
	defer e.close()
	switch sub {
	case "list":
		return releaseList(ctx, e, *layer, stdout)
	case "diff":
		t, err := parseLength(*tol)
		if err != nil {
			return usageError{"--tolerance: " + err.Error()}
		}
		return releaseDiff(ctx, e, *layer, *from, *to, *out, t, stdout)
	}
	if sub == "discard" {
		return releaseDiscard(ctx, e, *layer, *rel, stdout)
	}
	return releasePromote(ctx, e, *layer, *rel, stdout)
}

func releaseDiscard(ctx context.Context, e *env, layer, rel string, stdout io.Writer) error {
	err := e.led.DiscardRelease(ctx, layer, rel, actor("siteenv release discard"))
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return fmt.Errorf("layer %q has no release %q", layer, rel)
	case errors.Is(err, ledger.ErrNotStaged):
		return fmt.Errorf("release %q of %q is not staged: only a staged release can be discarded", rel, layer)
	case err != nil:
		return err
	}
	return json.NewEncoder(stdout).Encode(struct {
		LayerID   string `json:"layer_id"`
		ReleaseID string `json:"release_id"`
		State     string `json:"state"`
	}{layer, rel, ledger.ReleaseDiscarded})
}

// releaseJSON is one release in `release list`.
type releaseJSON struct {
	ReleaseID   string        `json:"release_id"`
	State       string        `json:"state"`
	Features    int64         `json:"features"`
	Tiles       int           `json:"tiles"`
	Bytes       int64         `json:"bytes"`
	IngestedAt  time.Time     `json:"ingested_at"`
	SourceDates []sourceDates `json:"source_dates"`
	Schema      string        `json:"schema_version"`
}

type sourceDates struct {
	SourceVariantID   string  `json:"source_variant_id"`
	SourcePublishedAt *string `json:"source_published_at"`
	SourceEffectiveAt *string `json:"source_effective_at"`
	RetrievedAt       *string `json:"retrieved_at"`
}

func releaseList(ctx context.Context, e *env, layer string, stdout io.Writer) error {
	rs, err := e.led.ListReleases(ctx, layer)
	if errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("no layer %q", layer)
	}
	if err != nil {
		return err
	}
	out := struct {
		LayerID  string        `json:"layer_id"`
		Releases []releaseJSON `json:"releases"`
	}{LayerID: layer, Releases: []releaseJSON{}}
	for _, r := range rs {
		var srcs []tiles.Source
		_ = json.Unmarshal(r.Sources, &srcs)
		dates := []sourceDates{}
		for _, s := range srcs {
			dates = append(dates, sourceDates{s.SourceVariantID, s.SourcePublishedAt, s.SourceEffectiveAt, s.RetrievedAt})
		}
		out.Releases = append(out.Releases, releaseJSON{ReleaseID: r.ReleaseID, State: r.State, Features: r.FeatureCount,
			Tiles: r.TileCount, Bytes: r.Bytes, IngestedAt: r.PublishedAt.UTC(), SourceDates: dates, Schema: r.SchemaVersion})
	}
	return json.NewEncoder(stdout).Encode(out)
}

func releaseDiff(ctx context.Context, e *env, layer, from, to, out string, tolerance float64, stdout io.Writer) error {
	if from == "" || to == "" {
		rs, err := e.led.ListReleases(ctx, layer)
		if errors.Is(err, ledger.ErrNotFound) {
			return fmt.Errorf("no layer %q", layer)
		}
		if err != nil {
			return err
		}
		for _, r := range rs { // newest first
			if from == "" && r.State == ledger.ReleaseCurrent {
				from = r.ReleaseID
			}
			if to == "" && r.State == ledger.ReleaseStaged {
				to = r.ReleaseID
			}
		}
		if from == "" {
			return fmt.Errorf("layer %q has no current release: name one with --from", layer)
		}
		if to == "" {
			return fmt.Errorf("layer %q has no staged release: name one with --to", layer)
		}
	}
	for _, r := range []string{from, to} {
		if _, err := e.led.Release(ctx, layer, r); errors.Is(err, ledger.ErrNotFound) {
			return fmt.Errorf("layer %q has no release %q", layer, r)
		} else if err != nil {
			return err
		}
	}
	st, err := e.openStore(ctx)
	if err != nil {
		return err
	}
	var w io.Writer
	if out == "" {
		dir, err := e.outDir("")
		if err != nil {
			return err
		}
		out = filepath.Join(dir, fmt.Sprintf("%s.%s..%s.csv", layer, short(from), short(to)))
	}
	var f *os.File
	var bw *bufio.Writer
	if out != "-" {
		if f, err = os.Create(out); err != nil {
			return err
		}
		bw = bufio.NewWriterSize(f, 1<<20)
		w = bw
	}
	format := ingest.ChangesCSV
	if strings.HasSuffix(strings.ToLower(out), ".parquet") {
		format = ingest.ChangesGeoParquet
	}
	start := time.Now()
	if tolerance == 0 {
		tolerance = -1 // exact
	}
	sum, err := ingest.DiffReleasesWith(ctx, st, layer, from, to, ingest.DiffOptions{Out: w, Format: format, Tolerance: tolerance})
	sum.ElapsedS = time.Since(start).Seconds()
	if f != nil {
		if err == nil {
			err = bw.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out)
		} else {
			sum.ChangesFile = out
		}
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(sum)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func releasePromote(ctx context.Context, e *env, layer, rel string, stdout io.Writer) error {
	prev, changed, err := e.led.PromoteRelease(ctx, layer, rel, actor("siteenv release promote"))
	if errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("layer %q has no release %q", layer, rel)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(struct {
		LayerID         string  `json:"layer_id"`
		ReleaseID       string  `json:"release_id"`
		PreviousRelease *string `json:"previous_release_id"`
		Changed         bool    `json:"changed"`
	}{layer, rel, prev, changed})
}

// parseLength reads a length with a unit: 1mm, 5cm, 0.5m, 2km; a bare
// number is metres.
func parseLength(s string) (float64, error) {
	s = strings.TrimSpace(s)
	unit := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"mm", 0.001}, {"cm", 0.01}, {"km", 1000}, {"m", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, unit = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a length such as 1mm, 5cm or 0.5m", s)
	}
	return v * unit, nil
}

// actor names who ran a command, for the release audit.
func actor(cmd string) string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return cmd + " (" + u.Username + ")"
	}
	return cmd
}
