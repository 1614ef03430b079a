package tiles

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Reading properties on demand. A tile read with SkipProperties holds its
// features' ids and geometries but none of their properties: a query needs
// the properties of the few features it returns, not of every feature a
// shard holds. ReadProperties reads them a row group at a time (one ranged
// read of the row group's property column chunks, which lie end to end),
// with the footer parsed at load time, so it costs no metadata read.

// lazyProps is what a tile read with SkipProperties keeps to read its
// properties later.
type lazyProps struct {
	md     *metadata.FileMetaData
	leaves []int // Parquet leaf of each property column
	size   int64 // the file's size
}

// ErrPropertiesRead reports ReadProperties on a tile that did not skip its
// properties, or a row group out of range.
var ErrPropertiesRead = errors.New("tiles: properties cannot be read from this tile")

// LazyProperties reports whether t was read with SkipProperties and has
// rows: its properties come from ReadProperties.
func (t *Tile) LazyProperties() bool { return t.lazy != nil }

// RowGroups is the number of row groups of a tile read with
// SkipProperties (0 otherwise).
func (t *Tile) RowGroups() int {
	if t.lazy == nil {
		return 0
	}
	return t.lazy.md.NumRowGroups()
}

// RowGroupOf returns the row group holding row i of a tile read with
// SkipProperties (and without Bound), and the row group's first row.
func (t *Tile) RowGroupOf(i int) (rg, row0 int) {
	if t.lazy == nil {
		return 0, 0
	}
	md := t.lazy.md
	for rg := range md.NumRowGroups() {
		n := int(md.RowGroup(rg).NumRows())
		if i < row0+n {
			return rg, row0
		}
		row0 += n
	}
	return -1, row0
}

// RowGroupStarts returns the first row of each row group of a tile read
// with SkipProperties (nil otherwise), a new slice.
func (t *Tile) RowGroupStarts() []int {
	if t.lazy == nil {
		return nil
	}
	md := t.lazy.md
	starts := make([]int, md.NumRowGroups())
	row := 0
	for rg := range starts {
		starts[rg] = row
		row += int(md.RowGroup(rg).NumRows())
	}
	return starts
}

// MetadataBytes approximates the memory of the parsed footer a tile read
// with SkipProperties keeps (0 otherwise).
func (t *Tile) MetadataBytes() int64 {
	if t.lazy == nil {
		return 0
	}
	return int64(t.lazy.md.Size()) + int64(len(t.lazy.leaves))*8
}

// PropertyBlock holds the properties of the rows of one row group of a
// tile, read by ReadProperties. It is immutable and safe for concurrent
// readers.
type PropertyBlock struct {
	row0, rows int
	cols       []column
	bytes      int64
}

// Bytes approximates the memory the block holds.
func (b *PropertyBlock) Bytes() int64 { return b.bytes }

// Row0 and Rows give the tile rows the block holds: [Row0, Row0+Rows).
func (b *PropertyBlock) Row0() int { return b.row0 }
func (b *PropertyBlock) Rows() int { return b.rows }

// VisitProperties passes tile row i's properties to v, as
// Tile.VisitProperties does. i must be one of the block's rows.
func (b *PropertyBlock) VisitProperties(i int, v PropertyVisitor) {
	visitColumns(b.cols, i-b.row0, v)
}

// Properties returns tile row i's properties, as Tile.Properties does.
func (b *PropertyBlock) Properties(i int) map[string]any {
	return columnsMap(b.cols, i-b.row0)
}

// ReadProperties reads the properties of row group rg of t from r, the
// tile's file of the size it had when t was read (a release's tiles are
// immutable). t must have been read with SkipProperties.
func (t *Tile) ReadProperties(ctx context.Context, r io.ReaderAt, rg int) (*PropertyBlock, error) {
	lp := t.lazy
	if lp == nil || rg < 0 || rg >= lp.md.NumRowGroups() {
		return nil, ErrPropertiesRead
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	md := lp.md
	row0 := 0
	for k := range rg {
		row0 += int(md.RowGroup(k).NumRows())
	}
	rows := int(md.RowGroup(rg).NumRows())
	b := &PropertyBlock{row0: row0, rows: rows, cols: make([]column, len(t.cols))}
	for c := range t.cols {
		b.cols[c].field = t.cols[c].field
	}
	if len(t.cols) == 0 || rows == 0 {
		return b, nil
	}
	// The span of the row group's property chunks, read in one piece.
	lo, hi := lp.size, int64(0)
	for _, leaf := range lp.leaves {
		cc, err := md.RowGroup(rg).ColumnChunk(leaf)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
		}
		start := cc.DataPageOffset()
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
			start = min(start, cc.DictionaryPageOffset())
		}
		end := start + cc.TotalCompressedSize()
		if start < 0 || end > lp.size || end < start {
			return nil, fmt.Errorf("%w: row group %d: column chunk outside the file", ErrInvalidTile, rg)
		}
		lo, hi = min(lo, start), max(hi, end)
	}
	buf := make([]byte, hi-lo)
	if n, err := r.ReadAt(buf, lo); n < len(buf) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		if ctxErr := contextError(err); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("%w: row group %d: %v", ErrInvalidTile, rg, err)
	}
	props := parquet.NewReaderProperties(pooledAllocator{})
	props.BufferedStreamEnabled = true
	props.BufferSize = 16 << 10
	pf, err := file.NewParquetReader(&windowReader{buf: buf, off: lo, size: lp.size}, file.WithMetadata(md), file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	defer pf.Close()
	rowGroups, rowStarts := []int{rg}, []int{0, rows}
	cr := &chunkReader{pf: pf, rowGroups: rowGroups, row0: rowStarts}
	finish := addPropertyColumns(cr, md, b.cols, lp.leaves, rowGroups, rowStarts, lp.size)
	if err := cr.runSerial(ctx); err != nil {
		return nil, err
	}
	for c := range finish {
		if err := finish[c](); err != nil {
			return nil, err
		}
		b.bytes += b.cols[c].bytes()
	}
	return b, nil
}

// windowReader serves the bytes [off, off+len(buf)) of a file of size
// bytes, for a Parquet reader given the file's metadata (it reads no
// footer).
type windowReader struct {
	buf  []byte
	off  int64
	size int64
	pos  int64
}

var errOutsideWindow = fmt.Errorf("%w: read outside the column chunks", ErrInvalidTile)

func (w *windowReader) ReadAt(p []byte, off int64) (int, error) {
	if off < w.off || off > w.off+int64(len(w.buf)) {
		return 0, errOutsideWindow
	}
	n := copy(p, w.buf[off-w.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (w *windowReader) Read(p []byte) (int, error) {
	n, err := w.ReadAt(p, w.pos)
	w.pos += int64(n)
	return n, err
}

func (w *windowReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += w.pos
	case io.SeekEnd:
		offset += w.size
	}
	if offset < 0 {
		return 0, errors.New("tiles: negative seek")
	}
	w.pos = offset
	return offset, nil
}
