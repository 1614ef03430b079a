package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// reportFixture is an account with credits, an ordering key and a site.
type reportFixture struct {
	bundle
	account     uuid.UUID
	integration uuid.UUID
	site        uuid.UUID
}

func newReportFixture(t *testing.T, credits int64, spendLimit int64) reportFixture {
	t.Helper()
	b := setup(t)
	acct, err := b.led.CreateAccount(b.ctx, "reports", credits)
	if err != nil {
		t.Fatal(err)
	}
	kp := ledger.KeyParams{Account: acct.ID, Scopes: []string{ledger.ScopeReportsCreate}}
	if spendLimit > 0 {
		kp.SpendLimit = &spendLimit
	}
	k, err := b.led.CreateKey(b.ctx, kp)
	if err != nil {
		t.Fatal(err)
	}
	site, err := b.led.CreateSite(b.ctx, ledger.Site{AccountID: acct.ID, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151.0,-33.8]}`), Fingerprint: "ab"})
	if err != nil {
		t.Fatal(err)
	}
	return reportFixture{bundle: b, account: acct.ID, integration: k.IntegrationID, site: site.ID}
}

func (f reportFixture) order(key string, price int64) ledger.OrderReportParams {
	return ledger.OrderReportParams{Account: f.account, Integration: f.integration, IdemKey: key, SiteID: f.site,
		Jurisdiction: "NSW", DatasetIDs: []string{"flood.extent"}, Price: price, MaxSiteAreaM2: 400_000}
}

func (f reportFixture) balance(t *testing.T) int64 {
	t.Helper()
	a, err := f.led.Account(f.ctx, f.account)
	if err != nil {
		t.Fatal(err)
	}
	return a.CreditBalance
}

func TestOrderReportChargesOnceAndReplays(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 0)
	const n = 100
	var wg sync.WaitGroup
	ids := make([]uuid.UUID, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _, err := f.led.OrderReport(f.ctx, f.order("same-key", 40))
			ids[i], errs[i] = r.ID, err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("order %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("order %d made report %s, order 0 made %s", i, ids[i], ids[0])
		}
	}
	if got := f.balance(t); got != 60 {
		t.Fatalf("balance %d after 100 identical orders at 40, want 60", got)
	}
	ps, err := f.led.ListPurchases(f.ctx, f.account, ledger.PurchaseFilter{Limit: 10})
	if err != nil || len(ps) != 1 || ps[0].Kind != "report" || ps[0].ReportID == nil || *ps[0].ReportID != ids[0] {
		t.Fatalf("purchases %+v %v", ps, err)
	}
	if ps[0].Receipt == nil || ps[0].Receipt.CreditsCharged != 40 || ps[0].Receipt.BalanceAfter != 60 {
		t.Fatalf("receipt %+v", ps[0].Receipt)
	}
	r, err := f.led.Report(f.ctx, f.account, ids[0])
	if err != nil || r.Status != ledger.ReportQueued || r.PurchaseID == nil || *r.PurchaseID != ps[0].ID || r.Origin != ledger.OriginAPI {
		t.Fatalf("report %+v %v", r, err)
	}
	checkInvariants(t, f.bundle)
}

func TestOrderReportExactlyNOfTenN(t *testing.T) {
	t.Parallel()
	const price, n = 25, 4
	f := newReportFixture(t, n*price, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, broke := 0, 0
	for i := range 10 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := f.led.OrderReport(f.ctx, f.order(fmt.Sprintf("k%d", i), price))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ledger.ErrInsufficientCredits):
				broke++
			default:
				t.Errorf("order %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if ok != n || broke != 9*n {
		t.Fatalf("%d ordered, %d refused; want %d and %d", ok, broke, n, 9*n)
	}
	if got := f.balance(t); got != 0 {
		t.Fatalf("balance %d, want 0", got)
	}
	checkInvariants(t, f.bundle)
}

func TestOrderReportRefusalsLeaveNothing(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 30)
	cases := []struct {
		name  string
		price int64
		edit  func(*ledger.OrderReportParams)
		want  error
	}{
		{"over balance", 101, nil, ledger.ErrInsufficientCredits},
		{"over the integration cap", 31, nil, ledger.ErrCreditCeiling},
		{"other account's site", 10, func(p *ledger.OrderReportParams) { p.SiteID = uuid.New() }, ledger.ErrNotFound},
		{"no datasets", 10, func(p *ledger.OrderReportParams) { p.DatasetIDs = nil }, ledger.ErrInvalid},
	}
	for _, c := range cases {
		p := f.order("", c.price)
		if c.edit != nil {
			c.edit(&p)
		}
		if _, _, err := f.led.OrderReport(f.ctx, p); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	large, err := f.led.CreateSite(f.ctx, ledger.Site{AccountID: f.account, Geometry: json.RawMessage(`{"type":"Point","coordinates":[151.0,-33.9]}`), Fingerprint: "cd", AreaM2: 400_001})
	if err != nil {
		t.Fatal(err)
	}
	p := f.order("", 10)
	p.SiteID = large.ID
	if _, _, err := f.led.OrderReport(f.ctx, p); !errors.Is(err, ledger.ErrSiteIneligible) {
		t.Errorf("site over the area limit: %v", err)
	}
	// An archived site is gone for new orders.
	if err := f.led.ArchiveSite(f.ctx, f.account, f.site); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.led.OrderReport(f.ctx, f.order("", 10)); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("archived site: %v", err)
	}
	if got := f.balance(t); got != 100 {
		t.Fatalf("balance %d after refusals, want 100", got)
	}
	if ps, _ := f.led.ListPurchases(f.ctx, f.account, ledger.PurchaseFilter{Limit: 10}); len(ps) != 0 {
		t.Fatalf("%d purchases after refusals", len(ps))
	}
	if rs, _ := f.led.ListReports(f.ctx, f.account, ledger.ReportFilter{Limit: 10}); len(rs) != 0 {
		t.Fatalf("%d reports after refusals", len(rs))
	}
	checkInvariants(t, f.bundle)
}

func TestOrderReportInterruptedLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"report:checked", "report:purchase"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			f := newReportFixture(t, 100, 0)
			injected := errors.New("injected fault")
			ledger.SetFaultHook(f.led, func(_ context.Context, p string) error {
				if p == point {
					return injected
				}
				return nil
			})
			if _, _, err := f.led.OrderReport(f.ctx, f.order("retry", 40)); err == nil {
				t.Fatal("interrupted order succeeded")
			}
			ledger.SetFaultHook(f.led, nil)
			if got := f.balance(t); got != 100 {
				t.Fatalf("balance %d after an interrupted order", got)
			}
			r, _, err := f.led.OrderReport(f.ctx, f.order("retry", 40))
			if err != nil || r.Status != ledger.ReportQueued {
				t.Fatalf("retry: %+v %v", r, err)
			}
			if got := f.balance(t); got != 60 {
				t.Fatalf("balance %d after the retry, want 60", got)
			}
			checkInvariants(t, f.bundle)
		})
	}
}

// TestFailReportRefundsExactlyOnce races many failures of one report (a
// builder's and the janitor's) and checks one refund, the purchase's
// refund fields and an untouched debit.
func TestFailReportRefundsExactlyOnce(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 50)
	r, p, err := f.led.OrderReport(f.ctx, f.order("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.led.ClaimReport(f.ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := f.led.FailReport(f.ctx, r.ID, "source_unavailable")
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d failures took effect, want 1", wins)
	}
	if got := f.balance(t); got != 100 {
		t.Fatalf("balance %d after the refund, want 100", got)
	}
	got, err := f.led.Purchase(f.ctx, f.account, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if *got.CreditsRefunded != 40 || *got.RefundStatus != "full" || got.CreditsCharged != 40 || *got.BalanceAfter != 60 || got.Receipt.BalanceAfter != 60 {
		t.Fatalf("purchase after refund: refunded %d status %s charged %d balance_after %d", *got.CreditsRefunded, *got.RefundStatus, got.CreditsCharged, *got.BalanceAfter)
	}
	in, err := f.led.Integration(f.ctx, f.integration)
	if err != nil || in.CreditsUsed != 0 {
		t.Fatalf("integration used %d after the refund, want 0 (%v)", in.CreditsUsed, err)
	}
	rep, err := f.led.Report(f.ctx, f.account, r.ID)
	if err != nil || rep.Status != ledger.ReportFailed || rep.ReasonCode == nil || *rep.ReasonCode != "source_unavailable" {
		t.Fatalf("report %+v %v", rep, err)
	}
	// A late build cannot complete a refunded report.
	if _, err := f.led.AddRevision(f.ctx, ledger.RevisionParams{ID: uuid.New(), ReportID: r.ID, Number: 1, ContentStatus: "available", ProvenanceStatus: "captured"}); !errors.Is(err, ledger.ErrReportFinal) {
		t.Fatalf("late revision of a failed report: %v", err)
	}
	acts, err := f.led.ListActivity(f.ctx, f.integration, ledger.ActivityFilter{Limit: 10})
	if err != nil || len(acts) != 1 || acts[0].Outcome != "failed" || *acts[0].ResourceID != r.ID.String() || acts[0].HTTPStatus != 503 ||
		*acts[0].ErrorCode != "source_unavailable" || acts[0].Operation != "build_report" {
		t.Fatalf("activity %+v %v", acts, err)
	}
	checkInvariants(t, f.bundle)
}

func TestStaleReportBuildsRequeueThenFailWithRefund(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 0)
	r, _, err := f.led.OrderReport(f.ctx, f.order("k", 30))
	if err != nil {
		t.Fatal(err)
	}
	const maxAttempts = 2
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		c, err := f.led.ClaimReport(f.ctx, time.Minute)
		if err != nil || c.ID != r.ID || c.Attempts != attempt || c.Status != ledger.ReportRunning {
			t.Fatalf("claim %d: %+v %v", attempt, c, err)
		}
		if _, err := f.led.ClaimReport(f.ctx, time.Minute); !errors.Is(err, ledger.ErrNotFound) {
			t.Fatalf("a running report was claimed twice: %v", err)
		}
		// The builder crashed: nothing happens until its claim expires.
		if failed, err := f.led.FailStaleReports(f.ctx, maxAttempts); err != nil || len(failed) != 0 {
			t.Fatalf("sweep before expiry: %v %v", failed, err)
		}
		f.clock.Advance(time.Minute)
		failed, err := f.led.FailStaleReports(f.ctx, maxAttempts)
		if err != nil {
			t.Fatal(err)
		}
		if attempt < maxAttempts && len(failed) != 0 {
			t.Fatalf("attempt %d: failed %v, want a requeue", attempt, failed)
		}
		if attempt == maxAttempts && (len(failed) != 1 || failed[0] != r.ID) {
			t.Fatalf("after the last attempt: failed %v", failed)
		}
	}
	if got := f.balance(t); got != 100 {
		t.Fatalf("balance %d, want the refund back to 100", got)
	}
	checkInvariants(t, f.bundle)
}

func TestRequeueReportCountsOnlyFailures(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 0)
	if _, _, err := f.led.OrderReport(f.ctx, f.order("k", 1)); err != nil {
		t.Fatal(err)
	}
	c, _ := f.led.ClaimReport(f.ctx, time.Minute)
	if ok, err := f.led.RequeueReport(f.ctx, c.ID, false); !ok || err != nil {
		t.Fatal(ok, err)
	}
	c, _ = f.led.ClaimReport(f.ctx, time.Minute)
	if c.Attempts != 1 {
		t.Fatalf("attempts %d after an interrupted attempt, want 1", c.Attempts)
	}
	if ok, err := f.led.RequeueReport(f.ctx, c.ID, true); !ok || err != nil {
		t.Fatal(ok, err)
	}
	c, _ = f.led.ClaimReport(f.ctx, time.Minute)
	if c.Attempts != 2 {
		t.Fatalf("attempts %d after a failed attempt, want 2", c.Attempts)
	}
	if ok, _ := f.led.RequeueReport(f.ctx, uuid.New(), true); ok {
		t.Fatal("requeued a report that does not exist")
	}
}

func TestRevisionsAndContent(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 0)
	r, _, err := f.led.OrderReport(f.ctx, f.order("k", 10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.led.ClaimReport(f.ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	head := "Overview"
	sections := []ledger.ReportSection{{Index: 0, Heading: &head, Text: "Ünïcode overview"}, {Index: 1, Text: strings.Repeat("x", ledger.MaxSectionBytes)}}
	rev1 := uuid.New()
	v, err := f.led.AddRevision(f.ctx, ledger.RevisionParams{ID: rev1, ReportID: r.ID, Number: 1, ContentStatus: "available",
		ProvenanceStatus: "captured", Evidence: json.RawMessage(`{"layers":[]}`), Sections: sections})
	if err != nil || v.Number != 1 || len(v.Artifacts) != 0 {
		t.Fatalf("revision 1: %+v %v", v, err)
	}
	acts, err := f.led.ListActivity(f.ctx, f.integration, ledger.ActivityFilter{Limit: 10})
	if err != nil || len(acts) != 1 || acts[0].Outcome != "completed" || acts[0].HTTPStatus != 200 || acts[0].ErrorCode != nil {
		t.Fatalf("activity of the completed build: %+v %v", acts, err)
	}
	rep, _ := f.led.Report(f.ctx, f.account, r.ID)
	if rep.Status != ledger.ReportCompleted || rep.CompletedAt == nil || rep.RevisionCount != 1 || rep.Latest == nil || rep.Latest.ID != rev1 {
		t.Fatalf("completed report %+v", rep)
	}
	// The same revision number cannot land twice (a racing build).
	if _, err := f.led.AddRevision(f.ctx, ledger.RevisionParams{ID: uuid.New(), ReportID: r.ID, Number: 1, ContentStatus: "available", ProvenanceStatus: "captured"}); !errors.Is(err, ledger.ErrReportFinal) {
		t.Fatalf("duplicate revision 1: %v", err)
	}
	rev2 := uuid.New()
	if _, err := f.led.AddRevision(f.ctx, ledger.RevisionParams{ID: rev2, ReportID: r.ID, Number: 2, ContentStatus: "available", ProvenanceStatus: "partial",
		Sections: []ledger.ReportSection{{Index: 0, Text: "second"}}}); err != nil {
		t.Fatal(err)
	}
	revs, err := f.led.ListRevisions(f.ctx, f.account, r.ID, 0, 10)
	if err != nil || len(revs) != 2 || revs[0].ID != rev1 || revs[1].ID != rev2 {
		t.Fatalf("revisions %+v %v", revs, err)
	}
	if revs, _ := f.led.ListRevisions(f.ctx, f.account, r.ID, 1, 10); len(revs) != 1 || revs[0].Number != 2 {
		t.Fatalf("revisions after 1: %+v", revs)
	}
	if revs, _ := f.led.ListRevisions(f.ctx, uuid.New(), r.ID, 0, 10); len(revs) != 0 {
		t.Fatal("another account listed the revisions")
	}
	got, err := f.led.ReportSections(f.ctx, rev1, -1, 1)
	if err != nil || len(got) != 2 || got[0].Text != "Ünïcode overview" || *got[0].Heading != head {
		t.Fatalf("sections %+v %v", got, err)
	}
	if got, _ := f.led.ReportSections(f.ctx, rev1, 0, 10); len(got) != 1 || len(got[0].Text) != ledger.MaxSectionBytes {
		t.Fatalf("sections after 0: %d", len(got))
	}
	if _, err := f.led.ReportRevision(f.ctx, f.account, r.ID, rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.led.ReportRevision(f.ctx, uuid.New(), r.ID, rev2); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("another account read a revision: %v", err)
	}
	checkInvariants(t, f.bundle)
}

func TestSectionLimits(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", ledger.MaxSectionBytes/2) + "x" // 8193 bytes
	many := make([]ledger.ReportSection, ledger.MaxSections+1)
	for i := range many {
		many[i] = ledger.ReportSection{Index: i}
	}
	total := make([]ledger.ReportSection, 200)
	for i := range total {
		total[i] = ledger.ReportSection{Index: i, Text: strings.Repeat("a", 6000)}
	}
	for name, s := range map[string][]ledger.ReportSection{
		"over 8 KiB":     {{Index: 0, Text: big}},
		"invalid UTF-8":  {{Index: 0, Text: "\xff"}},
		"201 sections":   many,
		"over 1 MiB":     total,
		"index mismatch": {{Index: 1}},
	} {
		if err := ledger.ValidateSections(s); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := ledger.ValidateSections(many[:ledger.MaxSections]); err != nil {
		t.Fatal(err)
	}
}

func TestImportAndListReports(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 0)
	created := time.Date(2019, 3, 4, 5, 6, 7, 0, time.UTC)
	imp, err := f.led.ImportReport(f.ctx, ledger.ImportReportParams{ID: uuid.New(), RevisionID: uuid.New(), Account: f.account, SiteID: f.site,
		CreatedAt: created, Limitations: []string{"Dataset scope unknown."}})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Origin != ledger.OriginWebsite || imp.Status != ledger.ReportCompleted || imp.DatasetIDs != nil || imp.PurchaseID != nil ||
		imp.Latest == nil || imp.Latest.ContentStatus != "unavailable" || imp.Latest.ProvenanceStatus != "unknown" || !imp.CreatedAt.Equal(created) {
		t.Fatalf("imported %+v", imp)
	}
	if _, err := f.led.ImportReport(f.ctx, ledger.ImportReportParams{ID: uuid.New(), RevisionID: uuid.New(), Account: uuid.New(), SiteID: f.site, CreatedAt: created}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("import onto another account's site: %v", err)
	}
	var ordered []uuid.UUID
	for i := range 3 {
		f.clock.Advance(time.Second)
		r, _, err := f.led.OrderReport(f.ctx, f.order(fmt.Sprint(i), 1))
		if err != nil {
			t.Fatal(err)
		}
		ordered = append(ordered, r.ID)
	}
	all, err := f.led.ListReports(f.ctx, f.account, ledger.ReportFilter{Limit: 10})
	if err != nil || len(all) != 4 || all[0].ID != imp.ID || all[1].ID != ordered[0] || all[3].ID != ordered[2] {
		t.Fatalf("oldest first: %v", err)
	}
	page, _ := f.led.ListReports(f.ctx, f.account, ledger.ReportFilter{Limit: 1, AfterTime: &all[1].CreatedAt, AfterID: all[1].ID})
	if len(page) != 2 || page[0].ID != ordered[1] {
		t.Fatalf("after the second: %+v", page)
	}
	queued, _ := f.led.ListReports(f.ctx, f.account, ledger.ReportFilter{Limit: 10, Status: ledger.ReportQueued})
	if len(queued) != 3 {
		t.Fatalf("%d queued", len(queued))
	}
	before := all[2].CreatedAt
	early, _ := f.led.ListReports(f.ctx, f.account, ledger.ReportFilter{Limit: 10, CreatedBefore: &before})
	if len(early) != 2 {
		t.Fatalf("%d created before the third", len(early))
	}
	if other, _ := f.led.ListReports(f.ctx, uuid.New(), ledger.ReportFilter{Limit: 10}); len(other) != 0 {
		t.Fatal("another account listed the reports")
	}
}
