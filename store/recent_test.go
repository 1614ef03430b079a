package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"siteenv/store"
	"siteenv/store/storetest"
)

// TestFileStoreKeepingRecentConformance: a file store that writes past the
// page cache and keeps recent objects in memory is still a Store in every
// respect the conformance suite checks (a small cache, so it also evicts).
func TestFileStoreKeepingRecentConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s.KeepRecent(8 << 20)
	})
}

// recentStore is a store keeping up to max bytes of recent objects.
func recentStore(t *testing.T, max int64) (*store.FileStore, string) {
	t.Helper()
	root := t.TempDir()
	s, err := store.NewFileStore(root)
	if err != nil {
		t.Fatal(err)
	}
	return s.KeepRecent(max), root
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

// write stores data under key through Create in writes of the given size.
func write(t *testing.T, s *store.FileStore, key string, data []byte, step int) {
	t.Helper()
	w, err := s.Create(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for p := data; len(p) > 0; {
		n := min(step, len(p))
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func readObject(t *testing.T, s store.Store, key string) []byte {
	t.Helper()
	o, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	b, err := io.ReadAll(io.NewSectionReader(o, 0, o.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDirectWritesAreExact: objects of every size around the alignment and
// the block, written in odd-sized pieces, read back byte for byte from the
// cache, from the disk (a fresh store over the same directory), by ranges,
// and with no temporary file left behind.
func TestDirectWritesAreExact(t *testing.T) {
	s, root := recentStore(t, 64<<20)
	disk, err := store.NewFileStore(root)
	if err != nil {
		t.Fatal(err)
	}
	const block = 1 << 20
	for i, n := range []int{0, 1, 4095, 4096, 4097, block - 1, block, block + 1, 3*block + 12345} {
		key := fmt.Sprintf("obj/%d", n)
		data := randomBytes(uint64(i), n)
		write(t, s, key, data, 1000+i*777)
		if got := readObject(t, s, key); !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: cached copy differs", n)
		}
		if got := readObject(t, disk, key); !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: file differs (%d bytes)", n, len(got))
		}
		if info, err := disk.Stat(context.Background(), key); err != nil || info.Size != int64(n) {
			t.Fatalf("%d bytes: stat %+v %v", n, info, err)
		}
		if n > 10 {
			rc, err := s.GetRange(context.Background(), key, 3, int64(n-10))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, data[3:n-7]) {
				t.Fatalf("%d bytes: range differs (%v)", n, err)
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "obj"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 9 {
		t.Fatalf("directory holds %d entries, want the 9 objects", len(entries))
	}
}

// TestRecentObjectsAreServedFromMemory: right after its write an object is
// read from memory (its file cut short behind the store's back does not
// change what Open reads), a Delete (here, or of the file by another
// process) is seen at once, and an object evicted by newer ones is read
// from its file.
func TestRecentObjectsAreServedFromMemory(t *testing.T) {
	ctx := context.Background()
	s, root := recentStore(t, 8<<20) // objects up to 2 MiB are kept
	a := randomBytes(1, 1500000)
	write(t, s, "r/a", a, 64<<10)
	if err := os.Truncate(filepath.Join(root, "r", "a"), 10); err != nil {
		t.Fatal(err)
	}
	if got := readObject(t, s, "r/a"); !bytes.Equal(got, a) {
		t.Fatalf("read %d bytes, want the %d kept in memory", len(got), len(a))
	}
	// Deleted by another process: Open sees the file gone.
	if err := os.Remove(filepath.Join(root, "r", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, "r/a"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("open after the file was removed: %v", err)
	}
	b := randomBytes(2, 100000)
	write(t, s, "r/b", b, 4096)
	if err := s.Delete(ctx, "r/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, "r/b"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("open after Delete: %v", err)
	}
	// Too large to keep (over a quarter of the cache): read from its file.
	big := randomBytes(3, 3<<20)
	write(t, s, "r/big", big, 1<<20)
	if err := os.Truncate(filepath.Join(root, "r", "big"), 10); err != nil {
		t.Fatal(err)
	}
	if got := readObject(t, s, "r/big"); len(got) != 10 {
		t.Fatalf("an object too large to keep was read from memory (%d bytes)", len(got))
	}
	// Eviction: the oldest goes once newer ones fill the cache.
	first := randomBytes(4, 2<<20)
	write(t, s, "r/first", first, 1<<20)
	for i := range 4 {
		write(t, s, fmt.Sprintf("r/n%d", i), randomBytes(uint64(10+i), 2<<20), 1<<20)
	}
	if err := os.Truncate(filepath.Join(root, "r", "first"), 10); err != nil {
		t.Fatal(err)
	}
	if got := readObject(t, s, "r/first"); len(got) != 10 {
		t.Fatalf("an evicted object was read from memory (%d bytes)", len(got))
	}
}

// TestRecentObjectOutlivesEviction: a reader holding a kept object keeps
// reading its bytes while newer objects evict it and reuse blocks (run
// under -race in make test).
func TestRecentObjectOutlivesEviction(t *testing.T) {
	ctx := context.Background()
	s, _ := recentStore(t, 8<<20)
	data := randomBytes(5, 2<<20)
	write(t, s, "h/held", data, 1<<20)
	o, err := s.Open(ctx, "h/held")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 8 {
			write(t, s, fmt.Sprintf("h/n%d", i), randomBytes(uint64(20+i), 2<<20), 1<<20)
		}
	}()
	buf := make([]byte, len(data))
	for range 20 {
		if _, err := o.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data) {
			t.Fatal("a held object's bytes changed under its reader")
		}
	}
	wg.Wait()
	if _, err := o.ReadAt(buf, 0); (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(buf, data) {
		t.Fatalf("after eviction: %v", err)
	}
	o.Close()
	o.Close() // a second Close releases nothing more
}

// TestAbortedDirectWriteLeavesNothing: an aborted or refused write leaves
// no object, no temporary file and nothing in the cache.
func TestAbortedDirectWriteLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s, root := recentStore(t, 8<<20)
	w, err := s.Create(ctx, "x/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(randomBytes(6, 1500000)); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if _, err := s.Open(ctx, "x/a"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("aborted object opened: %v", err)
	}
	write(t, s, "x/b", []byte("taken"), 5)
	w, err = s.Create(ctx, "x/c")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("x"))
	if err := os.Link(filepath.Join(root, "x", "b"), filepath.Join(root, "x", "c")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); !errors.Is(err, store.ErrExists) {
		t.Fatalf("commit over a taken key: %v", err)
	}
	if got := readObject(t, s, "x/c"); string(got) != "taken" {
		t.Fatalf("x/c reads %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "x"))
	if len(entries) != 2 {
		t.Fatalf("directory holds %d entries, want b and c", len(entries))
	}
}
