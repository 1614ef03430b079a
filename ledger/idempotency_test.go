package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

func TestIdempotencyClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _ := b.led.CreateAccount(b.ctx, "", 0)
	k, _ := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"sites:read"}})
	fp := []byte("fp1")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fresh []ledger.IdemClaim
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k1", "create_site", fp)
			if err != nil {
				t.Error(err)
				return
			}
			if c.State == ledger.IdemFresh {
				mu.Lock()
				fresh = append(fresh, c)
				mu.Unlock()
			} else if c.State != ledger.IdemInFlight {
				t.Errorf("state %v", c.State)
			}
		}()
	}
	wg.Wait()
	if len(fresh) != 1 {
		t.Fatalf("%d fresh claims, want 1", len(fresh))
	}
	if c, _ := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k1", "create_site", []byte("other")); c.State != ledger.IdemMismatch {
		t.Fatalf("changed request: %v", c.State)
	}
	// Only the claim's holder completes it.
	if err := b.led.CompleteIdempotency(b.ctx, k.IntegrationID, "k1", uuid.New(), ledger.IdemResponse{Status: 500}); !errors.Is(err, ledger.ErrClaimLost) {
		t.Fatalf("a stranger completed the claim: %v", err)
	}
	if err := b.led.CompleteIdempotency(b.ctx, k.IntegrationID, "k1", fresh[0].Token, ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: []byte(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	c, _ := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k1", "create_site", fp)
	if c.State != ledger.IdemReplay || string(c.Response.Body) != `{"x":1}` {
		t.Fatalf("replay: %+v", c)
	}
	// A released claim executes again.
	c, _ = b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k3", "create_site", fp)
	if err := b.led.ReleaseIdempotency(b.ctx, k.IntegrationID, "k3", c.Token); err != nil {
		t.Fatal(err)
	}
	if c, _ := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k3", "create_site", fp); c.State != ledger.IdemFresh {
		t.Fatalf("released claim: %v", c.State)
	}
}

// TestIdempotencyClaimOfDeadProcessIsTakenOver: a replica claims a key and
// dies (its lease renewal stops, as after kill -9); as soon as the lease
// lapses the retry on another replica owns the key, and the dead claimer can
// neither complete nor release it any more.
func TestIdempotencyClaimOfDeadProcessIsTakenOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	dsn := ledgertest.DSN(t)
	open := func() *ledger.Ledger {
		l, err := ledger.Open(ctx, dsn, ledger.Options{Clock: clk, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	dead, live := open(), open()
	acct, _ := live.CreateAccount(ctx, "", 0)
	k, _ := live.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"access:acquire"}})
	fp := []byte("purchase")

	first, err := dead.ClaimIdempotency(ctx, k.IntegrationID, "buy", "create_acquisition", fp)
	if err != nil || first.State != ledger.IdemFresh {
		t.Fatalf("first claim: %+v %v", first, err)
	}
	ledger.StopLeasesForTest(dead)
	// Within the lease the claim still counts as in flight...
	clk.Advance(ledger.DefaultIdempotencyLease - time.Millisecond)
	if c, err := live.ClaimIdempotency(ctx, k.IntegrationID, "buy", "create_acquisition", fp); err != nil || c.State != ledger.IdemInFlight {
		t.Fatalf("claim within the lease: %+v %v", c, err)
	}
	// ...and once it lapses the retry takes it over at once.
	clk.Advance(time.Millisecond)
	retry, err := live.ClaimIdempotency(ctx, k.IntegrationID, "buy", "create_acquisition", fp)
	if err != nil || retry.State != ledger.IdemFresh || retry.Token == first.Token {
		t.Fatalf("lapsed claim not taken over: %+v %v", retry, err)
	}
	// The new holder is renewing; another retry waits for it.
	if c, _ := live.ClaimIdempotency(ctx, k.IntegrationID, "buy", "create_acquisition", fp); c.State != ledger.IdemInFlight {
		t.Fatalf("second retry: %v", c.State)
	}
	// The dead claimer cannot release or overwrite the new holder's claim.
	if err := dead.ReleaseIdempotency(ctx, k.IntegrationID, "buy", first.Token); err != nil {
		t.Fatal(err)
	}
	if err := dead.CompleteIdempotency(ctx, k.IntegrationID, "buy", first.Token, ledger.IdemResponse{Status: 200, Body: []byte("stale")}); !errors.Is(err, ledger.ErrClaimLost) {
		t.Fatalf("stale completion: %v", err)
	}
	if err := live.CompleteIdempotency(ctx, k.IntegrationID, "buy", retry.Token, ledger.IdemResponse{Status: 200, Body: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	if c, _ := live.ClaimIdempotency(ctx, k.IntegrationID, "buy", "create_acquisition", fp); c.State != ledger.IdemReplay || string(c.Response.Body) != "first" {
		t.Fatalf("replay: %+v", c)
	}
}

// TestIdempotencyLiveClaimIsRenewed: a claim whose process is alive keeps its
// key however long its request runs.
func TestIdempotencyLiveClaimIsRenewed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	dsn := ledgertest.DSN(t)
	const lease = 300 * time.Millisecond
	holder, err := ledger.Open(ctx, dsn, ledger.Options{Clock: clk, MaxConns: 4, IdempotencyLease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Close)
	other, err := ledger.Open(ctx, dsn, ledger.Options{Clock: clk, MaxConns: 4, IdempotencyLease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	acct, _ := holder.CreateAccount(ctx, "", 0)
	k, _ := holder.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"access:acquire"}})
	if c, err := holder.ClaimIdempotency(ctx, k.IntegrationID, "long", "op", []byte("fp")); err != nil || c.State != ledger.IdemFresh {
		t.Fatalf("%+v %v", c, err)
	}
	// Move time on half a lease at a time; each step waits until the holder
	// has renewed at the new time, then moves to where the previous lease
	// would have lapsed.
	for i := 0; i < 3; i++ {
		clk.Advance(lease / 2)
		renewedPast := clk.Now().Add(lease)
		for !ledger.LeaseReachesForTest(ctx, holder, k.IntegrationID, "long", renewedPast) {
			time.Sleep(10 * time.Millisecond) // condition poll: the renewal runs on its own ticker
		}
		clk.Advance(lease / 2)
		if c, err := other.ClaimIdempotency(ctx, k.IntegrationID, "long", "op", []byte("fp")); err != nil || c.State != ledger.IdemInFlight {
			t.Fatalf("step %d: a live claim was taken over: %+v %v", i, c, err)
		}
	}
}

