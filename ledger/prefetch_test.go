package ledger_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestAuthenticateCountPrefetch: a prefetch sent with the key lookup reads
// exactly what its own statement reads, for the key's account only, and
// the window still counts the request once.
func TestAuthenticateCountPrefetch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mk := func() (ledger.Account, ledger.NewKey) {
		t.Helper()
		a, err := b.led.CreateAccount(b.ctx, "prefetch", 40)
		if err != nil {
			t.Fatal(err)
		}
		k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{ledger.ScopeUsageRead, "queries:run"}})
		if err != nil {
			t.Fatal(err)
		}
		return a, k
	}
	acct, k := mk()
	other, ok := mk()
	site, err := b.led.CreateSite(b.ctx, ledger.Site{AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "p"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.led.CreateQuery(b.ctx, ledger.Query{AccountID: acct.ID, IntegrationID: k.IntegrationID, SiteID: site.ID, SiteGeometry: site.Geometry, LayerIDs: []string{"x"}},
		ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}

	cp, qp := &ledger.ContextPrefetch{}, &ledger.QueryLivePrefetch{ID: q.ID}
	p, w, counted, err := b.led.AuthenticateCount(b.ctx, k.Secret, []string{ledger.ScopeUsageRead}, "reads", time.Minute, cp, qp)
	if err != nil || !counted || w.Hits != 1 || p.AccountID != acct.ID {
		t.Fatalf("authenticate with prefetch: %+v %+v %v %v", p, w, counted, err)
	}
	want, err := b.led.ContextReads(b.ctx, acct.ID, k.IntegrationID)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Err != nil || !reflect.DeepEqual(cp.View, want) {
		t.Fatalf("context prefetch %+v %v, want %+v", cp.View, cp.Err, want)
	}
	live, err := b.led.QueryLive(b.ctx, acct.ID, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	if qp.Err != nil || !reflect.DeepEqual(qp.Live, live) || qp.Live.Status != ledger.QueryQueued {
		t.Fatalf("query prefetch %+v %v, want %+v", qp.Live, qp.Err, live)
	}

	// Another account's key reads its own context and not this query.
	cp2, qp2 := &ledger.ContextPrefetch{}, &ledger.QueryLivePrefetch{ID: q.ID}
	if _, _, _, err := b.led.AuthenticateCount(b.ctx, ok.Secret, nil, "reads", time.Minute, cp2, qp2); err != nil {
		t.Fatal(err)
	}
	if cp2.Err != nil || cp2.View.Account.ID != other.ID {
		t.Fatalf("other account's context %+v %v", cp2.View.Account, cp2.Err)
	}
	if !errors.Is(qp2.Err, ledger.ErrNotFound) {
		t.Fatalf("another account's query prefetched: %+v %v", qp2.Live, qp2.Err)
	}
	// An unknown key: refused, nothing read.
	cp3 := &ledger.ContextPrefetch{}
	if _, _, _, err := b.led.AuthenticateCount(b.ctx, "sek_"+uuid.NewString(), nil, "reads", time.Minute, cp3); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	if !errors.Is(cp3.Err, ledger.ErrNotFound) {
		t.Fatalf("unknown key's context prefetch: %+v %v", cp3.View, cp3.Err)
	}
	// The window counted each authenticated request once.
	if w, err := b.led.Peek(b.ctx, acct.ID, "reads", time.Minute); err != nil || w.Hits != 1 {
		t.Fatalf("window %+v %v", w, err)
	}
}
