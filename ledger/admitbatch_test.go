package ledger_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// AdmitQueryBatch claims, registers the site and admits in one
// transaction; a failed check (a used key, a section not granted, a site
// the key may not create) writes and counts nothing, so the step-by-step
// path that follows finds everything as it was.
func TestAdmitQueryBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, err := b.led.CreateAccount(b.ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{"queries:run", "sites:write"}})
	if err != nil {
		t.Fatal(err)
	}
	site := ledger.Site{AccountID: a.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "fp-a",
		Bounds: [4]float64{151, -33.8, 151, -33.8}}
	ask := func(idemKey string, sections []string, create bool, fingerprint string) ledger.AdmitRequest {
		s := site
		s.Fingerprint = fingerprint
		return ledger.AdmitRequest{Integration: k.IntegrationID, IdemKey: idemKey, Operation: "create_query", Fingerprint: []byte("f"),
			Site: s, CreateSite: create, Sections: sections,
			Query: ledger.Query{AccountID: a.ID, IntegrationID: k.IntegrationID, RadiusM: 100, LayerIDs: []string{"l"},
				Frozen: []ledger.FrozenLayer{{LayerID: "l"}}},
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 30}, PerMinute: 2,
				RunNow: true, MaxRunning: 4, Lease: time.Minute}}
	}
	hits := func() int { return admissionHits(t, b, a.ID) }
	// Refused checks: nothing counted, no claim, no site.
	for _, c := range []struct {
		name string
		ar   ledger.AdmitRequest
	}{
		{"section not granted", ask("k1", []string{"water"}, true, "fp-a")},
		{"site the key may not create", ask("k1", nil, false, "fp-a")},
	} {
		refusedLeavesNothing(t, b, a.ID, c.name, c.ar)
	}
	res, err := b.led.AdmitQueryBatch(b.ctx, ask("k1", nil, true, "fp-a"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.SiteCreated || res.Query.Status != ledger.QueryRunning || res.Query.SiteID != res.Site.ID || hits() != 1 {
		t.Fatalf("admitted %+v, %d hits", res, hits())
	}
	got, err := b.led.Query(b.ctx, a.ID, res.Query.ID)
	if err != nil || got.Status != ledger.QueryRunning || got.Attempts != 1 || got.SiteID != res.Site.ID {
		t.Fatalf("stored %+v, %v", got, err)
	}
	// The key is claimed now: a second use fails its check, counting nothing.
	if _, err := b.led.AdmitQueryBatch(b.ctx, ask("k1", nil, true, "fp-a")); !errors.Is(err, ledger.ErrAdmissionCheck) {
		t.Fatalf("reused key: %v", err)
	}
	if claim, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k1", "create_query", []byte("f")); err != nil || claim.State != ledger.IdemInFlight {
		t.Fatalf("the first claim: %+v, %v", claim, err)
	}
	// The existing site is found, not created again; the limit (2) holds.
	res2, err := b.led.AdmitQueryBatch(b.ctx, ask("k2", nil, false, "fp-a"))
	if err != nil || res2.SiteCreated || res2.Site.ID != res.Site.ID {
		t.Fatalf("second admission %+v, %v", res2, err)
	}
	res3, err := b.led.AdmitQueryBatch(b.ctx, ask("k3", nil, true, "fp-a"))
	if !errors.Is(err, ledger.ErrRateLimited) || res3.Token.String() == "00000000-0000-0000-0000-000000000000" || res3.Window.Hits != 3 {
		t.Fatalf("third admission %+v, %v; want ErrRateLimited with its claim", res3, err)
	}
}

