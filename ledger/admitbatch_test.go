package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// Admit with a key claims, registers the site and admits in one
// transaction; a failed check (a used key, a section not granted, a site
// the key may not create) writes and counts nothing, so the step-by-step
// path that follows finds everything as it was.
func TestAdmitQueryBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, k := b.accountKey(t, "queries:run", "sites:write")
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
	res, err := b.led.Admit(b.ctx, ask("k1", nil, true, "fp-a"))
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
	if _, err := b.led.Admit(b.ctx, ask("k1", nil, true, "fp-a")); !errors.Is(err, ledger.ErrAdmissionCheck) {
		t.Fatalf("reused key: %v", err)
	}
	if claim, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k1", "create_query", []byte("f")); err != nil || claim.State != ledger.IdemInFlight {
		t.Fatalf("the first claim: %+v, %v", claim, err)
	}
	// The existing site is found, not created again; the limit (2) holds.
	res2, err := b.led.Admit(b.ctx, ask("k2", nil, false, "fp-a"))
	if err != nil || res2.SiteCreated || res2.Site.ID != res.Site.ID {
		t.Fatalf("second admission %+v, %v", res2, err)
	}
	res3, err := b.led.Admit(b.ctx, ask("k3", nil, true, "fp-a"))
	if !errors.Is(err, ledger.ErrRateLimited) || res3.Token.String() == "00000000-0000-0000-0000-000000000000" || res3.Window.Hits != 3 {
		t.Fatalf("third admission %+v, %v; want ErrRateLimited with its claim", res3, err)
	}
}

// With Auth, Admit authenticates the key itself: the principal
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
	res, err := b.led.Admit(b.ctx, ask(k.Secret, "k1", p.Catalogue, "fp-a", "queries:run"))
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
	if res, err := b.led.Admit(b.ctx, ask(ro.Secret, "k2", p.Catalogue, "fp-a", "queries:run")); err != nil || res.SiteCreated || hits() != 2 {
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
	if _, err := b.led.Admit(b.ctx, ar); !errors.Is(err, ledger.ErrAdmissionCheck) {
		t.Fatalf("%s: %v, want ErrAdmissionCheck", name, err)
	}
	if n := admissionHits(t, b, account); n != 0 {
		t.Fatalf("%s: %d admissions counted", name, n)
	}
	if sites, err := b.led.ListSites(b.ctx, account, ledger.SiteFilter{Limit: 10}); err != nil || len(sites) != 0 {
		t.Fatalf("%s: sites left registered: %v, %v", name, sites, err)
	}
}

