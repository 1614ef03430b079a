package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// onDSN opens a ledger on dsn (a test that opens two, as two replicas,
// or looks at rows through rawConn); closed at cleanup.
func onDSN(t *testing.T, dsn string, clk clock.Clock) *ledger.Ledger {
	t.Helper()
	led, err := ledger.Open(context.Background(), dsn, ledger.Options{Clock: clk, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(led.Close)
	return led
}

// rawConn is a plain connection to dsn, for a test that reads or writes
// rows the ledger's API does not show; closed at cleanup.
func rawConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

type bundle struct {
	ctx   context.Context
	led   *ledger.Ledger
	clock *clock.Fake
}

func setup(t *testing.T) bundle {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	return bundle{ctx: context.Background(), led: ledgertest.New(t, clk), clock: clk}
}

// accountKey creates an account without credits and a key of it holding
// scopes.
func (b bundle) accountKey(t *testing.T, scopes ...string) (ledger.Account, ledger.NewKey) {
	t.Helper()
	a, err := b.led.CreateAccount(b.ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: a.ID, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return a, k
}

func TestMigrationsIdempotentAndTooNewRefused(t *testing.T) {
	t.Parallel()
	dsn := ledgertest.DSN(t)
	ctx := context.Background()
	l, err := ledger.Open(ctx, dsn, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	// Reopening applies nothing and succeeds.
	l, err = ledger.Open(ctx, dsn, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.BumpSchemaForTest(ctx, l, ledger.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, err = ledger.Open(ctx, dsn, ledger.Options{})
	if !errors.Is(err, ledger.ErrSchemaTooNew) {
		t.Fatalf("want ErrSchemaTooNew, got %v", err)
	}
}

func TestKeysAuthenticateRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, err := b.led.CreateAccount(b.ctx, "Acme", 50)
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(300)
	k1, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"usage:read", "sites:read"}, SpendLimit: &limit, Datasets: []string{"b", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(k1.Secret) != len(ledger.KeyPrefix)+43 {
		t.Fatalf("key %d chars, want prefix + 43 (256 bits)", len(k1.Secret))
	}
	// A second key on the same integration shares its cap.
	k2, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"sites:read"}, Integration: &k1.IntegrationID})
	if err != nil {
		t.Fatal(err)
	}
	if k2.IntegrationID != k1.IntegrationID {
		t.Fatal("additional key did not join the integration")
	}
	in, err := b.led.Integration(b.ctx, k2.IntegrationID)
	if err != nil || in.SpendLimit != 300 {
		t.Fatalf("integration %+v %v", in, err)
	}
	// --spend-limit with --integration is refused: the cap belongs to the integration.
	if _, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"sites:read"}, Integration: &k1.IntegrationID, SpendLimit: &limit}); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	// Another account cannot attach to this integration.
	other, _ := b.led.CreateAccount(b.ctx, "Other", 0)
	if _, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: other.ID, Scopes: []string{"sites:read"}, Integration: &k1.IntegrationID}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	if _, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"sites:delete"}}); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("unknown scope: want ErrInvalid, got %v", err)
	}

	p, err := b.led.Authenticate(b.ctx, k1.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if p.AccountID != acct.ID || !p.HasScope("usage:read") || p.HasScope("sites:write") {
		t.Fatalf("principal %+v", p)
	}
	if ds := p.DatasetIDs(); len(ds) != 2 || ds[0] != "a" {
		t.Fatalf("datasets %v", ds)
	}
	if _, err := b.led.Authenticate(b.ctx, k1.Secret+"x"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("wrong key: %v", err)
	}
	if err := b.led.RevokeKey(b.ctx, k1.KeyID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.led.Authenticate(b.ctx, k1.Secret); !errors.Is(err, ledger.ErrKeyRevoked) {
		t.Fatalf("revoked key: %v", err)
	}
	if err := b.led.RevokeKey(b.ctx, uuid.New()); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
}

func TestDatasetNarrowing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		key, acct []string
		want      []string
		permitsA  bool
	}{
		{"all/all", nil, nil, nil, true},
		{"list/all", []string{"a"}, nil, []string{"a"}, true},
		{"none/all", []string{}, nil, []string{}, false},
		{"all/list", nil, []string{"b"}, []string{"b"}, false},
		{"key cannot widen the account", []string{"a", "b"}, []string{"b"}, []string{"b"}, false},
	}
	for _, c := range cases {
		p := ledger.Principal{KeyDatasets: c.key, AccountDatasets: c.acct}
		got := p.DatasetIDs()
		if (got == nil) != (c.want == nil) || len(got) != len(c.want) {
			t.Errorf("%s: got %v want %v", c.name, got, c.want)
		}
		if p.PermitsDataset("a") != c.permitsA {
			t.Errorf("%s: PermitsDataset(a) = %v", c.name, !c.permitsA)
		}
	}
}

