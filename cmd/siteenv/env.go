package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"siteenv/ledger"
	"siteenv/ledger/pgembed"
)

// env is what every command shares: the data dir, the database and the secret.
type env struct {
	dataDir string
	log     *slog.Logger
	led     *ledger.Ledger
	cluster *pgembed.Cluster
}

// dataDirFlag registers --data-dir (default $SITEENV_DATA_DIR, else ./var).
func dataDirFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("SITEENV_DATA_DIR")
	if def == "" {
		def = "./var"
	}
	return fs.String("data-dir", def, "data directory (embedded database, store, secret)")
}

// newLogger logs text at SITEENV_LOG_LEVEL (checked by checkEnv before any
// command runs).
func newLogger(w io.Writer) *slog.Logger {
	level, _ := logLevel()
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// logLevel parses SITEENV_LOG_LEVEL: debug, info (default), warn or error.
func logLevel() (slog.Level, error) {
	level := slog.LevelInfo
	v := strings.TrimSpace(os.Getenv("SITEENV_LOG_LEVEL"))
	if v == "" {
		return level, nil
	}
	if err := level.UnmarshalText([]byte(v)); err != nil {
		return slog.LevelInfo, fmt.Errorf("SITEENV_LOG_LEVEL must be debug, info, warn or error, got %q", v)
	}
	return level, nil
}

// checkEnv validates the environment every command reads, once, before
// anything starts: a bad value stops the command with a message naming it
// rather than being ignored.
func checkEnv() error {
	if _, err := logLevel(); err != nil {
		return err
	}
	if _, err := storeRecent(); err != nil {
		return err
	}
	if _, err := engineMemory(); err != nil {
		return err
	}
	if _, err := ingestMemory(); err != nil {
		return err
	}
	if _, err := queryTimings(); err != nil {
		return err
	}
	if s := os.Getenv("SITEENV_SECRET"); s != "" && len(s) < 32 {
		return errors.New("SITEENV_SECRET must be at least 32 characters")
	}
	return nil
}

// openEnv opens the ledger: SITEENV_DATABASE_URL when set, otherwise the
// embedded cluster under <data-dir>/pg (started here, or attached to when a
// server already runs it).
func openEnv(ctx context.Context, dataDir string, log *slog.Logger) (*env, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	e := &env{dataDir: abs, log: log}
	dsn := os.Getenv("SITEENV_DATABASE_URL")
	if dsn == "" {
		c, err := pgembed.Start(ctx, filepath.Join(abs, "pg"), pgembed.Options{Database: "siteenv", Logger: log, BinDir: os.Getenv("SITEENV_PG_BIN")})
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
	if s := os.Getenv("SITEENV_SECRET"); s != "" {
		if len(s) < 32 {
			return nil, errors.New("SITEENV_SECRET must be at least 32 characters")
		}
		return []byte(s), nil
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
