package jobs_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/geo"
	"siteenv/jobs"
	"siteenv/ledger"
)

// TestPrecomputedFromDecodedSite: a polygon site handed over decoded and
// checked (jobs.DecodedSite, as the API hands the site it decoded) gives
// the answer the runner computes from the site's stored JSON, byte for
// byte, and the attempt uses it; the precomputation reads its site from
// the hand-over, not from the stored JSON.
func TestPrecomputedFromDecodedSite(t *testing.T) {
	b := setup(t)
	r := b.runner(jobs.Config{Workers: 1}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Start(ctx)
	defer r.Stop(context.Background()) //nolint:errcheck // the test's end

	// A 30 m circle of 500 positions, 300 m west of the features, with
	// every coordinate at full precision (off the canonical grid), as the
	// API stores it: canonical, marshalled.
	circle := func(westM float64) orb.Geometry {
		c := orb.Point{origin[0] - westM/(111_320*0.8309), origin[1]}
		ring := make(orb.Ring, 500)
		for i := range len(ring) - 1 {
			a := 2 * math.Pi * float64(i) / float64(len(ring)-1)
			ring[i] = orb.Point{c[0] + 30*math.Cos(a)/(111_320*0.8309) + 1e-10, c[1] + 30*math.Sin(a)/111_320}
		}
		ring[len(ring)-1] = ring[0]
		return geo.Canonical(orb.Polygon{ring})
	}
	g := circle(300)
	raw, err := json.Marshal(geojson.NewGeometry(g))
	if err != nil {
		t.Fatal(err)
	}
	site, err := b.led.CreateSite(b.ctx, ledger.Site{AccountID: b.account, Geometry: raw, Fingerprint: geo.Fingerprint(g)})
	if err != nil {
		t.Fatal(err)
	}
	inputs := ledger.Query{SiteGeometry: raw, RadiusM: 400, LayerIDs: []string{layerID}, Frozen: b.frozen}
	admit := func() ledger.Query {
		t.Helper()
		q := inputs
		q.AccountID, q.IntegrationID, q.SiteID = b.account, b.integ, site.ID
		res, err := b.led.Admit(b.ctx, ledger.AdmitRequest{Claimed: true, Query: q,
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 1000, MaxRetainedBytes: 1 << 30}, PerMinute: 1000,
				RunNow: true, MaxRunning: 4, Lease: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Query
	}
	answer := func(pre *jobs.Precomputed) (ledger.Query, []byte) {
		t.Helper()
		defer pre.Discard()
		res := r.RunNowFrom(b.ctx, admit(), 30*time.Second, pre)
		if !res.Accepted || res.Finish == nil {
			t.Fatalf("RunNowFrom %+v: want its finish handed over", res)
		}
		row := res.Finish.Row
		obj, err := r.OpenResult(b.ctx, row)
		if err != nil {
			t.Fatal(err)
		}
		res.Finish.Decline()
		return row, readAll(t, obj)
	}
	computed, want := answer(nil) // from the stored JSON
	if featureCount(t, computed) != 2 {
		t.Fatalf("computed %d features, want 2: %s", featureCount(t, computed), want)
	}
	row, got := answer(r.Precompute(inputs, jobs.DecodedSite{Geometry: g, Checked: true}))
	if string(got) != string(want) || row.ResultBytes != computed.ResultBytes || row.Status != computed.Status {
		t.Fatalf("answer precomputed from the decoded site %s (%s)\nwant %s (%s)", got, row.Status, want, computed.Status)
	}
	if begun, used := r.PrecomputeCounts(); begun != 1 || used != 1 {
		t.Fatalf("precomputes begun %d, used %d; want 1, 1", begun, used)
	}
	// The site handed over is the one used: another circle, 100 m
	// further west, gives other distances.
	if _, got := answer(r.Precompute(inputs, jobs.DecodedSite{Geometry: circle(400), Checked: true})); string(got) == string(want) {
		t.Fatalf("the precomputation ignored the site handed over: %s", got)
	}
	// Without the hand-over it decodes the stored JSON, as before.
	if _, got := answer(r.Precompute(inputs, jobs.DecodedSite{})); string(got) != string(want) {
		t.Fatalf("answer precomputed from the stored site %s\nwant %s", got, want)
	}
}
