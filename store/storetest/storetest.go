// Package storetest is the conformance suite every store.Store must pass.
// Each backend's tests call Run with a constructor for a fresh, empty store.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"siteenv/store"
)

// Run runs the conformance suite. newStore must return a fresh, empty store
// each call (for example a new temporary directory, or a new key prefix in a
// shared bucket); the subtests run in parallel on their own stores.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"PutOpenRead", testPutOpenRead},
		{"ReadAtOffsets", testReadAtOffsets},
		{"GetRange", testGetRange},
		{"EmptyObject", testEmptyObject},
		{"LargeObject", testLargeObject},
		{"Stat", testStat},
		{"ListOrderAndPrefix", testList},
		{"Immutable", testImmutable},
		{"NotExist", testNotExist},
		{"InvalidKeys", testInvalidKeys},
		{"Delete", testDelete},
		{"SizeMismatch", testSizeMismatch},
		{"UnknownSize", testUnknownSize},
		{"ContextCancelled", testContextCancelled},
		{"ConcurrentPutSameKey", testConcurrentPut},
		{"CreateCommitAbort", testCreate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func put(t *testing.T, s store.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func readAll(t *testing.T, s store.Store, key string) []byte {
	t.Helper()
	obj, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer obj.Close()
	buf := make([]byte, obj.Size())
	n, err := obj.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		t.Fatalf("ReadAt(%q, all): n=%d err=%v", key, n, err)
	}
	return buf[:n]
}

func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func testPutOpenRead(t *testing.T, s store.Store) {
	data := payload(10_000, 1)
	put(t, s, "releases/layer.a:1/r_1/tiles/000001.parquet", data)
	obj, err := s.Open(context.Background(), "releases/layer.a:1/r_1/tiles/000001.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if obj.Size() != int64(len(data)) {
		t.Fatalf("Size = %d, want %d", obj.Size(), len(data))
	}
	if got := readAll(t, s, "releases/layer.a:1/r_1/tiles/000001.parquet"); !bytes.Equal(got, data) {
		t.Fatal("content differs from what was put")
	}
}

func testReadAtOffsets(t *testing.T, s store.Store) {
	data := payload(1000, 2)
	put(t, s, "obj", data)
	obj, err := s.Open(context.Background(), "obj")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	tests := []struct {
		name    string
		off     int64
		len     int
		wantN   int
		wantEOF bool
	}{
		{"start", 0, 10, 10, false},
		{"middle", 500, 100, 100, false},
		{"exactly to end", 900, 100, 100, false},
		{"short at end", 990, 100, 10, true},
		{"last byte", 999, 1, 1, false},
		{"at end", 1000, 10, 0, true},
		{"past end", 5000, 10, 0, true},
		{"whole", 0, 1000, 1000, false},
		{"more than whole", 0, 2000, 1000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := make([]byte, tc.len)
			n, err := obj.ReadAt(p, tc.off)
			if n != tc.wantN {
				t.Fatalf("n = %d, want %d (err %v)", n, tc.wantN, err)
			}
			if tc.wantEOF {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("err = %v, want io.EOF", err)
				}
			} else if err != nil && !(errors.Is(err, io.EOF) && tc.off+int64(n) == int64(len(data))) {
				t.Fatalf("err = %v, want nil", err)
			}
			if want := data[min(tc.off, 1000):min(tc.off+int64(tc.wantN), 1000)]; !bytes.Equal(p[:n], want) {
				t.Fatal("bytes differ")
			}
		})
	}
	if _, err := obj.ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatal("ReadAt at a negative offset succeeded")
	}
}

