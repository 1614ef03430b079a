// Package ledgertest gives tests a real PostgreSQL: one throwaway cluster per
// test binary (or SITEENV_TEST_DATABASE_URL), and a fresh, migrated database
// per test cloned from a template, so tests run in parallel in isolation.
package ledgertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/pgembed"
)

const templateDB = "siteenv_template"

var (
	once     sync.Once
	onceErr  error
	cluster  *pgembed.Cluster
	adminDSN string
	dsnFor   func(db string) string
	tmpDir   string
	counter  atomic.Int64
	// createMu serialises CREATE DATABASE ... TEMPLATE: PostgreSQL refuses to
	// copy a template that another session is copying at the same moment.
	createMu sync.Mutex
)

// Main runs the package's tests and then stops the throwaway cluster.
// Call it from TestMain: func TestMain(m *testing.M) { ledgertest.Main(m) }.
// m is *testing.M or a wrapper of it (leakcheck.Wrap).
func Main(m interface{ Run() int }) {
	code := m.Run()
	if cluster != nil {
		_ = cluster.Stop(context.Background())
	}
	if tmpDir != "" {
		_ = os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

func setup() error {
	ctx := context.Background()
	if url := os.Getenv("SITEENV_TEST_DATABASE_URL"); url != "" {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			return fmt.Errorf("SITEENV_TEST_DATABASE_URL: %w", err)
		}
		adminDSN = url
		dsnFor = func(db string) string {
			c := cfg.Copy()
			return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable", c.Host, c.Port, c.User, c.Password, db)
		}
	} else {
		dir, err := os.MkdirTemp("", "siteenv-test-pg-")
		if err != nil {
			return err
		}
		tmpDir = dir
		// The postgres user must be able to reach the cluster directory.
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		c, err := pgembed.Start(ctx, dir+"/pg", pgembed.Options{Database: "postgres", Ephemeral: true, BinDir: os.Getenv("SITEENV_PG_BIN")})
		if err != nil {
			return err
		}
		cluster = c
		adminDSN = c.DSN("postgres")
		dsnFor = c.DSN
	}
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// A template migrated once; each test clones it (much faster than migrating).
	tmplName := fmt.Sprintf("%s_%d", templateDB, os.Getpid())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+tmplName); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+tmplName); err != nil {
		return err
	}
	l, err := ledger.Open(ctx, dsnFor(tmplName), ledger.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	l.Close()
	return nil
}

// DSN returns the DSN of a fresh migrated database dropped at test cleanup.
func DSN(t testing.TB) string {
	t.Helper()
	once.Do(func() { onceErr = setup() })
	if onceErr != nil {
		t.Fatalf("ledgertest: cannot start PostgreSQL: %v", onceErr)
	}
	ctx := context.Background()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), counter.Add(1))
	tmplName := fmt.Sprintf("%s_%d", templateDB, os.Getpid())
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		t.Fatalf("ledgertest: connect: %v", err)
	}
	createMu.Lock()
	_, err = conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tmplName))
	createMu.Unlock()
	conn.Close(ctx)
	if err != nil {
		t.Fatalf("ledgertest: create database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, adminDSN)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return dsnFor(name)
}

// New opens a Ledger on a fresh database with the given clock (nil: real clock).
func New(t testing.TB, clk clock.Clock) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), DSN(t), ledger.Options{Clock: clk, MaxConns: 10})
	if err != nil {
		t.Fatalf("ledgertest: open: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}