// TestAcquireRetryAfterCrashMidPurchaseChargesOnce: a replica claims a
// purchase's key and is cut off (kill -9) inside the purchase transaction,
// after its checks and before commit. The database rolls that transaction
// back; the retry on another replica takes the claim over once the lease
// lapses and charges exactly once.
func TestAcquireRetryAfterCrashMidPurchaseChargesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	dsn := ledgertest.DSN(t)
	proxy, viaProxy := ledgertest.NewProxy(t, dsn)
	open := func(dsn string) *ledger.Ledger {
		l, err := ledger.Open(ctx, dsn, ledger.Options{Clock: clk, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	dead, live := open(viaProxy), open(dsn)
	acct, _ := live.CreateAccount(ctx, "", 100)
	k, _ := live.CreateKey(ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"access:acquire"}})
	if err := live.SetSection(ctx, "flood", "Flood", 30); err != nil {
		t.Fatal(err)
	}
	site, err := live.CreateSite(ctx, ledger.Site{AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "aa"})
	if err != nil {
		t.Fatal(err)
	}
	params := ledger.AcquireParams{Account: acct.ID, Integration: k.IntegrationID, IdemKey: "crash", SiteID: site.ID, Sections: []string{"flood"}}
	fp := []byte("acquire flood")

	if c, err := dead.ClaimIdempotency(ctx, k.IntegrationID, "crash", "create_acquisition", fp); err != nil || c.State != ledger.IdemFresh {
		t.Fatalf("claim: %+v %v", c, err)
	}
	reached, release := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	ledger.SetFaultHook(dead, func(_ context.Context, point string) error {
		if point == "acquire:checked" {
			close(reached)
			<-release
		}
		return nil
	})
	deadErr := make(chan error, 1)
	go func() { _, err := dead.Acquire(ctx, params); deadErr <- err }()
	<-reached
	proxy.Kill()
	clk.Advance(ledger.DefaultIdempotencyLease)

	c, err := live.ClaimIdempotency(ctx, k.IntegrationID, "crash", "create_acquisition", fp)
	if err != nil || c.State != ledger.IdemFresh {
		t.Fatalf("retry did not take over: %+v %v", c, err)
	}
	p, err := live.Acquire(ctx, params)
	if err != nil || p.CreditsCharged != 30 {
		t.Fatalf("retry purchase: %+v %v", p, err)
	}
	if err := live.CompleteIdempotency(ctx, k.IntegrationID, "crash", c.Token, ledger.IdemResponse{Status: 200, Body: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	releaseOnce()
	if err := <-deadErr; !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("cut-off purchase: %v", err)
	}
	a, _ := live.Account(ctx, acct.ID)
	ps, _ := live.ListPurchases(ctx, acct.ID, ledger.PurchaseFilter{Limit: 10})
	if a.CreditBalance != 70 || len(ps) != 1 {
		t.Fatalf("balance %d with %d purchases, want 70 with 1", a.CreditBalance, len(ps))
	}
	checkInvariants(t, bundle{ctx: ctx, led: live, clock: clk})
}

// A claim handed back lapsed (LapseIdempotency) is taken over at once by
// the key's next request, which is told so (TookOver), where a released
// one is claimed afresh; another token's lapse leaves a claim alone.
func TestIdempotencyLapsedClaimIsTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _ := b.led.CreateAccount(b.ctx, "", 0)
	k, _ := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: acct.ID, Scopes: []string{"queries:run"}})
	fp := []byte("fp1")
	claim := func() ledger.IdemClaim {
		t.Helper()
		c, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k1", "create_query", fp)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := claim()
	if first.State != ledger.IdemFresh || first.TookOver {
		t.Fatalf("first claim %+v", first)
	}
	if err := b.led.LapseIdempotency(b.ctx, k.IntegrationID, "k1", uuid.New()); err != nil {
		t.Fatal(err)
	}
	if c := claim(); c.State != ledger.IdemInFlight {
		t.Fatalf("after another token's lapse: %+v, want in flight", c)
	}
	if err := b.led.LapseIdempotency(b.ctx, k.IntegrationID, "k1", first.Token); err != nil {
		t.Fatal(err)
	}
	next := claim()
	if next.State != ledger.IdemFresh || !next.TookOver {
		t.Fatalf("after the lapse: %+v, want taken over", next)
	}
	if err := b.led.ReleaseIdempotency(b.ctx, k.IntegrationID, "k1", next.Token); err != nil {
		t.Fatal(err)
	}
	if c := claim(); c.State != ledger.IdemFresh || c.TookOver {
		t.Fatalf("after a release: %+v, want a fresh claim", c)
	}
}
