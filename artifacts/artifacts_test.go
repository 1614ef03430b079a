package artifacts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"time"

	"siteenv/artifacts"
	"siteenv/clock"
	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
	"siteenv/store"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

func setup(t *testing.T) (context.Context, *store.FileStore, *ledger.Ledger, ledger.Account) {
	t.Helper()
	led := ledgertest.New(t, clock.NewFake(time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)))
	st, err := store.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acct, err := led.CreateAccount(ctx, "A", 0)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, st, led, acct
}

func TestPut(t *testing.T) {
	t.Parallel()
	ctx, st, led, acct := setup(t)
	data := bytes.Repeat([]byte("%PDF-1.7 "), 10_000)
	for _, size := range []int64{int64(len(data)), -1} {
		a, err := artifacts.Put(ctx, st, led, artifacts.Params{Account: acct.ID, Filename: "report.pdf", MediaType: ledger.MediaPDF,
			DatasetIDs: []string{"layer.a"}}, bytes.NewReader(data), size)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if a.Size != int64(len(data)) || a.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("recorded size %d sha %s", a.Size, a.SHA256)
		}
		if want := "artifacts/" + acct.ID.String() + "/" + a.ID.String() + "/report.pdf"; a.StorageKey != want {
			t.Fatalf("storage key %q, want %q", a.StorageKey, want)
		}
		rc, err := st.GetRange(ctx, a.StorageKey, 0, a.Size)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, data) {
			t.Fatal("stored bytes differ")
		}
		if back, err := led.Artifact(ctx, acct.ID, a.ID); err != nil || back.SHA256 != a.SHA256 {
			t.Fatalf("ledger: %+v %v", back, err)
		}
	}
}

func TestPutTooLarge(t *testing.T) {
	t.Parallel()
	ctx, st, led, acct := setup(t)
	p := artifacts.Params{Account: acct.ID, Filename: "big.pdf", MediaType: ledger.MediaPDF}
	// A declared size over the limit is refused before anything is read.
	if _, err := artifacts.Put(ctx, st, led, p, bytes.NewReader(nil), artifacts.MaxSize+1); !errors.Is(err, artifacts.ErrTooLarge) {
		t.Fatalf("declared: %v", err)
	}
	// An unknown size is cut at the limit and nothing stays behind.
	if _, err := artifacts.Put(ctx, st, led, p, io.LimitReader(zeros{}, artifacts.MaxSize+10), -1); !errors.Is(err, artifacts.ErrTooLarge) {
		t.Fatalf("streamed: %v", err)
	}
	if left, err := st.List(ctx, "artifacts/"); err != nil || len(left) != 0 {
		t.Fatalf("left behind: %v %v", left, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
