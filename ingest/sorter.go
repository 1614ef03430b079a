package ingest

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// sorter is an external sort of records by (key, id) in bounded memory:
// records are buffered in an arena until the memory budget is used, then
// sorted and written to a run file; finish merges the runs. The order, and
// so every tile, does not depend on the budget. It also counts records per
// level-histLevel quadtree square for the tile plan.
//
// A sorter is used by one goroutine.
type sorter struct {
	dir    string
	budget int64

	chunkSize int
	chunks    [][]byte // arena chunks; chunks[:used] hold records
	used      int
	off       int   // fill of chunks[used-1]
	big       int64 // bytes of records too large for a chunk
	entries   []sortEntry

	onSpill func()

	runs   []string
	merged int // runs made by mergeRuns, for unique names
	hist   map[uint32]int64
	count  int64
}

type sortEntry struct {
	key uint64
	id  []byte
	rec []byte
}

// sortEntrySize approximates the memory of one sortEntry.
const sortEntrySize = 8 + 24 + 24

// histLevel is the deepest quadtree level the tile plan splits to (squares
// of about 0.022 x 0.011 degrees); a square that still holds more than
// TileRows features is cut into consecutive runs of the sort order.
const histLevel = 14

func newSorter(dir string, budget int64) *sorter {
	cs := int(min(budget/8, 4<<20))
	cs = max(cs, 16<<10)
	return &sorter{dir: dir, budget: budget, chunkSize: cs, hist: map[uint32]int64{}}
}

func (s *sorter) memUsed() int64 {
	return int64(s.used)*int64(s.chunkSize) + s.big + int64(len(s.entries))*sortEntrySize
}

// add copies rec into the sorter.
func (s *sorter) add(rec []byte) error {
	var dst []byte
	if len(rec) > s.chunkSize/4 {
		dst = append([]byte(nil), rec...)
		s.big += int64(len(rec))
	} else {
		if s.used == 0 || s.off+len(rec) > s.chunkSize {
			if s.used == len(s.chunks) {
				s.chunks = append(s.chunks, make([]byte, s.chunkSize))
			}
			s.used++
			s.off = 0
		}
		c := s.chunks[s.used-1]
		dst = c[s.off : s.off+len(rec) : s.off+len(rec)]
		copy(dst, rec)
		s.off += len(rec)
	}
	key := recordKey(dst)
	s.entries = append(s.entries, sortEntry{key: key, id: recordID(dst), rec: dst})
	s.hist[uint32(key>>(2*(keyOrder-histLevel)))]++
	s.count++
	if s.memUsed() > s.budget {
		return s.spill()
	}
	return nil
}

func compareEntries(a, b sortEntry) int {
	switch {
	case a.key < b.key:
		return -1
	case a.key > b.key:
		return 1
	}
	return bytes.Compare(a.id, b.id)
}

func (s *sorter) sortEntries() { slices.SortFunc(s.entries, compareEntries) }

