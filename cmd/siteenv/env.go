package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"siteenv/ledger"
	"siteenv/ledger/pgembed"
)

// env is what every command shares: the settings, the data dir, the
// database and the secret.
type env struct {
	set     settings
	dataDir string
	log     *slog.Logger
	led     *ledger.Ledger
	cluster *pgembed.Cluster
}

// dataDirFlag registers --data-dir (default SITEENV_DATA_DIR, else ./var).
func dataDirFlag(fs *flag.FlagSet, set settings) *string {
	return fs.String("data-dir", set.DataDir, "data directory (embedded database, store, secret)")
}

// openEnv opens the ledger: SITEENV_DATABASE_URL when set, otherwise the
// embedded cluster under <data-dir>/pg (started here, or attached to when a
// server already runs it).
func openEnv(ctx context.Context, set settings, dataDir string, log *slog.Logger) (*env, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	e := &env{set: set, dataDir: abs, log: log}
	dsn := set.DatabaseURL
	if dsn == "" {
		c, err := pgembed.Start(ctx, filepath.Join(abs, "pg"), pgembed.Options{Database: "siteenv", Logger: log, BinDir: set.PGBin})
		if err != nil {
			if errors.Is(err, pgembed.ErrNoBinaries) {
				return nil, fmt.Errorf("%w\n(or point SITEENV_DATABASE_URL at an existing PostgreSQL)", err)
			}
			return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
		}
		e.cluster = c
		dsn = c.DSN("siteenv")
	}
	led, err := ledger.Open(ctx, dsn, ledger.Options{Logger: log})
	if err != nil {
		e.close()
		return nil, err
	}
	e.led = led
	return e, nil
}

// close releases the ledger and stops the embedded cluster's supervisor, and
// the cluster itself if this process owns it (started or adopted it).
func (e *env) close() {
	if e.led != nil {
		e.led.Close()
	}
	if e.cluster != nil {
		if err := e.cluster.Stop(context.Background()); err != nil {
			e.log.Error("stopping embedded PostgreSQL", "err", err)
		}
	}
}

// secret is SITEENV_SECRET, or a random secret generated once into the data
// dir (replicas sharing a database must share SITEENV_SECRET).
func (e *env) secret() ([]byte, error) {
	if s := e.set.Secret; s != "" {
		return []byte(s), nil // at least 32 characters (readSettings)
	}
	path := filepath.Join(e.dataDir, "secret")
	b, err := os.ReadFile(path)
	if err == nil {
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return nil, err
	}
	s := hex.EncodeToString(buf)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return e.secret() // another process won the race
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return []byte(s), f.Close()
}
