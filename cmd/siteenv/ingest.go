package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"siteenv/geo"
	"siteenv/ingest"
	"siteenv/ledger"
	"siteenv/store"
)

// openStore opens SITEENV_STORE, or file://<data-dir>/store.
func (e *env) openStore(ctx context.Context) (store.Store, error) {
	u := e.set.Store
	if u == "" {
		dir := filepath.Join(e.dataDir, "store")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		u = "file://" + dir
	}
	return store.OpenStore(ctx, u, e.set.S3)
}

// outDir is where a command writes the files it makes for people (rejects,
// changes) when not told: <data-dir>/out, never the current directory.
func (e *env) outDir(flagValue string) (string, error) {
	dir := flagValue
	if dir == "" {
		dir = filepath.Join(e.dataDir, "out")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return abs, os.MkdirAll(abs, 0o755)
}

const ingestUsage = "usage: siteenv ingest --layer layer.json [--source-crs EPSG:N] [--id-property NAME] [--repair] [--drop-unknown-fields|--keep-unknown-fields] [--stage|--publish] [--out DIR] [--json] FILE..."

func ingestCmd(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "gazetteer" {
		return gazetteerCmd(ctx, set, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	layerPath := fs.String("layer", "", "layer.json (required)")
	srcCRS := fs.String("source-crs", "", "CRS of the inputs (default OGC:CRS84, or what the file names): "+geo.SourceCRSList)
	table := fs.String("table", "", "GeoPackage feature table (default: the only one)")
	stage := fs.Bool("stage", false, "publish the release without making it current (the default when the layer has a current release)")
	publish := fs.Bool("publish", false, "make the release current at once, even when the layer has a current release")
	idProp := fs.String("id-property", "", "property holding each feature's unique id")
	maxRejects := fs.Int64("max-rejects", 0, "abort without publishing when more rows are rejected")
	outFlag := fs.String("out", "", "directory for the rejects CSV (default <data-dir>/out)")
	rejects := fs.String("rejects", "", "rejects CSV (file,row,reason); default <out>/<layer_id>.rejects.csv")
	repair := fs.Bool("repair", false, "make invalid polygons valid as PostGIS ST_MakeValid does (a bowtie becomes two triangles) instead of rejecting them")
	dropUnknown := fs.Bool("drop-unknown-fields", false, "drop source columns that are not fields of the layer's field_schema (listed in the summary; overrides the layer's unknown_fields)")
	keepUnknown := fs.Bool("keep-unknown-fields", false, "keep source columns that are not fields of the layer's field_schema as string fields of the release under their own names (listed in the summary; overrides the layer's unknown_fields)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object instead of text")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *layerPath == "" || fs.NArg() == 0 {
		return usageError{ingestUsage}
	}
	if *stage && *publish {
		return usageError{"--stage and --publish exclude each other"}
	}
	if *dropUnknown && *keepUnknown {
		return usageError{"--drop-unknown-fields and --keep-unknown-fields exclude each other"}
	}
	def, err := ingest.ReadLayerDef(*layerPath)
	if err != nil {
		return err
	}
	log := set.logger(stderr)
	e, err := openEnv(ctx, set, *dataDir, log)
	if err != nil {
		return err
	}
	defer e.close()
	if *rejects == "" {
		dir, err := e.outDir(*outFlag)
		if err != nil {
			return err
		}
		*rejects = filepath.Join(dir, def.LayerID+".rejects.csv")
	}
	st, err := e.openStore(ctx)
	if err != nil {
		return err
	}
	// Replacing a live release takes a deliberate step: stage unless told.
	hasCurrent, err := layerHasCurrent(ctx, e.led, def.LayerID)
	if err != nil {
		return err
	}
	staging := *stage || (hasCurrent && !*publish)
	sum, err := ingest.Run(ctx, ingest.Options{
		Layer: def, SourceCRS: *srcCRS, Table: *table, IDProperty: *idProp, MaxRejects: *maxRejects, RejectsPath: *rejects, MemoryBudget: set.IngestMemory,
		Repair: *repair, DropUnknownFields: *dropUnknown, KeepUnknownFields: *keepUnknown,
		Store: st, Publisher: ingest.LedgerPublisher{Ledger: e.led, Stage: staging, Actor: actor("siteenv ingest")}, Progress: os.Stderr,
	}, fs.Args()...)
	if err != nil {
		if sum.Rejected > 0 {
			return fmt.Errorf("%w (rejected rows are listed in %s)", err, *rejects)
		}
		return err
	}
	state, err := releaseState(ctx, e.led, def.LayerID, sum.ReleaseID)
	if err != nil {
		return err
	}
	out := ingestOutput{Summary: sum, State: state}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(out)
	}
	printIngestSummary(stdout, out, hasCurrent && !*stage && !*publish)
	return nil
}

// ingestOutput is the summary `ingest --json` prints: ingest.Summary and
// the release's state in the catalogue (current, staged or previous).
type ingestOutput struct {
	ingest.Summary
	State string `json:"state"`
}

func layerHasCurrent(ctx context.Context, led *ledger.Ledger, layer string) (bool, error) {
	rs, err := led.ListReleases(ctx, layer)
	if errors.Is(err, ledger.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range rs {
		if r.State == ledger.ReleaseCurrent {
			return true, nil
		}
	}
	return false, nil
}

func releaseState(ctx context.Context, led *ledger.Ledger, layer, rel string) (string, error) {
	rs, err := led.ListReleases(ctx, layer)
	if err != nil {
		return "", err
	}
	for _, r := range rs {
		if r.ReleaseID == rel {
			return r.State, nil
		}
	}
	return "", fmt.Errorf("release %s of %s is not in the catalogue", rel, layer)
}

// printIngestSummary prints the summary for people.
func printIngestSummary(w io.Writer, o ingestOutput, stagedByDefault bool) {
	s := o.Summary
	what := "published and current"
	switch {
	case s.SameInput:
		what = "unchanged: the same input as an earlier ingest, release " + o.State
	case o.State == ledger.ReleaseStaged:
		what = "staged (not current)"
	case o.State != ledger.ReleaseCurrent:
		what = o.State
	}
	fmt.Fprintf(w, "%s: release %s %s\n", s.LayerID, s.ReleaseID, what)
	fmt.Fprintf(w, "  %s, %d rejected, %d repaired, %s in %.1f s\n",
		plural(s.Features, "feature"), s.Rejected, s.Repaired, plural(int64(s.Tiles), "tile"), s.ElapsedS)
	if len(s.DroppedFields) > 0 {
		fmt.Fprintf(w, "  dropped columns: %s\n", strings.Join(s.DroppedFields, ", "))
	}
	if len(s.KeptFields) > 0 {
		fmt.Fprintf(w, "  kept columns (as string fields): %s\n", strings.Join(s.KeptFields, ", "))
	}
	if len(s.RenamedFields) > 0 {
		var rs []string
		for _, k := range sortedKeys(s.RenamedFields) {
			rs = append(rs, k+" -> "+s.RenamedFields[k])
		}
		fmt.Fprintf(w, "  renamed columns: %s\n", strings.Join(rs, ", "))
	}
	if s.RejectsFile != "" {
		fmt.Fprintf(w, "  rejects: %s\n", s.RejectsFile)
	}
	if o.State == ledger.ReleaseStaged {
		if stagedByDefault {
			fmt.Fprintf(w, "  the layer has a current release, so this one is staged (--publish makes it current at once)\n")
		}
		fmt.Fprintf(w, "  review: siteenv review   or   siteenv release diff --layer %s\n", s.LayerID)
		fmt.Fprintf(w, "  promote: siteenv release promote --layer %s --release %s\n", s.LayerID, s.ReleaseID)
	}
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
