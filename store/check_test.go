package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"siteenv/store"
)

// plainStore hides a store's Checker, leaving store.Check its Stat probe.
type plainStore struct{ store.Store }

// TestCheckFileStore: a file store is readable while its directory is there
// and unreadable once it is gone or replaced by a file, which a Stat alone
// cannot tell from an empty store.
func TestCheckFileStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := store.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Check(ctx, s); err != nil {
		t.Fatalf("empty store: %v", err)
	}
	if err := s.Put(ctx, "releases/a/b", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := store.Check(ctx, s); err != nil {
		t.Fatalf("store with data: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := store.Check(ctx, s); err == nil {
		t.Fatal("a vanished store directory passed the check")
	}
	if err := store.Check(ctx, plainStore{s}); err != nil {
		t.Fatalf("the Stat probe treats a missing object as readable: %v", err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := store.Check(ctx, s); err == nil {
		t.Fatal("a file in place of the store directory passed the check")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := store.Check(cancelled, s); err == nil {
		t.Fatal("a cancelled check passed")
	}
}
