package tiles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/paulmach/orb"

	"siteenv/geo"
)

// Tile is a decoded tile held in columns; row i is feature i. It owns plain
// Go memory (no Arrow buffers) and is immutable, so it is safe for concurrent
// readers.
type Tile struct {
	// IDs, Bounds and WKB hold each feature's id, bounding box and ISO WKB
	// geometry. Bounds is nil when read with ReadTileOptions.SkipBounds.
	IDs    []string
	Bounds []orb.Bound
	WKB    [][]byte
	// Schema is the layer's field schema recovered from the tile.
	Schema FieldSchema
	// RowGroupsRead and RowGroupsTotal tell how much of the file was
	// decoded (ReadTileBBox skips row groups).
	RowGroupsRead  int
	RowGroupsTotal int

	cols  []column
	bytes int64
	// lazy is set when the properties were not read (SkipProperties).
	lazy *lazyProps
}

// column is one property column in native form. Strings are held end to
// end in one buffer (no pointer per value for the collector to scan).
type column struct {
	field Field
	valid []bool   // nil: no nulls
	sdata []byte   // strings: value i is sdata[send[i-1]:send[i]]
	send  []uint32 // strings: end of each value (send[-1] is 0)
	i64   []int64  // integers, date-time micros
	f64   []float64
	boo   []bool
	d32   []int32 // dates
}

func (c *column) value(i int) any {
	if c.valid != nil && !c.valid[i] {
		return nil
	}
	switch {
	case c.send != nil:
		var start uint32
		if i > 0 {
			start = c.send[i-1]
		}
		// A copy, so results do not pin the tile.
		return string(c.sdata[start:c.send[i]])
	case c.i64 != nil:
		return c.field.present(c.i64[i])
	case c.f64 != nil:
		return c.f64[i]
	case c.boo != nil:
		return c.boo[i]
	case c.d32 != nil:
		return c.field.present(c.d32[i])
	}
	return nil
}

// Len is the number of features.
func (t *Tile) Len() int { return len(t.IDs) }

// Bytes approximates the memory the tile holds.
func (t *Tile) Bytes() int64 { return t.bytes }

// Geometry decodes feature i's geometry.
func (t *Tile) Geometry(i int) (orb.Geometry, error) {
	g, err := geo.DecodeWKB(t.WKB[i], math.MaxInt)
	if err != nil {
		return nil, fmt.Errorf("%w: feature %q: %v", ErrInvalidTile, t.IDs[i], err)
	}
	return g, nil
}

// Properties returns feature i's properties in canonical form (see
// FieldSchema), one entry per field, nulls as nil. The map is new on every
// call.
func (t *Tile) Properties(i int) map[string]any { return columnsMap(t.cols, i) }

func columnsMap(cols []column, i int) map[string]any {
	m := make(map[string]any, len(cols))
	for c := range cols {
		m[cols[c].field.Name] = cols[c].value(i)
	}
	return m
}

// PropertyVisitor receives one feature's properties from VisitProperties,
// each as the kind of value Properties would hold for it.
type PropertyVisitor interface {
	Null(name string)
	// String is a string value (dates and date-times formatted as
	// Properties gives them). v may share the tile's memory: it is valid
	// only during the call.
	String(name string, v []byte)
	Int(name string, v int64)
	Float(name string, v float64)
	Bool(name string, v bool)
}

// VisitProperties passes feature i's properties to v in schema order,
// without building a map or copying strings: for callers that measure or
// encode a feature rather than keep its properties.
func (t *Tile) VisitProperties(i int, v PropertyVisitor) { visitColumns(t.cols, i, v) }

func visitColumns(cols []column, i int, v PropertyVisitor) {
	var buf [40]byte // a date or date-time's text, formatted without a string
	for c := range cols {
		col := &cols[c]
		name := col.field.Name
		switch {
		case col.valid != nil && !col.valid[i]:
			v.Null(name)
		case col.send != nil:
			var start uint32
			if i > 0 {
				start = col.send[i-1]
			}
			v.String(name, col.sdata[start:col.send[i]:col.send[i]])
		case col.i64 != nil && col.field.Format == FormatDateTime:
			v.String(name, appendDateTime(buf[:0], col.i64[i]))
		case col.i64 != nil:
			v.Int(name, col.i64[i])
		case col.f64 != nil:
			v.Float(name, col.f64[i])
		case col.boo != nil:
			v.Bool(name, col.boo[i])
		case col.d32 != nil:
			v.String(name, appendDate(buf[:0], col.d32[i]))
		default:
			v.Null(name)
		}
	}
}

