package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestBadInputIsNotAnOutage: a value PostgreSQL refuses (here a NUL in a site
// name, SQLSTATE 22021) is the caller's bad input, named where the ledger
// knows the argument, never ErrUnavailable (which tells clients to retry a
// request that can never succeed).
func TestBadInputIsNotAnOutage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _ := b.led.CreateAccount(b.ctx, "", 0)
	name := "bad\x00name"
	site := ledger.Site{AccountID: acct.ID, Name: &name, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "aa"}
	ref := &ledger.ExternalRef{Namespace: "crm", Reference: "x\x00y"}
	good := "good"
	cases := map[string]func() error{
		"CreateSite name": func() error { _, err := b.led.CreateSite(b.ctx, site); return err },
		"SaveSite name":   func() error { _, _, err := b.led.SaveSite(b.ctx, site, nil, true); return err },
		"SaveSite reference": func() error {
			s := site
			s.Name = &good
			_, _, err := b.led.SaveSite(b.ctx, s, ref, true)
			return err
		},
	}
	want := map[string]string{"CreateSite name": "name", "SaveSite name": "name", "SaveSite reference": "external_reference.reference"}
	for n, f := range cases {
		err := f()
		var ie *ledger.InputError
		if !errors.Is(err, ledger.ErrInvalid) || errors.Is(err, ledger.ErrUnavailable) || !errors.As(err, &ie) {
			t.Fatalf("%s: %v, want ErrInvalid", n, err)
		}
		if ie.SQLState != "22021" || ie.Field != want[n] {
			t.Fatalf("%s: %+v, want 22021 naming %s", n, ie, want[n])
		}
	}
	if sites, err := b.led.ListSites(b.ctx, acct.ID, ledger.SiteFilter{Limit: 10}); err != nil || len(sites) != 0 {
		t.Fatalf("refused sites were written: %v %v", sites, err)
	}
	// The site row of the refused reference was rolled back with it.
	if _, _, err := b.led.SaveSite(b.ctx, site, nil, false); !errors.Is(err, ledger.ErrCreateNotPermitted) {
		t.Fatalf("partial write: %v", err)
	}
}

// TestErrorClasses runs real statements that fail on a real server with each
// class of SQLSTATE and checks the one classification every path uses.
func TestErrorClasses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raise := func(code string) string {
		return `DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '` + code + `'; END $$`
	}
	cases := []struct {
		name string
		sql  string
		args []any
		want error
	}{
		{"NUL in text 22021", `SELECT $1::text`, []any{"a\x00b"}, ledger.ErrInvalid},
		{"bad uuid 22P02", `SELECT $1::uuid`, []any{"nope"}, ledger.ErrInvalid},
		{"string too long 22001", raise("22001"), nil, ledger.ErrInvalid},
		{"division by zero 22012", `SELECT 1 / $1::int`, []any{0}, ledger.ErrInvalid},
		{"unique 23505", `INSERT INTO settings (name, value, updated_at) VALUES ('k', 1, now()), ('k', 2, now())`, nil, ledger.ErrConflict},
		{"not null 23502", raise("23502"), nil, ledger.ErrConflict},
		{"foreign key 23503", raise("23503"), nil, ledger.ErrInvalid},
		{"serialization 40001", raise("40001"), nil, ledger.ErrUnavailable},
		{"deadlock 40P01", raise("40P01"), nil, ledger.ErrUnavailable},
		{"admin shutdown 57P01", raise("57P01"), nil, ledger.ErrUnavailable},
		{"cannot connect now 57P03", raise("57P03"), nil, ledger.ErrUnavailable},
		{"connection failure 08006", raise("08006"), nil, ledger.ErrUnavailable},
		{"undefined table 42P01", `SELECT * FROM no_such_table`, nil, ledger.ErrInternal},
		{"syntax 42601", `SELEC 1`, nil, ledger.ErrInternal},
		{"raised P0001", raise("P0001"), nil, ledger.ErrInternal},
	}
	classes := []error{ledger.ErrInvalid, ledger.ErrConflict, ledger.ErrUnavailable, ledger.ErrInternal}
	for _, c := range cases {
		err := ledger.ExecForTest(b.ctx, b.led, c.sql, c.args...)
		for _, class := range classes {
			if errors.Is(err, class) != (class == c.want) {
				t.Errorf("%s: %v; want only %v", c.name, err, c.want)
			}
		}
	}
	// The database's message stays available for the server log.
	err := ledger.ExecForTest(b.ctx, b.led, `SELECT * FROM no_such_table`)
	var dbe *ledger.DBError
	if !errors.As(err, &dbe) || dbe.SQLState != "42P01" || dbe.Message == "" {
		t.Fatalf("detail lost: %#v", err)
	}
	// A cancelled caller is neither an outage nor a bug.
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	if err := ledger.ExecForTest(ctx, b.led, `SELECT 1`); !errors.Is(err, context.Canceled) || errors.Is(err, ledger.ErrInternal) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestLostConnectionsAreUnavailable: connections the server ends and a closed
// pool are outages (retryable), through the ordinary query paths.
func TestLostConnectionsAreUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := ledgertest.DSN(t)
	l, err := ledger.Open(ctx, dsn, ledger.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := l.CreateAccount(ctx, "", 5)
	if err != nil {
		t.Fatal(err)
	}
	// The server terminates the pooled connection (as a restart does).
	if err := ledger.ExecForTest(ctx, l, `SELECT pg_terminate_backend(pg_backend_pid())`); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("terminated connection: %v", err)
	}
	l.Close()
	if _, err := l.Account(ctx, acct.ID); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("closed pool: %v", err)
	}
}
