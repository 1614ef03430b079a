package store

import (
	"context"
	"fmt"
	"os"
)

// DefaultRecentBytes is what `siteenv serve` keeps of recent objects
// unless SITEENV_STORE_RECENT says otherwise: a few hundred large results.
const DefaultRecentBytes = 256 << 20

// KeepRecent makes s write new objects past the page cache and keep up to
// maxBytes of the most recently written ones in memory for reads (see
// recentObjects). Call it before s is used; maxBytes <= 0 leaves s as it is.
//
// An object read from memory is still checked to exist on disk at every
// Open, so a Delete by another process sharing the directory is seen.
func (s *FileStore) KeepRecent(maxBytes int64) *FileStore {
	if maxBytes > 0 {
		s.recent = newRecentObjects(maxBytes)
	}
	return s
}

// openDirectFile is openDirect; tests replace it to take the fallbacks.
var openDirectFile = openDirect

// directWriter is FileStore's Writer when it keeps recent objects: bytes
// are gathered in blocks, each written with O_DIRECT once full (and the
// last, padded to the alignment, at Commit, then the file cut to its
// size). Where the file system refuses O_DIRECT the same blocks are
// written through the page cache.
type directWriter struct {
	ctx        context.Context
	c          *recentObjects
	key, final string
	tmp        *os.File // nil once finished
	direct     *os.File // the same file opened with O_DIRECT; nil: buffered
	blocks     [][]byte // full blocks written and kept (while keep)
	cur        []byte   // the block being filled
	off        int64    // bytes written to the file (whole blocks)
	keep       bool     // the object is still small enough to cache
}

func (s *FileStore) createDirect(ctx context.Context, key, final string, tmp *os.File) *directWriter {
	w := &directWriter{ctx: ctx, c: s.recent, key: key, final: final, tmp: tmp, keep: true}
	w.direct, _ = openDirectFile(tmp.Name()) // nil: written through the page cache
	return w
}

func (w *directWriter) Write(p []byte) (int, error) {
	if w.tmp == nil {
		return 0, fmt.Errorf("store: write %s: %w", w.key, os.ErrClosed)
	}
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		if w.cur == nil {
			w.cur = w.c.pool.get()
		}
		k := copy(w.cur[len(w.cur):cap(w.cur)], p)
		w.cur, p = w.cur[:len(w.cur)+k], p[k:]
		if len(w.cur) == cap(w.cur) {
			if err := w.writeBlock(w.cur); err != nil {
				return n - len(p), err
			}
			w.off += int64(len(w.cur))
			if w.keep && w.c.cacheable(w.off) {
				w.blocks = append(w.blocks, w.cur)
			} else {
				w.drop()
				w.c.pool.put(w.cur)
			}
			w.cur = nil
		}
	}
	return n, nil
}

// writeBlock writes b (its length a multiple of dioAlign) at w.off.
func (w *directWriter) writeBlock(b []byte) error {
	if w.direct != nil {
		_, err := w.direct.WriteAt(b, w.off)
		if err == nil {
			return nil
		}
		// Refused after all (EINVAL on some file systems): go buffered.
		w.direct.Close()
		w.direct = nil
	}
	_, err := w.tmp.WriteAt(b, w.off)
	return err
}

// drop stops keeping the object: it is too large for the cache.
func (w *directWriter) drop() {
	w.keep = false
	for _, b := range w.blocks {
		w.c.pool.put(b)
	}
	w.blocks = nil
}

func (w *directWriter) Commit() error {
	if w.tmp == nil {
		return fmt.Errorf("store: commit %s: %w", w.key, os.ErrClosed)
	}
	defer w.Abort()
	size := w.off
	if n := len(w.cur); n > 0 {
		padded := (n + dioAlign - 1) / dioAlign * dioAlign
		clear(w.cur[n:padded])
		if err := w.writeBlock(w.cur[:padded]); err != nil {
			return fmt.Errorf("store: put %s: %w", w.key, err)
		}
		size += int64(n)
		if err := w.tmp.Truncate(size); err != nil {
			return fmt.Errorf("store: put %s: truncate: %w", w.key, err)
		}
	}
	if err := w.tmp.Sync(); err != nil {
		return fmt.Errorf("store: put %s: sync: %w", w.key, err)
	}
	if err := publish(w.ctx, w.tmp.Name(), w.key, w.final); err != nil {
		return err
	}
	if w.keep && w.c.cacheable(size) {
		blocks := w.blocks
		if w.cur != nil {
			blocks = append(blocks, w.tail())
		}
		w.blocks, w.cur = nil, nil // the cache's now
		w.c.add(w.key, blocks, size)
	}
	return nil
}

// tail is the last, partly filled block as the cache keeps it: a block
// less than half full is copied to a slice of its own length and the block
// goes back to the pool, so a small object holds its size, not a 1 MiB
// block (a cache of small results bounded by their sizes once held 100x
// its bound).
func (w *directWriter) tail() []byte {
	if len(w.cur) >= blockSize/2 {
		return w.cur
	}
	b := append([]byte(nil), w.cur...)
	w.c.pool.put(w.cur)
	w.cur = nil
	return b
}

// Abort drops what was written; after Commit (which calls it to close the
// files and return the blocks it did not hand to the cache) it does nothing.
func (w *directWriter) Abort() {
	if w.tmp == nil {
		return
	}
	if w.direct != nil {
		w.direct.Close()
		w.direct = nil
	}
	w.tmp.Close()
	os.Remove(w.tmp.Name())
	w.tmp = nil
	w.drop()
	if w.cur != nil {
		w.c.pool.put(w.cur)
		w.cur = nil
	}
}