func testGetRange(t *testing.T, s store.Store) {
	ctx := context.Background()
	data := payload(300_000, 7)
	put(t, s, "artifacts/a/b/file.pdf", data)
	put(t, s, "empty", nil)
	tests := []struct {
		name        string
		key         string
		off, length int64
	}{
		{"whole", "artifacts/a/b/file.pdf", 0, 300_000},
		{"first byte", "artifacts/a/b/file.pdf", 0, 1},
		{"last byte", "artifacts/a/b/file.pdf", 299_999, 1},
		{"middle", "artifacts/a/b/file.pdf", 1234, 200_000},
		{"empty at end", "artifacts/a/b/file.pdf", 300_000, 0},
		{"empty object", "empty", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := s.GetRange(ctx, tc.key, tc.off, tc.length)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			want := data[tc.off : tc.off+tc.length]
			if tc.key == "empty" {
				want = nil
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (or content differs)", len(got), len(want))
			}
		})
	}
	for _, bad := range [][2]int64{{300_000, 1}, {299_999, 2}, {-1, 1}, {0, -1}, {400_000, 0}, {0, 300_001}} {
		rc, err := s.GetRange(ctx, "artifacts/a/b/file.pdf", bad[0], bad[1])
		if !errors.Is(err, store.ErrInvalidRange) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("GetRange(off %d, len %d) err = %v, want ErrInvalidRange", bad[0], bad[1], err)
		}
	}
	if _, err := s.GetRange(ctx, "artifacts/missing", 0, 1); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("GetRange(missing) err = %v, want ErrNotExist", err)
	}
	if _, err := s.GetRange(ctx, "../x", 0, 1); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("GetRange(bad key) err = %v, want ErrInvalidKey", err)
	}
	// Reads stop once the context is done.
	cctx, cancel := context.WithCancel(ctx)
	rc, err := s.GetRange(cctx, "artifacts/a/b/file.pdf", 0, 300_000)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(rc); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel err = %v, want context.Canceled", err)
	}
}

func testEmptyObject(t *testing.T, s store.Store) {
	put(t, s, "empty", nil)
	info, err := s.Stat(context.Background(), "empty")
	if err != nil || info.Size != 0 {
		t.Fatalf("Stat = %+v, %v; want size 0", info, err)
	}
	obj, err := s.Open(context.Background(), "empty")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if n, err := obj.ReadAt(make([]byte, 4), 0); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("ReadAt on empty object = %d, %v; want 0, EOF", n, err)
	}
}

func testLargeObject(t *testing.T, s store.Store) {
	// Larger than common multipart thresholds (16 MiB).
	data := payload(17<<20+123, 3)
	put(t, s, "big/object.bin", data)
	obj, err := s.Open(context.Background(), "big/object.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if obj.Size() != int64(len(data)) {
		t.Fatalf("Size = %d, want %d", obj.Size(), len(data))
	}
	for _, off := range []int64{0, 16 << 20, int64(len(data)) - 4096} {
		p := make([]byte, 4096)
		if _, err := obj.ReadAt(p, off); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if !bytes.Equal(p, data[off:off+4096]) {
			t.Fatalf("bytes at %d differ", off)
		}
	}
}

func testStat(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Hour)
	put(t, s, "a/b/c.json", []byte(`{"x":1}`))
	info, err := s.Stat(context.Background(), "a/b/c.json")
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != "a/b/c.json" || info.Size != 7 {
		t.Fatalf("Stat = %+v", info)
	}
	if info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(time.Hour)) {
		t.Fatalf("ModTime %v is not about now", info.ModTime)
	}
	// A "directory" is not an object.
	if _, err := s.Stat(context.Background(), "a/b"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat(prefix) err = %v, want ErrNotExist", err)
	}
}

func keys(infos []store.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Key
	}
	return out
}

func testList(t *testing.T, s store.Store) {
	all := []string{"a.b", "a/a/c", "a/b", "a/c/d/e", "ab", "b/x", "b0", "z"}
	shuffled := append([]string(nil), all...)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for i, k := range shuffled {
		put(t, s, k, []byte(strings.Repeat("x", i+1)))
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"a/", []string{"a/a/c", "a/b", "a/c/d/e"}},
		{"a", []string{"a.b", "a/a/c", "a/b", "a/c/d/e", "ab"}},
		{"a/c/", []string{"a/c/d/e"}},
		{"a/c", []string{"a/c/d/e"}},
		{"b", []string{"b/x", "b0"}},
		{"b/", []string{"b/x"}},
		{"a/b", []string{"a/b"}},
		{"nothing/", []string{}},
		{"a/b/", []string{}},
	}
	for _, tc := range tests {
		got, err := s.List(context.Background(), tc.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tc.prefix, err)
		}
		if fmt.Sprint(keys(got)) != fmt.Sprint(tc.want) {
			t.Errorf("List(%q) = %v, want %v", tc.prefix, keys(got), tc.want)
		}
		for _, in := range got {
			if in.Size <= 0 || in.ModTime.IsZero() {
				t.Errorf("List(%q) item %+v lacks size or time", tc.prefix, in)
			}
		}
	}
}

func testImmutable(t *testing.T, s store.Store) {
	put(t, s, "k", []byte("first"))
	err := s.Put(context.Background(), "k", strings.NewReader("second"), 6)
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("second Put err = %v, want ErrExists", err)
	}
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Put err = %v does not match fs.ErrExist", err)
	}
	if got := readAll(t, s, "k"); string(got) != "first" {
		t.Fatalf("content = %q after rejected overwrite", got)
	}
}

