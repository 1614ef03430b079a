package tiles

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/paulmach/orb"
)

// Tiles are decoded with the Parquet column readers straight into the
// Tile's Go slices, without Arrow arrays: building arrays and then copying
// them out cost two extra copies of every value and most of a load's
// garbage. The unit of work is one column chunk (a column of one row
// group), so a tile whose bytes are nearly all in the WKB column still
// decodes on every core.

// chunkJob reads one column chunk.
type chunkJob struct {
	leaf int    // Parquet leaf column
	rg   int    // index into chunkReader.rowGroups
	cost int64  // compressed bytes: big chunks are scheduled first
	name string // column path, for errors
	read chunkFunc
}

// chunkFunc decodes rows [row0, row0+rows) of the tile from col, the chunk
// of row group rg (an index into the read's row groups).
type chunkFunc func(s *scratch, cr file.ColumnChunkReader, rg, row0, rows int) error

// chunkReader runs the chunk jobs of one read.
type chunkReader struct {
	pf        *file.Reader
	rowGroups []int // row groups read
	row0      []int // first tile row of each; row0[len(rowGroups)] is the row count
	jobs      []chunkJob
}

// add queues one job per row group for leaf.
func (cr *chunkReader) add(md *metadata.FileMetaData, leaf int, read chunkFunc) {
	name := md.Schema.Column(leaf).Path()
	for k, rg := range cr.rowGroups {
		var cost int64
		if cc, err := md.RowGroup(rg).ColumnChunk(leaf); err == nil {
			cost = cc.TotalCompressedSize()
		}
		cr.jobs = append(cr.jobs, chunkJob{leaf: leaf, rg: k, cost: cost, name: name, read: read})
	}
}

