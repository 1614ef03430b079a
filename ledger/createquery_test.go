package ledger_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// TestCreateQueryQueueLimitExactAcrossReplicas proves the one-round-trip
// admission keeps the queue limit exact: 24 admissions racing for one
// account through two ledgers (two replicas) over one database admit
// exactly the limit's 6, refuse the rest with ErrCapacity, and another
// account's admission and an unknown account's (ErrNotFound) are
// unaffected; an admitted query reads back as queued.
func TestCreateQueryQueueLimitExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dsn := ledgertest.DSN(t)
	var leds [2]*ledger.Ledger
	for i := range leds {
		l, err := ledger.Open(b.ctx, dsn, ledger.Options{Clock: b.clock})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		leds[i] = l
	}
	mk := func() (ledger.Account, ledger.NewKey, ledger.Site) {
		a, err := leds[0].CreateAccount(b.ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		k, err := leds[0].CreateKey(b.ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{"queries:run"}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := leds[0].CreateSite(b.ctx, ledger.Site{AccountID: a.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "a"})
		if err != nil {
			t.Fatal(err)
		}
		return a, k, s
	}
	acct, k, site := mk()
	lim := ledger.QueryLimits{MaxQueued: 6, MaxRetainedBytes: 1 << 30}
	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		admitted, refused int
	)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := leds[i%2].CreateQuery(b.ctx, ledger.Query{AccountID: acct.ID, IntegrationID: k.IntegrationID, SiteID: site.ID,
				SiteGeometry: site.Geometry, LayerIDs: []string{"x"}}, lim)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case errors.Is(err, ledger.ErrCapacity):
				refused++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if admitted != 6 || refused != 18 {
		t.Fatalf("admitted %d, refused %d; want 6 and 18", admitted, refused)
	}
	if u, err := leds[1].QueryUsage(b.ctx, acct.ID); err != nil || u.Queued != 6 {
		t.Fatalf("usage %+v %v", u, err)
	}
	other, ok, os := mk()
	q, err := leds[1].CreateQuery(b.ctx, ledger.Query{AccountID: other.ID, IntegrationID: ok.IntegrationID, SiteID: os.ID, SiteGeometry: os.Geometry,
		LayerIDs: []string{"x"}, RadiusM: 25, IncludeGeometry: true}, lim)
	if err != nil {
		t.Fatal(err)
	}
	back, err := leds[0].Query(b.ctx, other.ID, q.ID)
	if err != nil || back.Status != ledger.QueryQueued || back.RadiusM != 25 || !back.IncludeGeometry || back.SiteID != os.ID {
		t.Fatalf("read back %+v %v", back, err)
	}
	if _, err := leds[0].CreateQuery(b.ctx, ledger.Query{AccountID: uuid.New(), IntegrationID: ok.IntegrationID, SiteID: os.ID, SiteGeometry: os.Geometry,
		LayerIDs: []string{"x"}}, lim); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
}

// TestSaveSiteOnceAcrossReplicas proves the one-round-trip registration
// keeps one active site per boundary: 12 registrations of one fingerprint
// racing through two ledgers create it once and all name the same site; a
// registration without permission to create finds it, or, for a new
// boundary, is refused (ErrCreateNotPermitted); an unknown account is
// ErrNotFound.
func TestSaveSiteOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dsn := ledgertest.DSN(t)
	var leds [2]*ledger.Ledger
	for i := range leds {
		l, err := ledger.Open(b.ctx, dsn, ledger.Options{Clock: b.clock})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		leds[i] = l
	}
	acct, err := leds[0].CreateAccount(b.ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	site := ledger.Site{AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "fp-1"}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[uuid.UUID]int{}
		created int
	)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, c, err := leds[i%2].SaveSite(b.ctx, site, nil, true)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			ids[s.ID]++
			if c {
				created++
			}
		}()
	}
	wg.Wait()
	if len(ids) != 1 || created != 1 {
		t.Fatalf("sites %v, %d created; want one site created once", ids, created)
	}
	var id uuid.UUID
	for k := range ids {
		id = k
	}
	if s, c, err := leds[1].SaveSite(b.ctx, site, nil, false); err != nil || c || s.ID != id || s.Fingerprint != "fp-1" {
		t.Fatalf("reuse without create: %+v %v %v", s, c, err)
	}
	other := site
	other.Fingerprint = "fp-2"
	if _, _, err := leds[0].SaveSite(b.ctx, other, nil, false); !errors.Is(err, ledger.ErrCreateNotPermitted) {
		t.Fatalf("new boundary without create: %v", err)
	}
	stranger := site
	stranger.AccountID = uuid.New()
	if _, _, err := leds[0].SaveSite(b.ctx, stranger, nil, true); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
}
