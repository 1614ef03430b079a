// Package ledgertest gives tests a real PostgreSQL: one throwaway cluster per
// test binary (or SITEENV_TEST_DATABASE_URL), and a fresh, migrated database
// per test cloned from a template, so tests run in parallel in isolation.
package ledgertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
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
			// Quoted: an empty password unquoted would swallow the next
			// setting (dbname) as its value.
			return fmt.Sprintf("host='%s' port=%d user='%s' password='%s' dbname='%s' sslmode=disable", c.Host, c.Port, c.User, c.Password, db)
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

// Proxy is a TCP proxy in front of a test database, so a test can cut a
// client off the way a crashed process or a failed network does: Kill drops
// every proxied connection (the server sees them vanish and rolls back their
// transactions) and refuses new ones, as an unreachable database does.
type Proxy struct {
	ln     net.Listener
	target func() (net.Conn, error)
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

// NewProxy starts a proxy to the database of dsn and returns it with the DSN
// that connects through it. It is killed at test cleanup.
func NewProxy(t testing.TB, dsn string) (*Proxy, string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("ledgertest: proxy: %v", err)
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ledgertest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: func() (net.Conn, error) { return net.Dial(network, addr) }}
	go p.serve()
	t.Cleanup(p.Kill)
	port := ln.Addr().(*net.TCPAddr).Port
	out := fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable", port, cfg.User, cfg.Database)
	if cfg.Password != "" {
		out += " password=" + cfg.Password
	}
	return p, out
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := p.target()
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.killed {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); s.Close() }()
		go func() { _, _ = io.Copy(c, s); c.Close() }()
	}
}

// Kill drops every connection through the proxy and refuses new ones.
func (p *Proxy) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return
	}
	p.killed = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}