func testNotExist(t *testing.T, s store.Store) {
	ctx := context.Background()
	put(t, s, "present/x", []byte("x"))
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s err = %v, want ErrNotExist and fs.ErrNotExist", op, err)
		}
	}
	for _, key := range []string{"missing", "present/y", "present/x/deeper"} {
		_, err := s.Open(ctx, key)
		check("Open("+key+")", err)
		_, err = s.Stat(ctx, key)
		check("Stat("+key+")", err)
		check("Delete("+key+")", s.Delete(ctx, key))
	}
}

func testInvalidKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	bad := []string{"", "/a", "a/", "a//b", "../a", "a/../b", "a/./b", ".", "..", `a\b`, "a\x00b", "a\nb", ".siteenv-tmp-x", strings.Repeat("k", 1000)}
	for _, key := range bad {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			check := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, store.ErrInvalidKey) {
					t.Errorf("%s err = %v, want ErrInvalidKey", op, err)
				}
			}
			check("Put", s.Put(ctx, key, strings.NewReader("x"), 1))
			_, err := s.Open(ctx, key)
			check("Open", err)
			_, err = s.Stat(ctx, key)
			check("Stat", err)
			check("Delete", s.Delete(ctx, key))
		})
	}
	for _, prefix := range []string{"/a", "../", "a//", "a/../"} {
		if _, err := s.List(ctx, prefix); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("List(%q) err = %v, want ErrInvalidKey", prefix, err)
		}
	}
	// Dots inside a segment are fine.
	put(t, s, "a..b/c...d", []byte("ok"))
}

func testDelete(t *testing.T, s store.Store) {
	ctx := context.Background()
	put(t, s, "results/q1/part-0", []byte("one"))
	put(t, s, "results/q1/part-1", []byte("two"))
	if err := s.Delete(ctx, "results/q1/part-0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "results/q1/part-0"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat after Delete err = %v", err)
	}
	if got, _ := s.List(ctx, "results/"); fmt.Sprint(keys(got)) != "[results/q1/part-1]" {
		t.Fatalf("List after Delete = %v", keys(got))
	}
	if err := s.Delete(ctx, "results/q1/part-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List(ctx, ""); len(got) != 0 {
		t.Fatalf("List after deleting all = %v", keys(got))
	}
	// A deleted temporary key may be written again.
	put(t, s, "results/q1/part-0", []byte("again"))
	if got := readAll(t, s, "results/q1/part-0"); string(got) != "again" {
		t.Fatalf("re-put content = %q", got)
	}
}

func testSizeMismatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.Put(ctx, "short", strings.NewReader("12345"), 10); !errors.Is(err, store.ErrSizeMismatch) {
		t.Fatalf("short reader err = %v, want ErrSizeMismatch", err)
	}
	if err := s.Put(ctx, "long", strings.NewReader("1234567890"), 5); !errors.Is(err, store.ErrSizeMismatch) {
		t.Fatalf("long reader err = %v, want ErrSizeMismatch", err)
	}
	for _, k := range []string{"short", "long"} {
		if _, err := s.Stat(ctx, k); !errors.Is(err, store.ErrNotExist) {
			t.Errorf("after failed Put, Stat(%q) err = %v, want ErrNotExist", k, err)
		}
	}
	if got, _ := s.List(ctx, ""); len(got) != 0 {
		t.Fatalf("failed Puts left %v", keys(got))
	}
}

func testUnknownSize(t *testing.T, s store.Store) {
	data := payload(3000, 4)
	if err := s.Put(context.Background(), "unknown", bytes.NewReader(data), -1); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, "unknown"); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
}

func testContextCancelled(t *testing.T, s store.Store) {
	put(t, s, "k", payload(100, 5))
	ctx, cancel := context.WithCancel(context.Background())
	obj, err := s.Open(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if _, err := obj.ReadAt(make([]byte, 10), 0); err != nil {
		t.Fatalf("ReadAt before cancel: %v", err)
	}
	cancel()
	if _, err := obj.ReadAt(make([]byte, 10), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadAt after cancel err = %v, want context.Canceled", err)
	}
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with cancelled ctx err = %v, want context.Canceled", op, err)
		}
	}
	check("Put", s.Put(ctx, "new", strings.NewReader("x"), 1))
	_, err = s.Open(ctx, "k")
	check("Open", err)
	_, err = s.Stat(ctx, "k")
	check("Stat", err)
	_, err = s.List(ctx, "")
	check("List", err)
	check("Delete", s.Delete(ctx, "k"))
	if _, err := s.Stat(context.Background(), "new"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("cancelled Put stored the object (Stat err %v)", err)
	}
	if _, err := s.Stat(context.Background(), "k"); err != nil {
		t.Errorf("cancelled Delete removed the object (Stat err %v)", err)
	}

	// A reader that cancels mid-stream aborts the Put.
	ctx2, cancel2 := context.WithCancel(context.Background())
	r := &cancelAfter{r: bytes.NewReader(payload(1<<20, 6)), n: 64 << 10, cancel: cancel2}
	if err := s.Put(ctx2, "midway", r, 1<<20); !errors.Is(err, context.Canceled) {
		t.Errorf("Put cancelled midway err = %v, want context.Canceled", err)
	}
	if _, err := s.Stat(context.Background(), "midway"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("Put cancelled midway stored the object (Stat err %v)", err)
	}
}

