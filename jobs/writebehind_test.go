package jobs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/store"
)

func readAll(t *testing.T, o store.Object) []byte {
	t.Helper()
	defer o.Close()
	b, err := io.ReadAll(io.NewSectionReader(o, 0, o.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResultWrittenBehindIsRecomputedAfterACrash: an in-request attempt's
// result is answered from memory before its file exists, the file is
// written behind the answer with the same bytes, and a result whose file
// was lost with its process (file missing, memory empty: a new runner) is
// computed again from the query's frozen inputs, byte for byte, and
// stored again. A released result is not recomputed.
func TestResultWrittenBehindIsRecomputedAfterACrash(t *testing.T) {
	b := setup(t)
	r := b.runner(jobs.Config{Workers: 1}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Start(ctx)
	defer r.Stop(context.Background()) //nolint:errcheck // asserted below
	q := b.admit(true, time.Minute)
	res := r.RunNow(b.ctx, q, 30*time.Second)
	if !res.Accepted || res.Finish == nil {
		t.Fatalf("RunNow %+v: want its finish handed over", res)
	}
	row := res.Finish.Row
	if row.ResultKey == nil || row.ResultBytes == 0 || featureCount(t, row) != 2 {
		t.Fatalf("handed row: key %v, %d bytes", row.ResultKey, row.ResultBytes)
	}
	key := *row.ResultKey
	// Answered before the file: the write starts once the finish is stored.
	if _, err := b.store.Stat(b.ctx, key); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("result file before the finish was stored: %v", err)
	}
	obj, err := r.OpenResult(b.ctx, row)
	if err != nil {
		t.Fatal(err)
	}
	answered := readAll(t, obj)
	if int64(len(answered)) != row.ResultBytes {
		t.Fatalf("memory copy %d bytes, row says %d", len(answered), row.ResultBytes)
	}
	res.Finish.Decline() // the attempt stores its finish, then the file behind it
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	readStored := func() []byte {
		t.Helper()
		o, err := b.store.Open(b.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return readAll(t, o)
	}
	if stored := readStored(); string(stored) != string(answered) {
		t.Fatalf("file written behind differs from the answer:\n%s\n%s", stored, answered)
	}

	// The process died before its write: no file, no memory copy.
	if err := b.store.Delete(b.ctx, key); err != nil {
		t.Fatal(err)
	}
	r2 := b.runner(jobs.Config{Workers: 1}, nil)
	obj, err = r2.OpenResult(b.ctx, ledger.Query{ID: q.ID, AccountID: q.AccountID, ResultKey: &key})
	if err != nil {
		t.Fatalf("recompute: %v", err)
	}
	if got := readAll(t, obj); string(got) != string(answered) {
		t.Fatalf("recomputed result differs from the answer:\n%s\n%s", got, answered)
	}
	b.waitFor("the recomputed result stored again", func() bool {
		_, err := b.store.Stat(b.ctx, key)
		return err == nil
	})
	if stored := readStored(); string(stored) != string(answered) {
		t.Fatalf("recomputed file differs from the answer")
	}

	// A crash cut the file's write short (results are stored without
	// fsync): it is there but shorter than the answer, so it is removed
	// and computed again.
	if err := b.store.Delete(b.ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Put(b.ctx, key, bytes.NewReader(answered[:len(answered)/2]), -1); err != nil {
		t.Fatal(err)
	}
	obj, err = b.runner(jobs.Config{Workers: 1}, nil).OpenResult(b.ctx, row)
	if err != nil {
		t.Fatalf("recompute of a short file: %v", err)
	}
	if got := readAll(t, obj); string(got) != string(answered) {
		t.Fatalf("result of a short file differs from the answer:\n%s\n%s", got, answered)
	}
	b.waitFor("the short file replaced whole", func() bool {
		info, err := b.store.Stat(b.ctx, key)
		return err == nil && info.Size == row.ResultBytes
	})
	if stored := readStored(); string(stored) != string(answered) {
		t.Fatalf("file stored again after a short one differs from the answer")
	}

	// Released: nothing to recompute, the page says expired.
	if _, err := b.led.CancelOrRelease(b.ctx, b.account, q.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Delete(b.ctx, key); err != nil {
		t.Fatal(err)
	}
	r3 := b.runner(jobs.Config{Workers: 1}, nil)
	if _, err := r3.OpenResult(b.ctx, ledger.Query{ID: q.ID, AccountID: q.AccountID, ResultKey: &key}); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("released result opened: %v; want ErrNotExist", err)
	}
	if _, err := b.store.Stat(b.ctx, key); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("a released result was stored again: %v", err)
	}
}

// TestWriteBehindIsBounded: a result that would take the results awaiting
// their write past Config.WriteBehindBytes is stored before its answer (a
// slow or unreachable store must not make memory grow with the queue).
func TestWriteBehindIsBounded(t *testing.T) {
	b := setup(t)
	r := b.runner(jobs.Config{Workers: 1, WriteBehindBytes: 1}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Start(ctx)
	defer r.Stop(context.Background()) //nolint:errcheck // only the file matters here
	q := b.admit(true, time.Minute)
	res := r.RunNow(b.ctx, q, 30*time.Second)
	if !res.Accepted || res.Finish == nil {
		t.Fatalf("RunNow %+v: want its finish handed over", res)
	}
	row := res.Finish.Row
	if row.ResultKey == nil || row.ResultBytes <= 1 {
		t.Fatalf("handed row: key %v, %d bytes", row.ResultKey, row.ResultBytes)
	}
	// Stored before the answer, as a worker's result is.
	info, err := b.store.Stat(b.ctx, *row.ResultKey)
	if err != nil || info.Size != row.ResultBytes {
		t.Fatalf("result file at the answer: %+v, %v; want %d bytes stored", info, err, row.ResultBytes)
	}
	res.Finish.Decline()
}
