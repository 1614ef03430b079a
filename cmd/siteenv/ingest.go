package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"siteenv/engine/geo"
	"siteenv/ingest"
	"siteenv/store"
)

// openStore opens SITEENV_STORE, or file://<data-dir>/store.
func (e *env) openStore(ctx context.Context) (store.Store, error) {
	u := os.Getenv("SITEENV_STORE")
	if u == "" {
		dir := filepath.Join(e.dataDir, "store")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		u = "file://" + dir
	}
	return store.OpenStore(ctx, u, s3ConfigFromEnv())
}

// s3ConfigFromEnv reads SITEENV_S3_ENDPOINT, SITEENV_S3_ACCESS_KEY,
// SITEENV_S3_SECRET_KEY and, optionally, SITEENV_S3_REGION. UseSSL is true
// unless the endpoint starts with "http://".
func s3ConfigFromEnv() store.S3Config {
	ep := os.Getenv("SITEENV_S3_ENDPOINT")
	return store.S3Config{
		Endpoint:  ep,
		AccessKey: os.Getenv("SITEENV_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("SITEENV_S3_SECRET_KEY"),
		Region:    os.Getenv("SITEENV_S3_REGION"),
		UseSSL:    !strings.HasPrefix(strings.ToLower(ep), "http://"),
	}
}

func ingestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "gazetteer" {
		return gazetteerCmd(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs)
	layerPath := fs.String("layer", "", "layer.json (required)")
	srcCRS := fs.String("source-crs", "", "CRS of the inputs (default OGC:CRS84, or what the file names): "+geo.SourceCRSList)
	table := fs.String("table", "", "GeoPackage feature table (default: the only one)")
	stage := fs.Bool("stage", false, "publish the release without making it current (review it with siteenv release diff, then promote)")
	idProp := fs.String("id-property", "", "property holding each feature's unique id")
	maxRejects := fs.Int64("max-rejects", 0, "abort without publishing when more rows are rejected")
	rejects := fs.String("rejects", "", "rejects CSV (file,row,reason); default <layer_id>.rejects.csv")
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
	log := newLogger(stderr)
	e, err := openEnv(ctx, *dataDir, log)
	if err != nil {
		return err
	}
	defer e.close()
	st, err := e.openStore(ctx)
	if err != nil {
		return err
	}
	mem, err := ingestMemory()
	if err != nil {
		return err
	}
	sum, err := ingest.Run(ctx, ingest.Options{
		Layer: def, SourceCRS: *srcCRS, Table: *table, IDProperty: *idProp, MaxRejects: *maxRejects, RejectsPath: *rejects, MemoryBudget: mem,
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
