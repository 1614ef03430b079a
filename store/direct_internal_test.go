package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
)

// TestDirectWriteFallbacks: where the file system refuses O_DIRECT at open,
// or refuses a direct write later, the blocks go through the page cache
// and the object is the same, on disk and in memory.
func TestDirectWriteFallbacks(t *testing.T) {
	data := make([]byte, 3*blockSize+777)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for name, open := range map[string]func(string) (*os.File, error){
		"refused at open": func(string) (*os.File, error) { return nil, errors.New("EINVAL") },
		// Read-only: every direct write fails, the first one included.
		"refused at write": func(p string) (*os.File, error) { return os.Open(p) },
	} {
		t.Run(name, func(t *testing.T) {
			openDirectFile = open
			t.Cleanup(func() { openDirectFile = openDirect })
			root := t.TempDir()
			s, err := NewFileStore(root)
			if err != nil {
				t.Fatal(err)
			}
			s.KeepRecent(64 << 20)
			ctx := context.Background()
			w, err := s.Create(ctx, "f/obj")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			disk, err := os.ReadFile(s.path("f/obj"))
			if err != nil || !bytes.Equal(disk, data) {
				t.Fatalf("file differs (%d bytes, %v)", len(disk), err)
			}
			o, err := s.Open(ctx, "f/obj")
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			if _, ok := o.(*memObject); !ok {
				t.Fatalf("read from %T, want the kept blocks", o)
			}
			got, err := io.ReadAll(io.NewSectionReader(o, 0, o.Size()))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("kept copy differs (%v)", err)
			}
		})
	}
}