// An admission with its answer (AdmitRequest.Answer) stores the query
// finished, the claim done with the response and the audit record, in its
// one transaction. A site that existed already is the stored body's site,
// not the id the request would have created. A refused one (over the
// rate) stores no query and no record, and leaves the claim running under
// its token for the caller to release.
func TestAdmitQueryBatchStoresAnAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, k := b.accountKey(t, "queries:run", "sites:write")
	p, err := b.led.Authenticate(b.ctx, k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	rel := "r1"
	ask := func(idemKey string, byKey bool) (ledger.AdmitRequest, uuid.UUID) {
		siteID, queryID := uuid.New(), uuid.New()
		created := time.Now().UTC().Truncate(time.Microsecond)
		q := ledger.Query{ID: queryID, AccountID: a.ID, IntegrationID: k.IntegrationID, RadiusM: 100, LayerIDs: []string{"l"},
			Frozen: []ledger.FrozenLayer{{LayerID: "l", ReleaseID: &rel}}, CreatedAt: created}
		n := int64(2)
		f, err := b.led.PrepareFinish(q, ledger.QuerySucceeded, []ledger.LayerOutcome{{LayerID: "l", DataStatus: "available", Coverage: "full", Count: &n}},
			"results/x/"+queryID.String()+".ndjson", 321, &n, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"query_id":"` + queryID.String() + `","site_id":"` + siteID.String() + `","status":"succeeded"}`)
		ar := ledger.AdmitRequest{Integration: k.IntegrationID, IdemKey: idemKey, Operation: "create_query", Fingerprint: []byte("f"),
			Site: ledger.Site{ID: siteID, AccountID: a.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "fp-a",
				Bounds: [4]float64{151, -33.8, 151, -33.8}},
			CreateSite: true, Query: q,
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 30}, PerMinute: 2,
				RunNow: true, MaxRunning: 4, Lease: time.Minute},
			Answer: &ledger.AdmitAnswer{Finish: f, Response: ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: body},
				Activity: ledger.Activity{Operation: "create_query", Outcome: "completed", RequestID: uuid.New(), HTTPStatus: 200,
					ResourceType: ptrTo("query"), ResourceID: ptrTo(queryID.String())}}}
		if byKey {
			ar.Integration, ar.Query.AccountID, ar.Query.IntegrationID = uuid.Nil, uuid.Nil, uuid.Nil
			ar.Auth = &ledger.AdmitAuth{KeyHash: ledger.HashKey(k.Secret), Scopes: []string{"queries:run"}, Datasets: []string{"l"}, Catalogue: p.Catalogue}
		}
		return ar, siteID
	}
	replayed := func(idemKey string) string {
		t.Helper()
		claim, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, idemKey, "create_query", []byte("f"))
		if err != nil || claim.State != ledger.IdemReplay || claim.Response.Status != 200 {
			t.Fatalf("%s: claim %+v, %v; want its stored answer", idemKey, claim, err)
		}
		return string(claim.Response.Body)
	}
	records := func() int {
		t.Helper()
		acts, err := b.led.ListActivity(b.ctx, k.IntegrationID, ledger.ActivityFilter{Operation: "create_query", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(acts)
	}

	// By the key's hash (as POST /queries sends it), on a new site.
	ar, siteID := ask("k1", true)
	res, err := b.led.Admit(b.ctx, ar)
	if err != nil || !res.Answered || res.Token != uuid.Nil || !res.SiteCreated || res.Site.ID != siteID {
		t.Fatalf("answered admission %+v, %v", res, err)
	}
	got, err := b.led.Query(b.ctx, a.ID, ar.Query.ID)
	if err != nil || got.Status != ledger.QuerySucceeded || got.Attempts != 1 || got.ResultKey == nil || got.ResultBytes != 321 ||
		got.ResultCount == nil || *got.ResultCount != 2 || len(got.Outcome) != 1 || got.ComputedAt == nil || got.ExpiresAt == nil ||
		got.SiteID != siteID || !got.CreatedAt.Equal(ar.Query.CreatedAt) {
		t.Fatalf("stored %+v, %v", got, err)
	}
	// The site it created, and the query's copy, hold the request's
	// geometry (the admission reads back no geometry it wrote).
	if !sameJSON(got.SiteGeometry, ar.Site.Geometry) || !sameJSON(res.Site.Geometry, ar.Site.Geometry) {
		t.Fatalf("query's site geometry %s, admission's %s; want %s", got.SiteGeometry, res.Site.Geometry, ar.Site.Geometry)
	}
	if st, err := b.led.Site(b.ctx, a.ID, siteID); err != nil || !sameJSON(st.Geometry, ar.Site.Geometry) {
		t.Fatalf("site %+v, %v", st, err)
	}
	if body := replayed("k1"); body != string(ar.Answer.Response.Body) {
		t.Fatalf("stored answer %s, want %s", body, ar.Answer.Response.Body)
	}
	if u, err := b.led.QueryUsage(b.ctx, a.ID); err != nil || u.Running != 0 || u.Queued != 0 || u.RetainedBytes != 321 {
		t.Fatalf("usage %+v, %v: want 321 bytes retained, nothing running", u, err)
	}
	if n := records(); n != 1 {
		t.Fatalf("%d audit records, want 1", n)
	}

	// An answer is stored only by the admission that authenticates its key.
	byIDs, _ := ask("k0", false)
	if _, err := b.led.Admit(b.ctx, byIDs); !errors.Is(err, ledger.ErrAnswerNeedsAuth) {
		t.Fatalf("answer without its key's check: %v", err)
	}

	// On the site that exists now: the body names it.
	ar2, other := ask("k2", true)
	res2, err := b.led.Admit(b.ctx, ar2)
	if err != nil || !res2.Answered || res2.SiteCreated || res2.Site.ID != siteID {
		t.Fatalf("answered admission on an existing site %+v, %v", res2, err)
	}
	want := strings.ReplaceAll(string(ar2.Answer.Response.Body), other.String(), siteID.String())
	if body := replayed("k2"); body != want {
		t.Fatalf("stored answer %s, want %s", body, want)
	}
	if got, err := b.led.Query(b.ctx, a.ID, ar2.Query.ID); err != nil || got.SiteID != siteID {
		t.Fatalf("stored %+v, %v", got, err)
	}

	// A used key fails its check, writing nothing.
	ar1again, _ := ask("k1", true)
	if _, err := b.led.Admit(b.ctx, ar1again); !errors.Is(err, ledger.ErrAdmissionCheck) {
		t.Fatalf("reused key: %v", err)
	}

	// Over the rate (2 a minute): no query, no record; the claim runs.
	ar3, _ := ask("k3", true)
	res3, err := b.led.Admit(b.ctx, ar3)
	if !errors.Is(err, ledger.ErrRateLimited) || res3.Answered || res3.Token == uuid.Nil {
		t.Fatalf("third admission %+v, %v; want ErrRateLimited with its claim", res3, err)
	}
	if _, err := b.led.Query(b.ctx, a.ID, ar3.Query.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("refused query stored: %v", err)
	}
	if claim, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k3", "create_query", []byte("f")); err != nil || claim.State != ledger.IdemInFlight {
		t.Fatalf("the refused request's claim: %+v, %v; want it running", claim, err)
	}
	if err := b.led.ReleaseIdempotency(b.ctx, k.IntegrationID, "k3", res3.Token); err != nil {
		t.Fatalf("releasing the refused request's claim: %v", err)
	}
	if n := records(); n != 2 {
		t.Fatalf("%d audit records, want 2", n)
	}

	// Its one statement relaxes the commit of the transaction it runs in
	// (and plans generically), as the admission's batch does.
	ar4, _ := ask("k4", true)
	if inside, err := ledger.AdmitAnsweredSettingForTest(b.ctx, b.led, ar4); err != nil || inside != "off force_generic_plan" {
		t.Fatalf("after the answered admission's call: %q, %v; want synchronous_commit off, force_generic_plan", inside, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// An answered admission that waits for the account's lock while another
// transaction creates the account's site of its fingerprint finds that
// site after the lock: the stored response (rendered naming the site the
// request would have created), the query and the result all name it.
func TestAnsweredAdmissionNamesASiteCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	dsn := ledgertest.DSN(t)
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	b := bundle{ctx: context.Background(), led: onDSN(t, dsn, clk), clock: clk}
	a, k := b.accountKey(t, "queries:run", "sites:write")
	p, err := b.led.Authenticate(b.ctx, k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	rel := "r1"
	siteID, queryID := uuid.New(), uuid.New()
	q := ledger.Query{ID: queryID, AccountID: a.ID, IntegrationID: k.IntegrationID, RadiusM: 100, LayerIDs: []string{"l"},
		Frozen: []ledger.FrozenLayer{{LayerID: "l", ReleaseID: &rel}}, CreatedAt: b.clock.Now()}
	f, err := b.led.PrepareFinish(q, ledger.QuerySucceeded, nil, "", 0, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	geom := json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`)
	body := `{"query_id":"` + queryID.String() + `","site_id":"` + siteID.String() + `"}`
	ar := ledger.AdmitRequest{IdemKey: "k1", Operation: "create_query", Fingerprint: []byte("f"),
		Auth: &ledger.AdmitAuth{KeyHash: ledger.HashKey(k.Secret), Scopes: []string{"queries:run"}, Datasets: []string{"l"}, Catalogue: p.Catalogue},
		Site: ledger.Site{ID: siteID, Geometry: geom, Fingerprint: "fp-a", Bounds: [4]float64{151, -33.8, 151, -33.8}},
		Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 30}, PerMinute: 10,
			RunNow: true, MaxRunning: 4, Lease: time.Minute},
		Answer: &ledger.AdmitAnswer{Finish: f, Response: ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: []byte(body)},
			Activity: ledger.Activity{Operation: "create_query", Outcome: "completed", RequestID: uuid.New(), HTTPStatus: 200}}}

	// Another transaction holds the account's row; the admission claims
	// its key and waits for the lock.
	tx, err := rawConn(t, dsn).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE account_id = $1 FOR UPDATE`, a.ID); err != nil {
		t.Fatal(err)
	}
	type result struct {
		res ledger.Admission
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := b.led.Admit(ctx, ar)
		done <- result{res, err}
	}()
	// Watched from a connection of its own: a transaction reads
	// pg_stat_activity once and keeps that snapshot to its end.
	watch := rawConn(t, dsn)
	for {
		var waiting bool
		if err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%siteenv_admit_answered%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the admission did not wait for the account's lock: %+v, %v", r.res, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Meanwhile that transaction creates the account's site of that
	// fingerprint, and commits. Its geometry is told apart from the
	// request's (a fingerprint names one geometry; this one is forged), so
	// the admission is seen to read it back.
	other := uuid.New()
	otherGeom := json.RawMessage(`{"type":"Point","coordinates":[151.5,-33.5]}`)
	if _, err := tx.Exec(ctx, `INSERT INTO sites (site_id, account_id, geometry, fingerprint, area_m2, min_lon, min_lat, max_lon, max_lat, created_at)
		VALUES ($1, $2, $3, 'fp-a', 0, 151, -33.8, 151, -33.8, now())`, other, a.ID, otherGeom); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !r.res.Answered || r.res.SiteCreated || r.res.Site.ID != other {
		t.Fatalf("admission %+v, %v; want it answered on the site created meanwhile (%s)", r.res, r.err, other)
	}
	claim, err := b.led.ClaimIdempotency(b.ctx, k.IntegrationID, "k1", "create_query", []byte("f"))
	want := strings.ReplaceAll(body, siteID.String(), other.String())
	if err != nil || claim.State != ledger.IdemReplay || string(claim.Response.Body) != want {
		t.Fatalf("stored response %+v, %v; want %s", claim, err, want)
	}
	if got, err := b.led.Query(b.ctx, a.ID, queryID); err != nil || got.SiteID != other || !sameJSON(got.SiteGeometry, otherGeom) {
		t.Fatalf("stored query %+v, %v", got, err)
	}
	if !sameJSON(r.res.Site.Geometry, otherGeom) {
		t.Fatalf("admission's site geometry %s, want the existing site's %s", r.res.Site.Geometry, otherGeom)
	}
}

// sameJSON: a and b are the same JSON value (jsonb re-renders what it
// stores).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
