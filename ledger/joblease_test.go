package ledger_test

import (
	"testing"
	"time"

	"siteenv/ledger"
)

// TestJobLeasesRenewedByTheLivingOwnerLapseForTheDead: a query claim and a
// report claim last one lease on the ledger clock. Renewed, they outlive
// their first lease; no longer renewed (the owner died), the next sweep
// requeues them at once, long before any attempt limit. A renewal that names
// an earlier attempt (a stalled former owner) neither extends the new
// owner's claim nor is reported held.
func TestJobLeasesRenewedByTheLivingOwnerLapseForTheDead(t *testing.T) {
	t.Parallel()
	f := newReportFixture(t, 100, 0)
	const lease = 5 * time.Second
	rep, _, err := f.led.OrderReport(f.ctx, f.order("lease", 30))
	if err != nil {
		t.Fatal(err)
	}
	site, err := f.led.Site(f.ctx, f.account, f.site)
	if err != nil {
		t.Fatal(err)
	}
	qry, err := f.led.CreateQuery(f.ctx, ledger.Query{AccountID: f.account, IntegrationID: f.integration, SiteID: f.site,
		SiteGeometry: site.Geometry, LayerIDs: []string{"x"}}, ledger.QueryLimits{MaxQueued: 10, MaxRetainedBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	claim := func() (q, r ledger.JobClaim) {
		t.Helper()
		cq, err := f.led.ClaimQuery(f.ctx, 4, lease)
		if err != nil || cq.ID != qry.ID {
			t.Fatalf("claim query: %+v %v", cq, err)
		}
		cr, err := f.led.ClaimReport(f.ctx, lease)
		if err != nil || cr.ID != rep.ID {
			t.Fatalf("claim report: %+v %v", cr, err)
		}
		return ledger.JobClaim{ID: cq.ID, Attempt: cq.Attempts}, ledger.JobClaim{ID: cr.ID, Attempt: cr.Attempts}
	}
	sweep := func() {
		t.Helper()
		if err := f.led.FailStaleQueries(f.ctx, time.Hour, 5); err != nil {
			t.Fatal(err)
		}
		if failed, err := f.led.FailStaleReports(f.ctx, 5); err != nil || len(failed) != 0 {
			t.Fatalf("FailStaleReports: %v %v", failed, err)
		}
	}
	status := func() (string, string) {
		t.Helper()
		q, err := f.led.Query(f.ctx, f.account, qry.ID)
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.led.Report(f.ctx, f.account, rep.ID)
		if err != nil {
			t.Fatal(err)
		}
		return q.Status, r.Status
	}

	cq, cr := claim()
	for range 3 { // a living owner renews every lease/3 or so: three leases pass
		f.clock.Advance(4 * time.Second)
		lost, err := f.led.RenewJobLeases(f.ctx, []ledger.JobClaim{cq}, []ledger.JobClaim{cr}, lease)
		if err != nil || len(lost) != 0 {
			t.Fatalf("renewal: lost %v, %v", lost, err)
		}
		sweep()
		if q, r := status(); q != ledger.QueryRunning || r != ledger.ReportRunning {
			t.Fatalf("a renewed claim was taken: query %s, report %s", q, r)
		}
	}
	// The owner dies: one lease after its last renewal the work is queued.
	f.clock.Advance(lease - time.Millisecond)
	sweep()
	if q, r := status(); q != ledger.QueryRunning || r != ledger.ReportRunning {
		t.Fatalf("requeued before the lease lapsed: query %s, report %s", q, r)
	}
	f.clock.Advance(time.Millisecond)
	sweep()
	if q, r := status(); q != ledger.QueryQueued || r != ledger.ReportQueued {
		t.Fatalf("after the lease lapsed: query %s, report %s, want both queued", q, r)
	}

	// Another replica claims them (attempt 2); the former owner, stalled,
	// renews attempt 1: nothing is extended and both are reported lost.
	cq2, cr2 := claim()
	if cq2.Attempt != 2 || cr2.Attempt != 2 {
		t.Fatalf("second claims %+v %+v", cq2, cr2)
	}
	f.clock.Advance(4 * time.Second)
	lost, err := f.led.RenewJobLeases(f.ctx, []ledger.JobClaim{cq}, []ledger.JobClaim{cr}, lease)
	if err != nil || len(lost) != 2 {
		t.Fatalf("stale renewal: lost %v, %v; want both", lost, err)
	}
	f.clock.Advance(time.Second)
	sweep()
	if q, r := status(); q != ledger.QueryQueued || r != ledger.ReportQueued {
		t.Fatalf("a stale owner's renewal kept the new claims: query %s, report %s", q, r)
	}
	checkInvariants(t, f.bundle)
}
