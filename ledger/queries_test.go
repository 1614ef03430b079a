package ledger_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"siteenv/ledger"
)

// TestClaimQueryRunsAtMostFourPerAccount: concurrent workers (as on several
// replicas) never run more than maxRunning queries of one account at once,
// and still serve other accounts.
func TestClaimQueryRunsAtMostFourPerAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mk := func() (ledger.Account, ledger.NewKey, ledger.Site) {
		a, _ := b.led.CreateAccount(b.ctx, "", 0)
		k, _ := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{"queries:run"}})
		s, err := b.led.CreateSite(b.ctx, ledger.Site{AccountID: a.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "a"})
		if err != nil {
			t.Fatal(err)
		}
		return a, k, s
	}
	busy, bk, bs := mk()
	quiet, qk, qs := mk()
	lim := ledger.QueryLimits{MaxQueued: 100, MaxRetainedBytes: 1 << 30}
	for i := 0; i < 10; i++ {
		if _, err := b.led.CreateQuery(b.ctx, ledger.Query{AccountID: busy.ID, IntegrationID: bk.IntegrationID, SiteID: bs.ID, SiteGeometry: bs.Geometry, LayerIDs: []string{"x"}}, lim); err != nil {
			t.Fatal(err)
		}
	}
	b.clock.Advance(time.Second)
	if _, err := b.led.CreateQuery(b.ctx, ledger.Query{AccountID: quiet.ID, IntegrationID: qk.IntegrationID, SiteID: qs.ID, SiteGeometry: qs.Geometry, LayerIDs: []string{"x"}}, lim); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				q, err := b.led.ClaimQuery(b.ctx, 4, time.Minute)
				if errors.Is(err, ledger.ErrNotFound) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				claimed[q.AccountID.String()]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if claimed[busy.ID.String()] != 4 || claimed[quiet.ID.String()] != 1 {
		t.Fatalf("claimed %v: want 4 of the busy account's 10 and the quiet account's 1", claimed)
	}
	u, _ := b.led.QueryUsage(b.ctx, busy.ID)
	if u.Running != 4 || u.Queued != 6 {
		t.Fatalf("usage %+v", u)
	}
	// The 100-query queue is enforced at admission.
	small := ledger.QueryLimits{MaxQueued: 6, MaxRetainedBytes: 1 << 30}
	if _, err := b.led.CreateQuery(b.ctx, ledger.Query{AccountID: busy.ID, IntegrationID: bk.IntegrationID, SiteID: bs.ID, SiteGeometry: bs.Geometry, LayerIDs: []string{"x"}}, small); !errors.Is(err, ledger.ErrCapacity) {
		t.Fatalf("queue limit: %v", err)
	}
	// A crashed attempt is requeued when its time runs out.
	b.clock.Advance(2 * time.Minute)
	if err := b.led.FailStaleQueries(b.ctx, 10*time.Minute, 3); err != nil {
		t.Fatal(err)
	}
	if u, _ := b.led.QueryUsage(b.ctx, busy.ID); u.Running != 0 || u.Queued != 10 {
		t.Fatalf("after expiry of attempts %+v", u)
	}
}
