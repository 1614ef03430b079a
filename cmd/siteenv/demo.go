package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"siteenv/ingest"
	"siteenv/ingest/synth"
	"siteenv/ledger"
	storepkg "siteenv/store"
	"siteenv/tiles"
)

// demoSeed makes `make run` reproducible: the same demo data on every machine.
const demoSeed = 20261122

// demoReportPrice is the report price the demo configures (credits), so
// `make run` serves POST /reports; a price an operator set is kept.
const demoReportPrice = 25

func demoCmd(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	scale := fs.String("scale", "small", "small (~200k features), medium (~2M) or large (~20M)")
	seed := fs.Int64("seed", demoSeed, "generator seed")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	sc, err := synth.ParseScale(*scale)
	if err != nil {
		return usageError{err.Error()}
	}
	e, err := openEnv(ctx, set, *dataDir, set.logger(stderr))
	if err != nil {
		return err
	}
	defer e.close()
	res, err := loadDemo(ctx, e, sc, *seed, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "\nDemo data loaded. Serve it and call the API:\n  bin/siteenv serve --data-dir %s\n  KEY=$(cat %s)\n  curl -H \"Authorization: Bearer $KEY\" http://127.0.0.1:8080/api/v1/layers\n\n",
		e.dataDir, res.KeyFile)
	return json.NewEncoder(stdout).Encode(res)
}

type demoResult struct {
	AccountID string  `json:"account_id"`
	KeyFile   string  `json:"key_file"`
	Layers    int     `json:"layers"`
	Features  int64   `json:"features"`
	Addresses int64   `json:"addresses"`
	Parcels   int64   `json:"parcels"`
	ElapsedS  float64 `json:"elapsed_s"`
}

// loadDemo generates a synthetic Australia at scale, publishes every layer,
// loads the gazetteer and creates a demo account and all-scopes key. Re-running
// it republishes identical releases (no-ops) and keeps the existing key.
func loadDemo(ctx context.Context, e *env, scale synth.Scale, seed int64, progress io.Writer) (demoResult, error) {
	start := time.Now()
	g, err := synth.New(seed, scale)
	if err != nil {
		return demoResult{}, err
	}
	store, err := e.openStore(ctx)
	if err != nil {
		return demoResult{}, err
	}
	for _, s := range g.Sections() {
		if err := e.led.SetSection(ctx, s.Key, s.Name, s.Price); err != nil {
			return demoResult{}, err
		}
	}
	if err := ensureReportPrice(ctx, e.led); err != nil {
		return demoResult{}, err
	}
	// Two ingests at a time, each with half the ingest budget.
	mem := e.set.IngestMemory
	layers := g.Layers()
	var (
		mu       sync.Mutex
		features int64
		errs     []error
		wg       sync.WaitGroup
		work     = make(chan *ingest.LayerDef)
	)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for def := range work {
				sum, err := ingest.RunRows(ctx, ingest.Options{Layer: def, Store: store, Publisher: ingest.LedgerPublisher{Ledger: e.led}, CreatedBy: "siteenv demo", MemoryBudget: max(mem/2, 1)},
					func(yield func(ingest.Row) error) error {
						var n int64
						return g.Features(def.LayerID, func(f tiles.Feature) error {
							n++
							return yield(ingest.Row{File: "synth", Row: n, Feature: f})
						})
					})
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("layer %s: %w", def.LayerID, err))
				} else {
					features += sum.Features
					fmt.Fprintf(progress, "published %-40s %9d features  release %s\n", def.LayerID, sum.Features, sum.ReleaseID)
				}
				mu.Unlock()
			}
		}()
	}
	for _, def := range layers {
		work <- def
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return demoResult{}, err
	}
	// The basemap of the demo's towns, which serve draws under its maps.
	var bm bytes.Buffer
	if err := g.WriteBasemap(&bm); err != nil {
		return demoResult{}, fmt.Errorf("basemap: %w", err)
	}
	size := int64(bm.Len())
	// Objects are never overwritten: a demo run again keeps the first one.
	switch err := store.Put(ctx, storeBasemapKey, &bm, size); {
	case errors.Is(err, storepkg.ErrExists):
		fmt.Fprintf(progress, "basemap: %s kept\n", storeBasemapKey)
	case err != nil:
		return demoResult{}, fmt.Errorf("basemap: %w", err)
	default:
		fmt.Fprintf(progress, "basemap: %s, %d bytes\n", storeBasemapKey, size)
	}
	na, np, err := loadGazetteer(ctx, e.led, g.Addresses, g.Parcels)
	if err != nil {
		return demoResult{}, fmt.Errorf("gazetteer: %w", err)
	}
	fmt.Fprintf(progress, "gazetteer: %d addresses, %d parcels\n", na, np)
	acct, keyFile, err := ensureDemoKey(ctx, e)
	if err != nil {
		return demoResult{}, err
	}
	return demoResult{AccountID: acct, KeyFile: keyFile, Layers: len(layers), Features: features, Addresses: na, Parcels: np,
		ElapsedS: time.Since(start).Seconds()}, nil
}

// ensureDemoKey creates, once, a demo account with credits and an all-scopes
// key kept in <data-dir>/demo-key (0600); the key is never printed.
func ensureDemoKey(ctx context.Context, e *env) (accountID, path string, err error) {
	path = filepath.Join(e.dataDir, "demo-key")
	idPath := filepath.Join(e.dataDir, "demo-account")
	if b, err := os.ReadFile(idPath); err == nil {
		if _, err := os.Stat(path); err == nil {
			return string(b), path, nil
		}
	}
	acct, err := e.led.CreateAccount(ctx, "Demo account", 1000)
	if err != nil {
		return "", "", err
	}
	k, err := e.led.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: ledger.Scopes})
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(path, []byte(k.Secret+"\n"), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(idPath, []byte(acct.ID.String()), 0o644); err != nil {
		return "", "", err
	}
	return acct.ID.String(), path, nil
}

// ensureReportPrice sets the demo's report price unless one is set.
func ensureReportPrice(ctx context.Context, led *ledger.Ledger) error {
	_, err := led.Setting(ctx, ledger.SettingReportPrice)
	if errors.Is(err, ledger.ErrNotFound) {
		return led.SetSetting(ctx, ledger.SettingReportPrice, demoReportPrice)
	}
	return err
}
