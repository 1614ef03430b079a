package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"siteenv/geo"
	"siteenv/ingest"
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
	stage := fs.Bool("stage", false, "publish the release without making it current (review it with siteenv release diff, then promote)")
	idProp := fs.String("id-property", "", "property holding each feature's unique id")
	maxRejects := fs.Int64("max-rejects", 0, "abort without publishing when more rows are rejected")
	rejects := fs.String("rejects", "", "rejects CSV (file,row,reason); default <layer_id>.rejects.csv")
	repair := fs.Bool("repair", false, "make invalid polygons valid as PostGIS ST_MakeValid does (a bowtie becomes two triangles) instead of rejecting them")
	dropUnknown := fs.Bool("drop-unknown-fields", false, "drop source columns that are not fields of the layer's field_schema (listed in the summary)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *layerPath == "" || fs.NArg() == 0 {
		return usageError{"usage: siteenv ingest --layer layer.json [--source-crs EPSG:N] [--table NAME] [--stage] [--id-property NAME] FILE..."}
	}
	def, err := ingest.ReadLayerDef(*layerPath)
	if err != nil {
		return err
	}
	if *rejects == "" {
		*rejects = def.LayerID + ".rejects.csv"
	}
	log := set.logger(stderr)
	e, err := openEnv(ctx, set, *dataDir, log)
	if err != nil {
		return err
	}
	defer e.close()
	st, err := e.openStore(ctx)
	if err != nil {
		return err
	}
	sum, err := ingest.Run(ctx, ingest.Options{
		Layer: def, SourceCRS: *srcCRS, Table: *table, IDProperty: *idProp, MaxRejects: *maxRejects, RejectsPath: *rejects, MemoryBudget: set.IngestMemory,
		Repair: *repair, DropUnknownFields: *dropUnknown,
		Store: st, Publisher: ingest.LedgerPublisher{Ledger: e.led, Stage: *stage, Actor: actor("siteenv ingest")}, Progress: os.Stderr,
	}, fs.Args()...)
	if err != nil {
		if sum.Rejected > 0 {
			return fmt.Errorf("%w (rejected rows are listed in %s)", err, *rejects)
		}
		return err
	}
	return json.NewEncoder(stdout).Encode(sum)
}
