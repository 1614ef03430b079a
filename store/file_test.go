package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"siteenv/store"
	"siteenv/store/storetest"
)

func TestFileStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.OpenStore(context.Background(), "file://"+t.TempDir(), store.S3Config{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestFileStoreLeavesNoTempFiles(t *testing.T) {
	root := t.TempDir()
	s, err := store.NewFileStore(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "a/b", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a/b", strings.NewReader("y"), 1); !errors.Is(err, store.ErrExists) {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a/c", strings.NewReader("y"), 5); !errors.Is(err, store.ErrSizeMismatch) {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "b" {
		t.Fatalf("directory holds %v, want only b", entries)
	}
	// Deleting the last key prunes the empty directories.
	if err := s.Delete(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty directory not pruned: %v", err)
	}
}

func TestOpenStoreURLs(t *testing.T) {
	tests := []struct {
		url     string
		wantErr error
	}{
		{"file://" + t.TempDir(), nil},
		{"file:relative/path", store.ErrInvalidURL},
		{"file://host/abs", store.ErrInvalidURL},
		{"s3://", store.ErrInvalidURL},
		{"s3://bucket/../x", store.ErrInvalidURL},
		{"s3://bucket/p?x=1", store.ErrInvalidURL},
		{"s3://bucket/prefix", store.ErrInvalidURL}, // no endpoint configured
		{"gs://bucket", store.ErrInvalidURL},
		{"://", store.ErrInvalidURL},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			_, err := store.OpenStore(context.Background(), tc.url, store.S3Config{})
			if !errors.Is(err, tc.wantErr) && !(tc.wantErr == nil && err == nil) {
				t.Fatalf("OpenStore(%q) err = %v, want %v", tc.url, err, tc.wantErr)
			}
		})
	}
}

func BenchmarkFileStoreReadAt(b *testing.B) {
	s, err := store.NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	data := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	if err := s.Put(ctx, "obj", strings.NewReader(data), int64(len(data))); err != nil {
		b.Fatal(err)
	}
	obj, err := s.Open(ctx, "obj")
	if err != nil {
		b.Fatal(err)
	}
	defer obj.Close()
	p := make([]byte, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for i := 0; b.Loop(); i++ {
		if _, err := obj.ReadAt(p, int64(i%16)*int64(len(p))); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFileStorePutVolatile: an object put without fsync is visible whole
// at once under its key, a taken key is refused without changing it, and
// no temporary file stays behind.
func TestFileStorePutVolatile(t *testing.T) {
	root := t.TempDir()
	s, err := store.NewFileStore(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.PutVolatile(ctx, "results/a/q1", []byte("one\ntwo\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutVolatile(ctx, "results/a/q1", []byte("other")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second put: %v, want ErrExists", err)
	}
	if err := s.PutVolatile(ctx, "../escape", []byte("x")); err == nil {
		t.Fatal("an invalid key was stored")
	}
	o, err := s.Open(ctx, "results/a/q1")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	b := make([]byte, o.Size())
	if _, err := o.ReadAt(b, 0); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("read %q %v", b, err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "results", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want the object alone", len(entries))
	}
}
