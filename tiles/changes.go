package tiles

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/paulmach/orb"
)

// ChangeColumn names the column of a changes file that holds each feature's
// change kind (e.g. "added", "removed", "changed").
const ChangeColumn = "change"

// ChangeWriter streams features, each with a change kind, into one
// GeoParquet 1.1 file laid out like a tile (feature_id, geometry as WKB, the
// bbox covering, one typed column per schema field, the "geo" and
// "siteenv:field_schema" metadata) plus a utf8 ChangeColumn after
// feature_id. Rows keep the order they are written in (no Hilbert sort) and
// are flushed one row group at a time, so memory stays at one row group
// whatever the number of features. ReadGeoParquet reads the file back with
// the change kind as the property ChangeColumn.
type ChangeWriter struct {
	schema  FieldSchema
	opt     WriterOptions
	mem     memory.Allocator
	tileSc  *arrow.Schema // tile columns, to build each batch
	sc      *arrow.Schema // file columns
	fw      *pqarrow.FileWriter
	rows    []row
	kinds   []string
	n       int
	extent  orb.Bound
	typeSet map[string]bool
	closed  bool
}

// NewChangeWriter starts a changes file on w. schema may not have a field
// named ChangeColumn (ErrInvalidSchema).
func NewChangeWriter(w io.Writer, schema FieldSchema, opt WriterOptions) (*ChangeWriter, error) {
	opt = opt.WithDefaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if _, ok := schema.Lookup(ChangeColumn); ok {
		return nil, fmt.Errorf("%w: field %q clashes with the changes file's %q column", ErrInvalidSchema, ChangeColumn, ChangeColumn)
	}
	fsJSON, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	cw := &ChangeWriter{schema: schema, opt: opt, mem: memory.NewGoAllocator(), typeSet: map[string]bool{}}
	cw.tileSc = tileArrowSchema(schema, nil)
	fields := cw.tileSc.Fields()
	fields = append(fields[:1], append([]arrow.Field{{Name: ChangeColumn, Type: arrow.BinaryTypes.String}}, fields[1:]...)...)
	meta := arrow.NewMetadata([]string{FieldSchemaMetadataKey}, []string{string(fsJSON)})
	cw.sc = arrow.NewSchema(fields, &meta)
	props := parquet.NewWriterProperties(
		parquet.WithAllocator(cw.mem),
		parquet.WithCompression(opt.Compression.codec()),
		parquet.WithCompressionFor(colGeometry, opt.GeometryCompression.codec()),
		parquet.WithMaxRowGroupLength(int64(opt.RowGroupRows)),
		parquet.WithStats(true),
		parquet.WithStatsFor(colGeometry, false),
		parquet.WithDictionaryFor(colGeometry, false),
		parquet.WithDictionaryFor(colFeatureID, false),
		parquet.WithCreatedBy("siteenv"),
	)
	cw.fw, err = pqarrow.NewFileWriter(cw.sc, &hashingWriter{w: w, h: nopHash{}}, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(cw.mem), pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("tiles: parquet writer: %w", err)
	}
	return cw, nil
}

// Write adds one feature with its change kind. Invalid features are refused
// as WriteTile refuses them; feature ids are not checked for uniqueness
// across row groups (the caller's ids are).
func (cw *ChangeWriter) Write(change string, f Feature) error {
	if cw.closed {
		return fmt.Errorf("tiles: ChangeWriter is closed")
	}
	rs, err := prepareRows(cw.schema, []Feature{f})
	if err != nil {
		return err
	}
	r := rs[0]
	if cw.n == 0 {
		cw.extent = r.bound
	} else {
		cw.extent = cw.extent.Union(r.bound)
	}
	cw.typeSet[r.geomType] = true
	cw.n++
	cw.rows = append(cw.rows, r)
	cw.kinds = append(cw.kinds, change)
	if len(cw.rows) >= cw.opt.RowGroupRows {
		return cw.flush()
	}
	return nil
}

