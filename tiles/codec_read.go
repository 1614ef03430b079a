package tiles

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
)

// Tile is a decoded tile held in columns; row i is feature i. It owns plain
// Go memory (no Arrow buffers) and is immutable, so it is safe for concurrent
// readers.
type Tile struct {
	// IDs, Bounds and WKB hold each feature's id, bounding box and ISO WKB
	// geometry.
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
}

// column is one property column in native form.
type column struct {
	field Field
	valid []bool // nil: no nulls
	str   []string
	i64   []int64 // integers, date-time micros
	f64   []float64
	boo   []bool
	d32   []int32 // dates
}

func (c *column) value(i int) any {
	if c.valid != nil && !c.valid[i] {
		return nil
	}
	switch {
	case c.str != nil:
		return c.str[i]
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
	g, err := wkb.Unmarshal(t.WKB[i])
	if err != nil {
		return nil, fmt.Errorf("%w: feature %q: %v", ErrInvalidTile, t.IDs[i], err)
	}
	return g, nil
}

// Properties returns feature i's properties in canonical form (see
// FieldSchema), one entry per field, nulls as nil. The map is new on every
// call.
func (t *Tile) Properties(i int) map[string]any {
	m := make(map[string]any, len(t.cols))
	for c := range t.cols {
		m[t.cols[c].field.Name] = t.cols[c].value(i)
	}
	return m
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
// access (ranged reads when it is an S3 Object); reads stop when ctx is done.
func ReadTile(ctx context.Context, r io.ReaderAt, size int64) (*Tile, error) {
	return readTile(ctx, r, size, nil)
}

// ReadTileBBox decodes only the row groups whose bbox statistics intersect
// bound. Rows of those row groups are returned whole, so some may lie outside
// bound; callers filter exactly.
func ReadTileBBox(ctx context.Context, r io.ReaderAt, size int64, bound orb.Bound) (*Tile, error) {
	return readTile(ctx, r, size, &bound)
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

func readTile(ctx context.Context, r io.ReaderAt, size int64, bound *orb.Bound) (*Tile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pf, err := openParquet(r, size)
	if err != nil {
		return nil, err
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
		t.IDs, t.Bounds, t.WKB = []string{}, []orb.Bound{}, [][]byte{}
		return t, nil
	}

	mem := memory.NewGoAllocator()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: 64 << 10}, mem)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	leaves := make([]int, md.Schema.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	tbl, err := fr.ReadRowGroups(ctx, leaves, rowGroups)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if ctxErr := contextError(err); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	defer tbl.Release()
	if err := t.load(tbl); err != nil {
		return nil, err
	}
	return t, nil
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

// load copies the table's columns into t.
func (t *Tile) load(tbl arrow.Table) error {
	sc := tbl.Schema()
	colIdx := func(name string) (int, error) {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("%w: missing column %q", ErrInvalidTile, name)
		}
		return idx[0], nil
	}
	n := int(tbl.NumRows())
	t.IDs = make([]string, 0, n)
	t.Bounds = make([]orb.Bound, 0, n)
	t.WKB = make([][]byte, 0, n)

	idCol, err := colIdx(colFeatureID)
	if err != nil {
		return err
	}
	geomCol, err := colIdx(colGeometry)
	if err != nil {
		return err
	}
	bboxCol, err := colIdx(colBBox)
	if err != nil {
		return err
	}

	// Strings and WKB are copied into one arena each: few, large allocations.
	var idBytes, wkbBytes int
	for _, ch := range tbl.Column(idCol).Data().Chunks() {
		a, ok := ch.(*array.String)
		if !ok {
			return fmt.Errorf("%w: feature_id is %s, want utf8", ErrInvalidTile, ch.DataType())
		}
		idBytes += len(a.ValueBytes())
	}
	for _, ch := range tbl.Column(geomCol).Data().Chunks() {
		a, ok := ch.(*array.Binary)
		if !ok {
			return fmt.Errorf("%w: geometry is %s, want binary", ErrInvalidTile, ch.DataType())
		}
		wkbBytes += len(a.ValueBytes())
	}
	idArena := make([]byte, 0, idBytes)
	wkbArena := make([]byte, 0, wkbBytes)
	for _, ch := range tbl.Column(idCol).Data().Chunks() {
		a := ch.(*array.String)
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				return fmt.Errorf("%w: null feature_id", ErrInvalidTile)
			}
			start := len(idArena)
			idArena = append(idArena, a.Value(i)...)
			s := idArena[start:len(idArena):len(idArena)]
			t.IDs = append(t.IDs, unsafe.String(unsafe.SliceData(s), len(s)))
		}
	}
	for _, ch := range tbl.Column(geomCol).Data().Chunks() {
		a := ch.(*array.Binary)
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				return fmt.Errorf("%w: null geometry", ErrInvalidTile)
			}
			start := len(wkbArena)
			wkbArena = append(wkbArena, a.Value(i)...)
			t.WKB = append(t.WKB, wkbArena[start:len(wkbArena):len(wkbArena)])
		}
	}
	for _, ch := range tbl.Column(bboxCol).Data().Chunks() {
		s, ok := ch.(*array.Struct)
		if !ok || s.NumField() != 4 {
			return fmt.Errorf("%w: bbox is %s, want struct of four float64", ErrInvalidTile, ch.DataType())
		}
		var parts [4]*array.Float64
		for k := range parts {
			if parts[k], ok = s.Field(k).(*array.Float64); !ok {
				return fmt.Errorf("%w: bbox field %d is not float64", ErrInvalidTile, k)
			}
		}
		for i := 0; i < s.Len(); i++ {
			t.Bounds = append(t.Bounds, orb.Bound{
				Min: orb.Point{parts[0].Value(i), parts[1].Value(i)},
				Max: orb.Point{parts[2].Value(i), parts[3].Value(i)},
			})
		}
	}
	if len(t.IDs) != n || len(t.WKB) != n || len(t.Bounds) != n {
		return fmt.Errorf("%w: column lengths differ", ErrInvalidTile)
	}
	t.bytes = int64(idBytes+wkbBytes) + int64(n)*(16+24+32)

	for c := range t.cols {
		col := &t.cols[c]
		idx, err := colIdx(col.field.Name)
		if err != nil {
			return err
		}
		if err := col.load(tbl.Column(idx).Data(), n); err != nil {
			return err
		}
		t.bytes += col.bytes()
	}
	return nil
}