// cancelAfter calls cancel once n bytes have been read.
type cancelAfter struct {
	r      io.Reader
	n      int
	read   int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if len(p) > 16<<10 {
		p = p[:16<<10]
	}
	n, err := c.r.Read(p)
	c.read += n
	if c.read >= c.n {
		c.cancel()
	}
	return n, err
}

func testConcurrentPut(t *testing.T, s store.Store) {
	const writers = 8
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		errs    = make([]error, writers)
		content = make([][]byte, writers)
	)
	for i := range writers {
		content[i] = payload(64<<10, uint64(100+i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.Put(context.Background(), "contended/key", bytes.NewReader(content[i]), int64(len(content[i])))
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both succeeded", winner, i)
			}
			winner = i
		case !errors.Is(err, store.ErrExists):
			t.Fatalf("writer %d err = %v, want nil or ErrExists", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer succeeded")
	}
	if got := readAll(t, s, "contended/key"); !bytes.Equal(got, content[winner]) {
		t.Fatal("stored content is not the winner's")
	}
	if got, _ := s.List(context.Background(), ""); len(got) != 1 {
		t.Fatalf("List after contention = %v, want one key", keys(got))
	}
}

// testCreate: a Creator's object is invisible until Commit, then readable
// whole; Abort and a taken key store nothing; a finished Writer refuses
// more. Stores that are not Creators skip it.
func testCreate(t *testing.T, s store.Store) {
	c, ok := s.(store.Creator)
	if !ok {
		t.Skip("not a store.Creator")
	}
	ctx := context.Background()
	data := payload(300_000, 7)
	w, err := c.Create(ctx, "results/a/one.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:100_000]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[100_000:]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "results/a/one.ndjson"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("before Commit: Stat err %v, want ErrNotExist", err)
	}
	if infos, err := s.List(ctx, ""); err != nil || len(infos) != 0 {
		t.Fatalf("before Commit: List %v, %v; want nothing", infos, err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, "results/a/one.ndjson"); !bytes.Equal(got, data) {
		t.Fatalf("committed object differs: %d bytes, want %d", len(got), len(data))
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("Write after Commit succeeded")
	}
	w.Abort() // after Commit: nothing
	if got := readAll(t, s, "results/a/one.ndjson"); !bytes.Equal(got, data) {
		t.Fatal("Abort after Commit changed the object")
	}

	// A taken key: refused at Create, or at Commit when taken meanwhile.
	if _, err := c.Create(ctx, "results/a/one.ndjson"); !errors.Is(err, store.ErrExists) {
		t.Fatalf("Create of a taken key: %v, want ErrExists", err)
	}
	w2, err := c.Create(ctx, "results/a/two.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Write([]byte("loser")); err != nil {
		t.Fatal(err)
	}
	put(t, s, "results/a/two.ndjson", []byte("winner"))
	if err := w2.Commit(); !errors.Is(err, store.ErrExists) {
		t.Fatalf("Commit of a key taken meanwhile: %v, want ErrExists", err)
	}
	if got := readAll(t, s, "results/a/two.ndjson"); string(got) != "winner" {
		t.Fatalf("taken key now holds %q", got)
	}

	// Abort stores nothing and leaves no temporary file behind.
	w3, err := c.Create(ctx, "results/b/three.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w3.Write(data); err != nil {
		t.Fatal(err)
	}
	w3.Abort()
	if err := w3.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	infos, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(infos); !slices.Equal(got, []string{"results/a/one.ndjson", "results/a/two.ndjson"}) {
		t.Fatalf("after Abort the store lists %v", got)
	}
	if _, err := c.Create(ctx, "../escape"); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Create of an invalid key: %v, want ErrInvalidKey", err)
	}
}
