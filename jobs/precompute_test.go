package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/store"
)

// TestPrecomputedAnswerIsTheComputedOne: an answer begun before its
// query's admission (Precompute) is the one the attempt would compute,
// byte for byte, and the attempt uses it instead of computing; one begun
// for other inputs (another radius) is not used, and one discarded ends
// with the runner.
func TestPrecomputedAnswerIsTheComputedOne(t *testing.T) {
	b := setup(t)
	r := b.runner(jobs.Config{Workers: 1}, nil)
	if p := r.Precompute(ledger.Query{}, jobs.DecodedSite{}); p != nil {
		t.Fatal("Precompute began before Start")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Start(ctx)
	defer r.Stop(context.Background()) //nolint:errcheck // asserted below
	answer := func(q ledger.Query, pre *jobs.Precomputed) (ledger.Query, []byte) {
		t.Helper()
		defer pre.Discard()
		res := r.RunNowFrom(b.ctx, q, 30*time.Second, pre)
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
	computed, want := answer(b.admit(true, time.Minute), nil)
	if featureCount(t, computed) != 2 {
		t.Fatalf("computed %d features", featureCount(t, computed))
	}
	inputs := func(radius float64) ledger.Query {
		return ledger.Query{SiteGeometry: b.siteGeometry(), RadiusM: radius, LayerIDs: []string{layerID}, Frozen: b.frozen}
	}
	pre := r.Precompute(inputs(100), jobs.DecodedSite{})
	if pre == nil {
		t.Fatal("Precompute refused on a started runner")
	}
	row, got := answer(b.admit(true, time.Minute), pre)
	if string(got) != string(want) || row.ResultBytes != computed.ResultBytes || featureCount(t, row) != 2 || row.Status != computed.Status {
		t.Fatalf("precomputed answer %s (%d bytes, %s)\nwant %s (%d bytes, %s)", got, row.ResultBytes, row.Status, want, computed.ResultBytes, computed.Status)
	}
	if begun, used := r.PrecomputeCounts(); begun != 1 || used != 1 {
		t.Fatalf("precomputes begun %d, used %d; want 1, 1", begun, used)
	}
	// Another radius's answer is not this query's: computed afresh.
	if _, got := answer(b.admit(true, time.Minute), r.Precompute(inputs(1), jobs.DecodedSite{})); string(got) != string(want) {
		t.Fatalf("answer with another query's precompute %s, want %s", got, want)
	}
	if begun, used := r.PrecomputeCounts(); begun != 2 || used != 1 {
		t.Fatalf("precomputes begun %d, used %d; want 2, 1", begun, used)
	}
	r.Precompute(inputs(100), jobs.DecodedSite{}).Discard()
	// An answer stored with its admission ends its computation's context
	// (it stayed, with its timer, until the attempt timeout).
	first := r.Precompute(inputs(100), jobs.DecodedSite{})
	ans, ok := r.AnswerFirst(first, inputs(100), 30*time.Second)
	if !ok {
		t.Fatal("no answer first")
	}
	ans.Stored(context.Background(), false)
	if !jobs.PrecomputeEnded(first) {
		t.Fatal("the context of an answer stored with its admission is still live")
	}
	// Its first page held it whole: no file. One whose first page did not
	// (more) is written behind, the bytes answered.
	paged := inputs(100)
	paged.ID, paged.AccountID = uuid.New(), b.account
	ans2, ok := r.AnswerFirst(r.Precompute(paged, jobs.DecodedSite{}), paged, 30*time.Second)
	if !ok {
		t.Fatal("no answer first")
	}
	ans2.Stored(context.Background(), true)
	if err := r.Stop(context.Background()); err != nil { // waits for the writes behind
		t.Fatal(err)
	}
	if _, err := b.store.Stat(b.ctx, jobs.ResultKey(uuid.Nil, uuid.Nil)); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("result file of an answer its first page held: %v; want none", err)
	}
	info, err := b.store.Stat(b.ctx, jobs.ResultKey(b.account, paged.ID))
	if err != nil || info.Size != ans2.Finish.Row.ResultBytes || info.Size == 0 {
		t.Fatalf("result file of an answer of more pages: %+v, %v; want its %d bytes", info, err, ans2.Finish.Row.ResultBytes)
	}
	if p := r.Precompute(inputs(100), jobs.DecodedSite{}); p != nil {
		t.Fatal("Precompute began after Stop")
	}
	// Every slot taken was given back once, whichever of a precomputation
	// and the attempt that took it ended first.
	if n := jobs.InRequest(r); n != 0 {
		t.Fatalf("%d in-request slots still taken after Stop", n)
	}
}