// run runs the jobs on up to GOMAXPROCS goroutines (the caller's
// included) and returns the first job's error, in schedule order.
func (cr *chunkReader) run(ctx context.Context) error {
	jobs := cr.jobs
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].cost > jobs[j].cost })
	errs := make([]error, len(jobs))
	var next atomic.Int64
	var failed atomic.Bool
	work := func() {
		var s scratch
		for !failed.Load() {
			i := int(next.Add(1) - 1)
			if i >= len(jobs) {
				return
			}
			if err := cr.runJob(ctx, &s, &jobs[i]); err != nil {
				errs[i] = err
				failed.Store(true)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// runSerial runs the jobs on the caller's goroutine: for small reads
// whose callers already use every core.
func (cr *chunkReader) runSerial(ctx context.Context) error {
	var s scratch
	for i := range cr.jobs {
		if err := cr.runJob(ctx, &s, &cr.jobs[i]); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (cr *chunkReader) runJob(ctx context.Context, s *scratch, j *chunkJob) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer func() {
		// The Parquet decoders panic on some corrupt input; a corrupt tile
		// must fail its read, not the process.
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: column %s: %v", ErrInvalidTile, j.name, p)
		}
	}()
	rows := cr.row0[j.rg+1] - cr.row0[j.rg]
	col, err := cr.pf.RowGroup(cr.rowGroups[j.rg]).Column(j.leaf)
	if err != nil {
		return chunkError(j.name, err)
	}
	defer col.Close()
	if col.Descriptor().MaxRepetitionLevel() > 0 {
		return fmt.Errorf("%w: column %s is repeated", ErrInvalidTile, j.name)
	}
	if err := j.read(s, col, j.rg, cr.row0[j.rg], rows); err != nil {
		return chunkError(j.name, err)
	}
	if col.HasNext() {
		return fmt.Errorf("%w: column %s has more values than its row group has rows", ErrInvalidTile, j.name)
	}
	return nil
}

// callerError carries an error of a caller's hook through the read
// unchanged.
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }

func chunkError(name string, err error) error {
	if ce, ok := err.(callerError); ok {
		return ce.err
	}
	if ctxErr := contextError(err); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, ErrInvalidTile) {
		return err
	}
	return fmt.Errorf("%w: column %s: %v", ErrInvalidTile, name, err)
}

var errShortChunk = fmt.Errorf("%w: column chunk has fewer values than its row group has rows", ErrInvalidTile)

// scratch is one goroutine's reusable buffers.
type scratch struct {
	defs []int16
	vals []parquet.ByteArray
	f64  []float64
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// byteBatch is how many BYTE_ARRAY values are decoded per call.
const byteBatch = 4096

// byteColumn collects a BYTE_ARRAY column. Each row group's values are
// appended, end to end, to a buffer of their own, allocated by the worker
// that reads the chunk with the chunk's uncompressed size as capacity (it
// bounds PLAIN values), so chunks are read, and their memory touched,
// concurrently.
type byteColumn struct {
	sizes  []int64  // per row group: its chunk's uncompressed size
	chunks [][]byte // per row group: values end to end
	ends   []uint32 // per row: end of its value in its chunk
	valid  []bool   // per row when nulls are allowed, else nil
	nulls  []int    // per row group
	// nullErr is returned for a null when nulls are not allowed.
	nullErr error
	// done, when set, is called by the worker with each chunk read; its
	// error fails the read.
	done func(buf []byte, ends []uint32, row0 int) error
}

// maxChunkBytes bounds one chunk's values (ends are uint32).
const maxChunkBytes = math.MaxUint32

func newByteColumn(md *metadata.FileMetaData, leaf int, rowGroups []int, n int, fileSize int64, nullable bool, nullErr error) *byteColumn {
	c := &byteColumn{
		sizes:   make([]int64, len(rowGroups)),
		chunks:  make([][]byte, len(rowGroups)),
		ends:    make([]uint32, n),
		nulls:   make([]int, len(rowGroups)),
		nullErr: nullErr,
	}
	if nullable {
		c.valid = make([]bool, n)
	}
	for k, rg := range rowGroups {
		if cc, err := md.RowGroup(rg).ColumnChunk(leaf); err == nil {
			// The size comes from the footer; a corrupt one must not force
			// a huge allocation. A chunk outgrowing it just reallocates.
			c.sizes[k] = max(0, min(cc.TotalUncompressedSize(), 64*fileSize+1<<20, maxChunkBytes))
		}
	}
	return c
}

func (c *byteColumn) read(s *scratch, col file.ColumnChunkReader, rg, row0, rows int) error {
	r, ok := col.(*file.ByteArrayColumnChunkReader)
	if !ok {
		return fmt.Errorf("%w: physical type %s, want BYTE_ARRAY", ErrInvalidTile, col.Type())
	}
	maxDef := col.Descriptor().MaxDefinitionLevel()
	buf := make([]byte, 0, c.sizes[rg])
	ends := c.ends[row0 : row0+rows]
	var valid []bool
	if c.valid != nil {
		valid = c.valid[row0 : row0+rows]
	}
	nulls := 0
	done := 0
	for done < rows {
		want := min(rows-done, byteBatch)
		s.vals = grow(s.vals, want)
		var defs []int16
		if maxDef > 0 {
			s.defs = grow(s.defs, want)
			defs = s.defs
		}
		// Values alias the page (or dictionary) and are copied at once.
		total, nv, err := r.ReadBatchInPage(int64(want), s.vals, defs, nil)
		if err != nil {
			return err
		}
		if total == 0 {
			break
		}
		vals := s.vals[:nv]
		size := len(buf)
		for _, v := range vals {
			size += len(v)
		}
		if size > maxChunkBytes {
			return fmt.Errorf("%w: column chunk too large", ErrInvalidTile)
		}
		if size > cap(buf) {
			// Dictionary-encoded values outgrow the chunk's size: grow
			// once to what the rows read so far predict.
			est := min(int64(size)*int64(rows)/int64(done+int(total)), maxChunkBytes)
			buf = append(make([]byte, 0, max(int(est+est/16), size)), buf...)
		}
		if maxDef == 0 {
			for j, v := range vals {
				buf = append(buf, v...)
				ends[done+j] = uint32(len(buf))
			}
			if valid != nil {
				for j := range nv {
					valid[done+j] = true
				}
			}
		} else {
			v := 0
			for j, d := range defs[:total] {
				if d == maxDef {
					buf = append(buf, vals[v]...)
					v++
					if valid != nil {
						valid[done+j] = true
					}
				} else {
					if valid == nil {
						return c.nullErr
					}
					nulls++
				}
				ends[done+j] = uint32(len(buf))
			}
		}
		done += int(total)
	}
	if done != rows {
		return errShortChunk
	}
	if cap(buf)-len(buf) > len(buf)/16 {
		// Length prefixes and page headers, or a dictionary's small
		// chunk size, left much unused: keep an exact copy.
		buf = append(make([]byte, 0, len(buf)), buf...)
	}
	c.chunks[rg] = buf
	c.nulls[rg] = nulls
	if c.done != nil {
		return c.done(buf, ends, row0)
	}
	return nil
}

// join returns the column's values end to end in row order, and the start
// of each chunk's values in them.
func (c *byteColumn) join() (data []byte, starts []int) {
	starts = make([]int, len(c.chunks))
	total := 0
	for k, ch := range c.chunks {
		starts[k] = total
		total += len(ch)
	}
	if len(c.chunks) == 1 {
		data = c.chunks[0]
	} else {
		data = make([]byte, 0, total)
		for _, ch := range c.chunks {
			data = append(data, ch...)
		}
	}
	c.chunks = nil
	return data, starts
}

// nullCount is the number of nulls read.
func (c *byteColumn) nullCount() int {
	n := 0
	for _, k := range c.nulls {
		n += k
	}
	return n
}

// batchReader is the typed ReadBatch of the fixed-width column readers.
type batchReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
}

// readFixed reads len(dst) rows of a fixed-width column into dst (nulls as
// zero), setting valid when it is not nil, and returns the nulls read.
func readFixed[T any](s *scratch, col file.ColumnChunkReader, dst []T, valid []bool) (int, error) {
	r, ok := col.(batchReader[T])
	if !ok {
		return 0, fmt.Errorf("%w: unexpected physical type %s", ErrInvalidTile, col.Type())
	}
	maxDef := col.Descriptor().MaxDefinitionLevel()
	var defs []int16
	if maxDef > 0 {
		s.defs = grow(s.defs, len(dst))
		defs = s.defs
	}
	nulls := 0
	done := 0
	for done < len(dst) {
		var d []int16
		if defs != nil {
			d = defs[done:]
		}
		total, nv, err := r.ReadBatch(int64(len(dst)-done), dst[done:], d, nil)
		if err != nil {
			return 0, err
		}
		if total == 0 {
			break
		}
		end := done + int(total)
		if defs != nil && nv < int(total) {
			// Values come dense; spread them over their rows from the back.
			var zero T
			v := done + nv - 1
			for j := end - 1; j >= done; j-- {
				if defs[j] == maxDef {
					dst[j] = dst[v]
					v--
				} else {
					dst[j] = zero
					nulls++
				}
			}
		}
		if valid != nil {
			if defs == nil {
				for j := done; j < end; j++ {
					valid[j] = true
				}
			} else {
				for j := done; j < end; j++ {
					valid[j] = defs[j] == maxDef
				}
			}
		}
		done = end
	}
	if done != len(dst) {
		return nulls, errShortChunk
	}
	return nulls, nil
}

// fixedColumn collects a fixed-width column.
type fixedColumn[T any] struct {
	dst     []T
	valid   []bool // nil: nulls are not allowed
	nulls   []int  // per row group
	nullErr error
}

func newFixedColumn[T any](n, rowGroups int, nullable bool, nullErr error) *fixedColumn[T] {
	c := &fixedColumn[T]{dst: make([]T, n), nulls: make([]int, rowGroups), nullErr: nullErr}
	if nullable {
		c.valid = make([]bool, n)
	}
	return c
}

func (c *fixedColumn[T]) read(s *scratch, col file.ColumnChunkReader, rg, row0, rows int) error {
	var valid []bool
	if c.valid != nil {
		valid = c.valid[row0 : row0+rows]
	}
	nulls, err := readFixed(s, col, c.dst[row0:row0+rows], valid)
	if err != nil {
		return err
	}
	if nulls > 0 && c.valid == nil {
		return c.nullErr
	}
	c.nulls[rg] = nulls
	return nil
}

func (c *fixedColumn[T]) nullCount() int {
	n := 0
	for _, k := range c.nulls {
		n += k
	}
	return n
}

// boundsColumn reads one coordinate (0 xmin, 1 ymin, 2 xmax, 3 ymax) of
// the bbox column into bounds. Nulls read as zero.
func boundsColumn(bounds []orb.Bound, coord int) chunkFunc {
	return func(s *scratch, col file.ColumnChunkReader, rg, row0, rows int) error {
		s.f64 = grow(s.f64, rows)
		if _, err := readFixed(s, col, s.f64, nil); err != nil {
			return err
		}
		out := bounds[row0 : row0+rows]
		for i, v := range s.f64 {
			switch coord {
			case 0:
				out[i].Min[0] = v
			case 1:
				out[i].Min[1] = v
			case 2:
				out[i].Max[0] = v
			default:
				out[i].Max[1] = v
			}
		}
		return nil
	}
}