// spill writes the buffered records, sorted, to a new run file.
func (s *sorter) spill() (err error) {
	if len(s.entries) == 0 {
		return nil
	}
	s.sortEntries()
	name := filepath.Join(s.dir, fmt.Sprintf("run-%05d", len(s.runs)))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("ingest: spill: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("ingest: spill: %w", cerr)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	var lenBuf [binary.MaxVarintLen64]byte
	for _, e := range s.entries {
		n := binary.PutUvarint(lenBuf[:], uint64(len(e.rec)))
		if _, err := w.Write(lenBuf[:n]); err != nil {
			return fmt.Errorf("ingest: spill: %w", err)
		}
		if _, err := w.Write(e.rec); err != nil {
			return fmt.Errorf("ingest: spill: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("ingest: spill: %w", err)
	}
	s.runs = append(s.runs, name)
	if s.onSpill != nil {
		s.onSpill()
	}
	clear(s.entries) // drop references to big records
	s.entries = s.entries[:0]
	s.used, s.off, s.big = 0, 0, 0
	return nil
}

// recIter yields records in order; a record is valid until the next call.
type recIter interface {
	next() ([]byte, bool, error)
	close()
}

// finish returns an iterator over every record in (key, id) order. Once
// anything has been spilled, the rest is spilled too, so that the merge
// holds only read buffers in memory.
func (s *sorter) finish() (recIter, error) {
	if len(s.runs) == 0 {
		s.sortEntries()
		return &memIter{entries: s.entries}, nil
	}
	if err := s.spill(); err != nil {
		return nil, err
	}
	s.chunks = nil
	s.entries = nil
	// Merge at most maxMergeWays runs at once, so that open files and read
	// buffers stay bounded; more runs are first merged into longer ones.
	for len(s.runs) > maxMergeWays {
		if err := s.mergeRuns(maxMergeWays); err != nil {
			return nil, err
		}
	}
	return s.openMerge(s.runs)
}

const maxMergeWays = 64

// mergeRuns merges the first n runs into one new run at the end.
func (s *sorter) mergeRuns(n int) (err error) {
	m, err := s.openMerge(s.runs[:n])
	if err != nil {
		return err
	}
	defer m.close()
	name := filepath.Join(s.dir, fmt.Sprintf("run-%05d", len(s.runs)+s.merged))
	s.merged++
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("ingest: merge: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("ingest: merge: %w", cerr)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	var lenBuf [binary.MaxVarintLen64]byte
	for {
		rec, ok, err := m.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		k := binary.PutUvarint(lenBuf[:], uint64(len(rec)))
		w.Write(lenBuf[:k])
		if _, err := w.Write(rec); err != nil {
			return fmt.Errorf("ingest: merge: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("ingest: merge: %w", err)
	}
	for _, old := range s.runs[:n] {
		os.Remove(old)
	}
	s.runs = append(s.runs[n:], name)
	return nil
}

// openMerge opens a merge over the named runs.
func (s *sorter) openMerge(runs []string) (*mergeIter, error) {
	bufSize := int(min(max(s.budget/int64(2*len(runs)), 16<<10), 256<<10))
	m := &mergeIter{}
	for _, name := range runs {
		f, err := os.Open(name)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("ingest: merge: %w", err)
		}
		r := &runReader{f: f, br: bufio.NewReaderSize(f, bufSize)}
		m.all = append(m.all, r)
		ok, err := r.advance()
		if err != nil {
			m.close()
			return nil, err
		}
		if ok {
			m.h = append(m.h, r)
		}
	}
	heap.Init(&m.h)
	return m, nil
}

type memIter struct {
	entries []sortEntry
	i       int
}

func (it *memIter) next() ([]byte, bool, error) {
	if it.i >= len(it.entries) {
		return nil, false, nil
	}
	it.i++
	return it.entries[it.i-1].rec, true, nil
}

func (it *memIter) close() {}

type runReader struct {
	f   *os.File
	br  *bufio.Reader
	buf []byte
	cur sortEntry
}

func (r *runReader) advance() (bool, error) {
	n, err := binary.ReadUvarint(r.br)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ingest: read spill file: %w", err)
	}
	if n < 8 || n > 1<<34 {
		return false, errBadRecord
	}
	if uint64(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := io.ReadFull(r.br, r.buf); err != nil {
		return false, fmt.Errorf("ingest: read spill file: %w", err)
	}
	r.cur = sortEntry{key: recordKey(r.buf), id: recordID(r.buf), rec: r.buf}
	return true, nil
}

type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return compareEntries(h[i].cur, h[j].cur) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeIter merges sorted runs.
type mergeIter struct {
	h       runHeap
	all     []*runReader
	pending *runReader // returned last; advanced on the next call
}

func (m *mergeIter) next() ([]byte, bool, error) {
	if p := m.pending; p != nil {
		m.pending = nil
		ok, err := p.advance()
		if err != nil {
			return nil, false, err
		}
		if ok {
			heap.Push(&m.h, p)
		}
	}
	if len(m.h) == 0 {
		return nil, false, nil
	}
	r := heap.Pop(&m.h).(*runReader)
	m.pending = r
	return r.cur.rec, true, nil
}

func (m *mergeIter) close() {
	for _, r := range m.all {
		r.f.Close()
	}
}