// With Auth, AdmitQueryBatch authenticates the key itself: the principal
// is Authenticate's, the claim, site and query are its account's and
// integration's. An unknown or revoked key, a missing scope or dataset, a
// catalogue version moved since the caller read it, or a new site for a
// key without sites:write fails the check and counts and writes nothing.
func TestAdmitQueryBatchAuthenticates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, err := b.led.CreateAccount(b.ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	newKey := func(datasets []string, scopes ...string) ledger.NewKey {
		k, err := b.led.CreateKey(b.ctx, ledger.KeyParams{Account: a.ID, Scopes: scopes, Datasets: datasets})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := newKey(nil, "queries:run", "sites:write")
	p, err := b.led.Authenticate(b.ctx, k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	site := ledger.Site{Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "fp-a",
		Bounds: [4]float64{151, -33.8, 151, -33.8}}
	ask := func(secret, idemKey string, catalogue int64, fingerprint string, scopes ...string) ledger.AdmitRequest {
		s := site
		s.Fingerprint = fingerprint
		return ledger.AdmitRequest{IdemKey: idemKey, Operation: "create_query", Fingerprint: []byte("f"), Site: s,
			Auth:  &ledger.AdmitAuth{KeyHash: ledger.HashKey(secret), Scopes: scopes, Datasets: []string{"l"}, Catalogue: catalogue},
			Query: ledger.Query{RadiusM: 100, LayerIDs: []string{"l"}, Frozen: []ledger.FrozenLayer{{LayerID: "l"}}},
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 30}, PerMinute: 5,
				RunNow: true, MaxRunning: 4, Lease: time.Minute}}
	}
	hits := func() int { return admissionHits(t, b, a.ID) }
	revoked := newKey(nil, "queries:run", "sites:write")
	if err := b.led.RevokeKey(b.ctx, revoked.KeyID); err != nil {
		t.Fatal(err)
	}
	narrow := newKey([]string{"m"}, "queries:run", "sites:write")
	ro := newKey(nil, "queries:run")
	for _, c := range []struct {
		name string
		ar   ledger.AdmitRequest
	}{
		{"unknown key", ask("sek_unknown", "k1", p.Catalogue, "fp-a", "queries:run")},
		{"revoked key", ask(revoked.Secret, "k1", p.Catalogue, "fp-a", "queries:run")},
		{"missing scope", ask(k.Secret, "k1", p.Catalogue, "fp-a", "queries:run", "reports:create")},
		{"dataset not permitted", ask(narrow.Secret, "k1", p.Catalogue, "fp-a", "queries:run")},
		{"catalogue moved", ask(k.Secret, "k1", p.Catalogue-1, "fp-a", "queries:run")},
		{"new site without sites:write", ask(ro.Secret, "k1", p.Catalogue, "fp-a", "queries:run")},
	} {
		refusedLeavesNothing(t, b, a.ID, c.name, c.ar)
	}
	res, err := b.led.AdmitQueryBatch(b.ctx, ask(k.Secret, "k1", p.Catalogue, "fp-a", "queries:run"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Principal.KeyID != p.KeyID || res.Principal.AccountID != a.ID || res.Principal.IntegrationID != k.IntegrationID ||
		res.Principal.Catalogue != p.Catalogue || len(res.Principal.Scopes) != 2 {
		t.Fatalf("principal %+v, want %+v", res.Principal, p)
	}
	if !res.SiteCreated || res.Site.AccountID != a.ID || res.Query.AccountID != a.ID || res.Query.IntegrationID != k.IntegrationID || hits() != 1 {
		t.Fatalf("admitted %+v, %d hits", res, hits())
	}
	got, err := b.led.Query(b.ctx, a.ID, res.Query.ID)
	if err != nil || got.Status != ledger.QueryRunning || got.SiteID != res.Site.ID || got.IntegrationID != k.IntegrationID {
		t.Fatalf("stored %+v, %v", got, err)
	}
	if claim, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k1", "create_query", []byte("f")); err != nil || claim.State != ledger.IdemInFlight {
		t.Fatalf("the claim under the key's integration: %+v, %v", claim, err)
	}
	// The read-only key queries the site that now exists.
	if res, err := b.led.AdmitQueryBatch(b.ctx, ask(ro.Secret, "k2", p.Catalogue, "fp-a", "queries:run")); err != nil || res.SiteCreated || hits() != 2 {
		t.Fatalf("existing site without sites:write: %+v, %v, %d hits", res, err, hits())
	}
}

// admissionHits is the account's count of query admissions this minute.
func admissionHits(t *testing.T, b bundle, account uuid.UUID) int {
	t.Helper()
	w, err := b.led.Peek(b.ctx, account, ledger.BucketQueryAdmissions, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return w.Hits
}

// refusedLeavesNothing: the admission ar fails a check (ErrAdmissionCheck)
// and leaves the account as it was: no admission counted, no site.
func refusedLeavesNothing(t *testing.T, b bundle, account uuid.UUID, name string, ar ledger.AdmitRequest) {
	t.Helper()
	if _, err := b.led.AdmitQueryBatch(b.ctx, ar); !errors.Is(err, ledger.ErrAdmissionCheck) {
		t.Fatalf("%s: %v, want ErrAdmissionCheck", name, err)
	}
	if n := admissionHits(t, b, account); n != 0 {
		t.Fatalf("%s: %d admissions counted", name, n)
	}
	if sites, err := b.led.ListSites(b.ctx, account, ledger.SiteFilter{Limit: 10}); err != nil || len(sites) != 0 {
		t.Fatalf("%s: sites left registered: %v, %v", name, sites, err)
	}
}