// Property returns one property of feature i in canonical form, and whether
// the field exists.
func (t *Tile) Property(i int, name string) (any, bool) {
	for c := range t.cols {
		if t.cols[c].field.Name == name {
			return t.cols[c].value(i), true
		}
	}
	return nil, false
}

// ReadTile decodes a whole tile written by WriteTile. r is read with random
// access (ranged reads when it is an S3 store.Object); reads stop when ctx is done.
// Column chunks are decoded on up to GOMAXPROCS goroutines.
func ReadTile(ctx context.Context, r io.ReaderAt, size int64) (*Tile, error) {
	return ReadTileWith(ctx, r, size, ReadTileOptions{})
}

// ReadTileBBox decodes only the row groups whose bbox statistics intersect
// bound. Rows of those row groups are returned whole, so some may lie outside
// bound; callers filter exactly.
func ReadTileBBox(ctx context.Context, r io.ReaderAt, size int64, bound orb.Bound) (*Tile, error) {
	return ReadTileWith(ctx, r, size, ReadTileOptions{Bound: &bound})
}

// ReadTileOptions tune ReadTileWith. The zero value reads what ReadTile
// does.
type ReadTileOptions struct {
	// Bound, when not nil, limits the read to the row groups whose bbox
	// statistics intersect it, as ReadTileBBox does. Default nil: all.
	Bound *orb.Bound
	// SkipBounds leaves Tile.Bounds nil and spares decoding the bbox
	// column, for callers that compute boxes from the geometry anyway.
	// Default false.
	SkipBounds bool
	// SkipProperties leaves the property columns unread: the tile holds
	// ids and geometries, and ReadProperties reads one row group's
	// properties when they are needed. Default false.
	SkipProperties bool
	// Geometry, when not nil, is called with the WKB of each row group as
	// soon as it is decoded, so that work on it overlaps the decoding of
	// the rest: row0 is the tile row of wkb[0]. Calls come from the
	// decoding goroutines, concurrently, for disjoint rows. An error fails
	// the read and is returned as is. Default nil.
	Geometry func(row0 int, wkb [][]byte) error
}

// ReadTileWith decodes a tile written by WriteTile as opt says.
func ReadTileWith(ctx context.Context, r io.ReaderAt, size int64, opt ReadTileOptions) (*Tile, error) {
	return readTile(ctx, r, size, opt)
}

// openParquet opens a Parquet file for reading.
func openParquet(r io.ReaderAt, size int64) (*file.Reader, error) {
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		if ctxErr := contextError(err); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	return pf, nil
}

// maxWholeRead is the largest tile ReadTile reads in one piece.
const maxWholeRead = 256 << 20