func (cw *ChangeWriter) flush() error {
	if len(cw.rows) == 0 {
		return nil
	}
	rec := buildRecord(cw.mem, cw.tileSc, cw.schema, cw.rows)
	defer rec.Release()
	kb := array.NewStringBuilder(cw.mem)
	defer kb.Release()
	kb.AppendValues(cw.kinds, nil)
	kinds := kb.NewArray()
	defer kinds.Release()
	cols := append([]arrow.Array{rec.Column(0), kinds}, rec.Columns()[1:]...)
	out := array.NewRecordBatch(cw.sc, cols, int64(len(cw.rows)))
	defer out.Release()
	if err := cw.fw.Write(out); err != nil {
		return fmt.Errorf("tiles: write changes: %w", err)
	}
	cw.rows, cw.kinds = cw.rows[:0], cw.kinds[:0]
	return nil
}

// Close flushes the last row group, writes the "geo" metadata (geometry
// types and bbox of every feature written; no bbox when there were none)
// and the footer, and returns the number of rows. It does not close w.
func (cw *ChangeWriter) Close() (int, error) {
	if cw.closed {
		return cw.n, nil
	}
	cw.closed = true
	if err := cw.flush(); err != nil {
		cw.fw.Close()
		return 0, err
	}
	types := make([]string, 0, len(cw.typeSet))
	for t := range cw.typeSet {
		types = append(types, t)
	}
	sort.Strings(types)
	gm := newTileGeoMetadata(types, [4]float64{cw.extent.Min[0], cw.extent.Min[1], cw.extent.Max[0], cw.extent.Max[1]})
	if cw.n == 0 {
		c := gm.Columns[colGeometry]
		c.BBox = nil
		gm.Columns[colGeometry] = c
	}
	geo, err := json.Marshal(gm)
	if err != nil {
		cw.fw.Close()
		return 0, err
	}
	if err := cw.fw.AppendKeyValueMetadata(GeoMetadataKey, string(geo)); err != nil {
		cw.fw.Close()
		return 0, fmt.Errorf("tiles: write changes: %w", err)
	}
	if err := cw.fw.Close(); err != nil {
		return 0, fmt.Errorf("tiles: write changes: %w", err)
	}
	return cw.n, nil
}

// UnionSchema is the schema holding the fields of both a and b, for
// features of either: a field in one only becomes nullable, and the
// constraints the codec ignores (enum, minimum, maximum) are dropped. A
// field typed differently in a and b is an ErrInvalidSchema.
func UnionSchema(a, b FieldSchema) (FieldSchema, error) {
	byName := map[string]Field{}
	in := map[string]int{}
	for _, s := range []FieldSchema{a, b} {
		for _, f := range s {
			f.Enum, f.Minimum, f.Maximum = nil, nil, nil
			if g, ok := byName[f.Name]; ok {
				if g.Type != f.Type || g.Format != f.Format {
					return nil, fmt.Errorf("%w: field %q is %s%s in one release and %s%s in the other", ErrInvalidSchema,
						f.Name, g.Type, fmtSuffix(g.Format), f.Type, fmtSuffix(f.Format))
				}
				f.Nullable = f.Nullable || g.Nullable
			}
			byName[f.Name] = f
			in[f.Name]++
		}
	}
	out := make(FieldSchema, 0, len(byName))
	for name, f := range byName {
		if in[name] == 1 {
			f.Nullable = true
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func fmtSuffix(format string) string {
	if format == "" {
		return ""
	}
	return " (" + format + ")"
}

// nopHash lets ChangeWriter reuse hashingWriter without hashing.
type nopHash struct{}

func (nopHash) Write(p []byte) (int, error) { return len(p), nil }
func (nopHash) Sum(b []byte) []byte         { return b }
func (nopHash) Reset()                      {}
func (nopHash) Size() int                   { return 0 }
func (nopHash) BlockSize() int              { return 1 }