func (c *column) bytes() int64 {
	var b int64
	b += int64(len(c.valid))
	for _, s := range c.str {
		b += 16 + int64(len(s))
	}
	b += int64(len(c.i64))*8 + int64(len(c.f64))*8 + int64(len(c.boo)) + int64(len(c.d32))*4
	return b
}

func (c *column) load(data *arrow.Chunked, n int) error {
	want := c.field.arrowType()
	if !arrow.TypeEqual(data.DataType(), want) {
		return fmt.Errorf("%w: column %q is %s, want %s", ErrInvalidTile, c.field.Name, data.DataType(), want)
	}
	if data.NullN() > 0 {
		if !c.field.Nullable {
			return fmt.Errorf("%w: column %q has nulls but is not nullable", ErrInvalidTile, c.field.Name)
		}
		c.valid = make([]bool, 0, n)
	}
	switch want.ID() {
	case arrow.STRING:
		c.str = make([]string, 0, n)
	case arrow.INT64, arrow.TIMESTAMP:
		c.i64 = make([]int64, 0, n)
	case arrow.FLOAT64:
		c.f64 = make([]float64, 0, n)
	case arrow.BOOL:
		c.boo = make([]bool, 0, n)
	case arrow.DATE32:
		c.d32 = make([]int32, 0, n)
	}
	for _, ch := range data.Chunks() {
		for i := 0; i < ch.Len(); i++ {
			if c.valid != nil {
				c.valid = append(c.valid, ch.IsValid(i))
			}
			switch a := ch.(type) {
			case *array.String:
				c.str = append(c.str, strings.Clone(a.Value(i)))
			case *array.Int64:
				c.i64 = append(c.i64, a.Value(i))
			case *array.Timestamp:
				c.i64 = append(c.i64, int64(a.Value(i)))
			case *array.Float64:
				c.f64 = append(c.f64, a.Value(i))
			case *array.Boolean:
				c.boo = append(c.boo, a.Value(i))
			case *array.Date32:
				c.d32 = append(c.d32, int32(a.Value(i)))
			}
		}
	}
	return nil
}