func readTile(ctx context.Context, r io.ReaderAt, size int64, opt ReadTileOptions) (*Tile, error) {
	bound := opt.Bound
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	props := parquet.NewReaderProperties(pooledAllocator{})
	var src parquet.ReaderAtSeeker = io.NewSectionReader(r, 0, size)
	if bound == nil && size <= maxWholeRead {
		// A whole tile is read in one request (one GET from S3, not one
		// per column chunk), into a recycled buffer; the column chunks are
		// then streamed from it through small buffers instead of being
		// copied out whole.
		buf, _ := readBuffers.get(int(size))
		defer readBuffers.put(buf)
		if err := readAll(r, buf); err != nil {
			if ctxErr := contextError(err); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
		}
		src = bytes.NewReader(buf)
		props.BufferedStreamEnabled = true
		props.BufferSize = 16 << 10 // a page header's
	}
	pf, err := file.NewParquetReader(src, file.WithReadProps(props))
	if err != nil {
		if ctxErr := contextError(err); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	defer pf.Close()
	md := pf.MetaData()
	kv := md.KeyValueMetadata()
	fsJSON := kv.FindValue(FieldSchemaMetadataKey)
	if fsJSON == nil {
		return nil, fmt.Errorf("%w: no %s metadata (not a siteenv tile)", ErrInvalidTile, FieldSchemaMetadataKey)
	}
	var schema FieldSchema
	if err := json.Unmarshal([]byte(*fsJSON), &schema); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}

	rowGroups := make([]int, 0, md.NumRowGroups())
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		if bound == nil || rowGroupIntersects(md, rg, *bound) {
			rowGroups = append(rowGroups, rg)
		}
	}
	t := &Tile{Schema: schema, RowGroupsRead: len(rowGroups), RowGroupsTotal: md.NumRowGroups()}
	t.cols = make([]column, len(schema))
	for i, f := range schema {
		t.cols[i].field = f
	}
	if len(rowGroups) == 0 {
		t.IDs, t.WKB = []string{}, [][]byte{}
		if !opt.SkipBounds {
			t.Bounds = []orb.Bound{}
		}
		return t, nil
	}

	row0 := make([]int, len(rowGroups)+1)
	for k, rg := range rowGroups {
		rows := md.RowGroup(rg).NumRows()
		if rows < 0 || int64(row0[k])+rows > math.MaxInt32 {
			return nil, fmt.Errorf("%w: row group %d has %d rows", ErrInvalidTile, rg, rows)
		}
		row0[k+1] = row0[k] + int(rows)
	}
	if err := t.read(ctx, pf, rowGroups, row0, size, opt); err != nil {
		return nil, err
	}
	return t, nil
}

// readAllSplit is the smallest read readAll splits over goroutines.
const readAllSplit = 4 << 20