func TestRateWindowSharedAcrossCallers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _ := b.led.CreateAccount(b.ctx, "", 0)
	for i := 0; i < 3; i++ {
		ok, _, err := b.led.Hit(b.ctx, acct.ID, "reads", 3, time.Minute)
		if err != nil || !ok {
			t.Fatalf("hit %d: %v %v", i, ok, err)
		}
	}
	ok, wait, err := b.led.Hit(b.ctx, acct.ID, "reads", 3, time.Minute)
	if err != nil || ok {
		t.Fatalf("4th hit allowed: %v %v", ok, err)
	}
	if wait != 30*time.Second {
		t.Fatalf("retry after %v, want 30s (clock is 30 s into the minute)", wait)
	}
	b.clock.Advance(30 * time.Second)
	if ok, _, _ := b.led.Hit(b.ctx, acct.ID, "reads", 3, time.Minute); !ok {
		t.Fatal("new window still limited")
	}
}

func TestActivityNewestFirstWithFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _ := b.led.CreateAccount(b.ctx, "", 0)
	k, _ := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"usage:read"}})
	other, _ := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"usage:read"}})
	for i, op := range []string{"get_context", "get_usage", "get_context"} {
		b.clock.Advance(time.Second)
		if err := b.led.RecordActivity(b.ctx, acct.ID, k.IntegrationID, ledger.Activity{Operation: op, Outcome: "completed", RequestID: uuid.New(), HTTPStatus: 200 + i}); err != nil {
			t.Fatal(err)
		}
	}
	_ = b.led.RecordActivity(b.ctx, acct.ID, other.IntegrationID, ledger.Activity{Operation: "get_context", Outcome: "completed", RequestID: uuid.New(), HTTPStatus: 200})
	all, err := b.led.ListActivity(b.ctx, k.IntegrationID, ledger.ActivityFilter{Limit: 10})
	if err != nil || len(all) != 3 {
		t.Fatalf("%d rows %v (another integration's activity must not appear)", len(all), err)
	}
	if all[0].HTTPStatus != 202 || all[2].HTTPStatus != 200 {
		t.Fatal("not newest first")
	}
	ctxOnly, _ := b.led.ListActivity(b.ctx, k.IntegrationID, ledger.ActivityFilter{Operation: "get_context", Limit: 10})
	if len(ctxOnly) != 2 {
		t.Fatalf("operation filter: %d", len(ctxOnly))
	}
	after, _ := b.led.ListActivity(b.ctx, k.IntegrationID, ledger.ActivityFilter{AfterTime: &all[0].CreatedAt, AfterID: all[0].ID, Limit: 10})
	if len(after) != 2 || after[0].ID != all[1].ID {
		t.Fatalf("keyset continuation: %d", len(after))
	}
	from := all[1].CreatedAt
	ranged, _ := b.led.ListActivity(b.ctx, k.IntegrationID, ledger.ActivityFilter{CreatedFrom: &from, CreatedBefore: &all[0].CreatedAt, Limit: 10})
	if len(ranged) != 1 || ranged[0].ID != all[1].ID {
		t.Fatalf("created_from inclusive / created_before exclusive: %d", len(ranged))
	}
}

func TestCreditsSettingsSectionsPortfolios(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _ := b.led.CreateAccount(b.ctx, "", 10)
	bal, err := b.led.GrantCredits(b.ctx, acct.ID, 15)
	if err != nil || bal != 25 {
		t.Fatalf("grant: %d %v", bal, err)
	}
	if _, err := b.led.GrantCredits(b.ctx, acct.ID, 0); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("zero grant: %v", err)
	}
	if _, err := b.led.GrantCredits(b.ctx, uuid.New(), 5); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
	if err := b.led.SetSetting(b.ctx, ledger.SettingReportPrice, 40); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.led.Setting(b.ctx, ledger.SettingReportPrice); v != 40 {
		t.Fatal(v)
	}
	if err := b.led.SetSetting(b.ctx, "colour", 1); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatal(err)
	}
	if err := b.led.SetSection(b.ctx, "flood", "Flood", 25); err != nil {
		t.Fatal(err)
	}
	if err := b.led.SetSection(b.ctx, "flood", "Flood and inundation", 0); err != nil {
		t.Fatal(err)
	}
	if s, _ := b.led.Section(b.ctx, "flood"); s.Price != 0 || s.Name != "Flood and inundation" {
		t.Fatalf("%+v", s)
	}
	if _, err := b.led.CreatePortfolio(b.ctx, acct.ID, "North"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.led.CreatePortfolio(b.ctx, uuid.New(), "North"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("portfolio for unknown account: %v", err)
	}
}