// readAll fills buf from r at offset 0, in parallel pieces when buf is
// large: the read is the only part of a load that is not otherwise spread
// over the cores.
func readAll(r io.ReaderAt, buf []byte) error {
	parts := min(runtime.GOMAXPROCS(0), max(1, len(buf)/readAllSplit))
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(buf)/parts, (p+1)*len(buf)/parts
		read := func() {
			if n, err := r.ReadAt(buf[lo:hi], int64(lo)); n < hi-lo {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				errs[p] = fmt.Errorf("read %d of %d bytes at %d: %w", n, hi-lo, lo, err)
			}
		}
		if p == parts-1 {
			read()
		} else {
			wg.Go(read)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// rowGroupIntersects reports whether the bbox statistics of row group rg may
// intersect b. Missing statistics count as a match.
func rowGroupIntersects(md *metadata.FileMetaData, rg int, b orb.Bound) bool {
	rgm := md.RowGroup(rg)
	stat := func(path string, wantMin bool) (float64, bool) {
		idx := md.Schema.ColumnIndexByName(path)
		if idx < 0 {
			return 0, false
		}
		cc, err := rgm.ColumnChunk(idx)
		if err != nil {
			return 0, false
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasMinMax() {
			return 0, false
		}
		fs, ok := st.(*metadata.Float64Statistics)
		if !ok {
			return 0, false
		}
		if wantMin {
			return fs.Min(), true
		}
		return fs.Max(), true
	}
	xmin, ok1 := stat(colBBox+".xmin", true)
	ymin, ok2 := stat(colBBox+".ymin", true)
	xmax, ok3 := stat(colBBox+".xmax", false)
	ymax, ok4 := stat(colBBox+".ymax", false)
	if !(ok1 && ok2 && ok3 && ok4) {
		return true
	}
	return xmin <= b.Max[0] && xmax >= b.Min[0] && ymin <= b.Max[1] && ymax >= b.Min[1]
}

// read decodes the rows of rowGroups into t; row0 holds each row group's
// first row and, last, the row count. See column_read.go.
func (t *Tile) read(ctx context.Context, pf *file.Reader, rowGroups, row0 []int, size int64, opt ReadTileOptions) error {
	md := pf.MetaData()
	// pqarrow's schema manifest gives each column's Arrow type as an Arrow
	// reader sees it, so the type checks are those of the Arrow reader.
	man, err := pqarrow.NewSchemaManifest(md.Schema, md.KeyValueMetadata(), &pqarrow.ArrowReadProperties{})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	field := func(name string) (*pqarrow.SchemaField, error) {
		var found *pqarrow.SchemaField
		for i := range man.Fields {
			if man.Fields[i].Field.Name == name {
				if found != nil {
					return nil, fmt.Errorf("%w: duplicate column %q", ErrInvalidTile, name)
				}
				found = &man.Fields[i]
			}
		}
		if found == nil {
			return nil, fmt.Errorf("%w: missing column %q", ErrInvalidTile, name)
		}
		return found, nil
	}
	idF, err := field(colFeatureID)
	if err != nil {
		return err
	}
	geomF, err := field(colGeometry)
	if err != nil {
		return err
	}
	bboxF, err := field(colBBox)
	if err != nil {
		return err
	}
	if !arrow.TypeEqual(idF.Field.Type, arrow.BinaryTypes.String) || !idF.IsLeaf() {
		return fmt.Errorf("%w: feature_id is %s, want utf8", ErrInvalidTile, idF.Field.Type)
	}
	if !arrow.TypeEqual(geomF.Field.Type, arrow.BinaryTypes.Binary) || !geomF.IsLeaf() {
		return fmt.Errorf("%w: geometry is %s, want binary", ErrInvalidTile, geomF.Field.Type)
	}
	if bboxF.Field.Type.ID() != arrow.STRUCT || len(bboxF.Children) != 4 {
		return fmt.Errorf("%w: bbox is %s, want struct of four float64", ErrInvalidTile, bboxF.Field.Type)
	}
	for k, ch := range bboxF.Children {
		if !arrow.TypeEqual(ch.Field.Type, arrow.PrimitiveTypes.Float64) || !ch.IsLeaf() {
			return fmt.Errorf("%w: bbox field %d is not float64", ErrInvalidTile, k)
		}
	}

	n := row0[len(rowGroups)]
	cr := &chunkReader{pf: pf, rowGroups: rowGroups, row0: row0}
	// IDs and WKB are slices of a few large buffers, one per row group.
	t.IDs = make([]string, n)
	t.WKB = make([][]byte, n)
	var idBytes, wkbBytes atomic.Int64
	ids := newByteColumn(md, idF.ColIndex, rowGroups, n, size, false, fmt.Errorf("%w: null feature_id", ErrInvalidTile))
	ids.done = func(buf []byte, ends []uint32, row0 int) error {
		var prev uint32
		for i, end := range ends {
			s := buf[prev:end]
			t.IDs[row0+i] = unsafe.String(unsafe.SliceData(s), len(s))
			prev = end
		}
		idBytes.Add(int64(len(buf)))
		return nil
	}
	cr.add(md, idF.ColIndex, ids.read)
	wkbs := newByteColumn(md, geomF.ColIndex, rowGroups, n, size, false, fmt.Errorf("%w: null geometry", ErrInvalidTile))
	wkbs.done = func(buf []byte, ends []uint32, row0 int) error {
		var prev uint32
		for i, end := range ends {
			t.WKB[row0+i] = buf[prev:end:end]
			prev = end
		}
		wkbBytes.Add(int64(len(buf)))
		if opt.Geometry != nil {
			if err := opt.Geometry(row0, t.WKB[row0:row0+len(ends)]); err != nil {
				return callerError{err}
			}
		}
		return nil
	}
	cr.add(md, geomF.ColIndex, wkbs.read)
	if !opt.SkipBounds {
		t.Bounds = make([]orb.Bound, n)
		for k, ch := range bboxF.Children {
			cr.add(md, ch.ColIndex, boundsColumn(t.Bounds, k))
		}
	}
	leaves := make([]int, len(t.cols))
	for c := range t.cols {
		col := &t.cols[c]
		sf, err := field(col.field.Name)
		if err != nil {
			return err
		}
		want := col.field.arrowType()
		if !arrow.TypeEqual(sf.Field.Type, want) || !sf.IsLeaf() {
			return fmt.Errorf("%w: column %q is %s, want %s", ErrInvalidTile, col.field.Name, sf.Field.Type, want)
		}
		switch want.ID() {
		case arrow.STRING, arrow.INT64, arrow.TIMESTAMP, arrow.FLOAT64, arrow.BOOL, arrow.DATE32:
		default:
			return fmt.Errorf("%w: column %q has unsupported type %s", ErrInvalidTile, col.field.Name, want)
		}
		leaves[c] = sf.ColIndex
	}
	var finish []func() error
	if opt.SkipProperties {
		// Kept to read properties later (ReadProperties) without parsing
		// the footer again.
		t.lazy = &lazyProps{md: md, leaves: leaves, size: size}
	} else {
		finish = addPropertyColumns(cr, md, t.cols, leaves, rowGroups, row0, size)
	}

	if err := cr.run(ctx); err != nil {
		return err
	}

	t.bytes = idBytes.Load() + wkbBytes.Load() + int64(n)*(16+24) + int64(len(t.Bounds))*32
	for c := range finish {
		if err := finish[c](); err != nil {
			return err
		}
		t.bytes += t.cols[c].bytes()
	}
	return nil
}

// addPropertyColumns queues the chunks of the property columns cols (Parquet
// leaves leaves) of rowGroups and returns, per column, the function that
// stores it once read.
func addPropertyColumns(cr *chunkReader, md *metadata.FileMetaData, cols []column, leaves, rowGroups, row0 []int, size int64) []func() error {
	n := row0[len(rowGroups)]
	finish := make([]func() error, len(cols))
	for c := range cols {
		col := &cols[c]
		leaf := leaves[c]
		nullable := col.field.Nullable
		nullErr := fmt.Errorf("%w: column %q has nulls but is not nullable", ErrInvalidTile, col.field.Name)
		switch col.field.arrowType().ID() {
		case arrow.STRING:
			bc := newByteColumn(md, leaf, rowGroups, n, size, nullable, nullErr)
			cr.add(md, leaf, bc.read)
			finish[c] = func() error {
				data, starts := bc.join()
				if len(data) > math.MaxUint32 {
					return fmt.Errorf("%w: column %q too large", ErrInvalidTile, col.field.Name)
				}
				for k := range rowGroups {
					for i := row0[k]; i < row0[k+1]; i++ {
						bc.ends[i] += uint32(starts[k])
					}
				}
				col.sdata, col.send = data, bc.ends
				col.valid = validOrNil(bc.valid, bc.nullCount())
				return nil
			}
		case arrow.INT64, arrow.TIMESTAMP:
			finish[c] = addFixed(cr, md, leaf, n, nullable, nullErr, &col.i64, &col.valid)
		case arrow.FLOAT64:
			finish[c] = addFixed(cr, md, leaf, n, nullable, nullErr, &col.f64, &col.valid)
		case arrow.BOOL:
			finish[c] = addFixed(cr, md, leaf, n, nullable, nullErr, &col.boo, &col.valid)
		case arrow.DATE32:
			finish[c] = addFixed(cr, md, leaf, n, nullable, nullErr, &col.d32, &col.valid)
		}
	}
	return finish
}

// addFixed queues the chunks of a fixed-width column and returns the
// function that stores it in *dst and *valid once read.
func addFixed[T any](cr *chunkReader, md *metadata.FileMetaData, leaf, n int, nullable bool, nullErr error, dst *[]T, valid *[]bool) func() error {
	fc := newFixedColumn[T](n, len(cr.rowGroups), nullable, nullErr)
	cr.add(md, leaf, fc.read)
	return func() error {
		*dst = fc.dst
		*valid = validOrNil(fc.valid, fc.nullCount())
		return nil
	}
}

// validOrNil drops a validity slice without nulls.
func validOrNil(valid []bool, nulls int) []bool {
	if nulls == 0 {
		return nil
	}
	return valid
}

func (c *column) bytes() int64 {
	return int64(len(c.valid)) + int64(len(c.sdata)) + int64(len(c.send))*4 +
		int64(len(c.i64))*8 + int64(len(c.f64))*8 + int64(len(c.boo)) + int64(len(c.d32))*4
}
