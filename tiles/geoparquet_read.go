package tiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"siteenv/geo"
)

// GeoParquetInfo describes a GeoParquet file's primary geometry column.
type GeoParquetInfo struct {
	// Version is the "geo" metadata version ("" for a file without "geo"
	// metadata that follows the compatible-Parquet convention: a WKB column
	// named "geometry" in OGC:CRS84).
	Version string
	// PrimaryColumn names the geometry column features are read from.
	PrimaryColumn string
	// CRS is "AUTHORITY:CODE" of the column's crs (e.g. "OGC:CRS84",
	// "EPSG:7844"); "OGC:CRS84" when the crs is omitted (the spec's default)
	// and "" when it is explicitly null (unknown).
	CRS string
	// GeometryTypes as declared (empty: unknown).
	GeometryTypes []string
	// Rows is the number of rows in the file.
	Rows int64
}

// geoParquetLayout is what ReadGeoParquet needs to know about a file.
type geoParquetLayout struct {
	info     GeoParquetInfo
	skip     map[string]bool // top-level columns that are not properties
	ownTiles bool            // written by WriteTile: feature_id is the id
}

func inspectGeoParquet(pf *file.Reader) (geoParquetLayout, error) {
	md := pf.MetaData()
	l := geoParquetLayout{skip: map[string]bool{}}
	l.info.Rows = md.NumRows
	kv := md.KeyValueMetadata()
	if v := kv.FindValue(GeoMetadataKey); v != nil {
		var m geoMetadata
		if err := json.Unmarshal([]byte(*v), &m); err != nil {
			return l, fmt.Errorf("%w: geo metadata: %v", ErrInvalidTile, err)
		}
		if err := validateGeoMetadata(m); err != nil {
			return l, err
		}
		col := m.Columns[m.PrimaryColumn]
		if col.Encoding != "WKB" {
			return l, fmt.Errorf("%w: geometry encoding %q is not supported (only WKB)", ErrInvalidTile, col.Encoding)
		}
		l.info.Version = m.Version
		l.info.PrimaryColumn = m.PrimaryColumn
		l.info.GeometryTypes = col.GeometryTypes
		switch {
		case col.CRS == nil:
			l.info.CRS = "OGC:CRS84"
		default:
			id, err := crsID(col.CRS)
			if err != nil {
				return l, err
			}
			l.info.CRS = id
		}
		for name, c := range m.Columns {
			l.skip[name] = true
			if c.Covering != nil && c.Covering.BBox != nil {
				l.skip[c.Covering.BBox.XMin[0]] = true
			}
		}
	} else {
		l.info.PrimaryColumn = colGeometry
		l.info.CRS = "OGC:CRS84"
		l.skip[colGeometry] = true
	}
	l.ownTiles = kv.FindValue(FieldSchemaMetadataKey) != nil
	if l.ownTiles {
		l.skip[colFeatureID] = true
	}
	return l, nil
}

// InspectGeoParquet reads a GeoParquet file's metadata (footer only).
func InspectGeoParquet(ctx context.Context, r io.ReaderAt, size int64) (GeoParquetInfo, error) {
	if err := ctx.Err(); err != nil {
		return GeoParquetInfo{}, err
	}
	pf, err := openParquet(r, size)
	if err != nil {
		return GeoParquetInfo{}, err
	}
	defer pf.Close()
	l, err := inspectGeoParquet(pf)
	return l.info, err
}

// ReadGeoParquet streams the features of any GeoParquet 1.x file (or a
// compatible Parquet file with a WKB "geometry" column) to fn, in file order,
// one row group batch at a time.
//
// Geometry is decoded from the primary column's WKB (nil for a null
// geometry); every other column except geometry columns and the bbox
// covering becomes a property, converted to JSON-friendly values (integers
// as int64, floats as float64, dates as "YYYY-MM-DD", timestamps as RFC 3339
// strings, nested types as maps and slices). Feature.ID is the feature_id
// column for tiles written by WriteTile and empty otherwise; use
// InspectGeoParquet to learn the file's CRS. Coordinates are not
// transformed. An error from fn stops the stream and is returned as is.
func ReadGeoParquet(ctx context.Context, r io.ReaderAt, size int64, fn func(Feature) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	pf, err := openParquet(r, size)
	if err != nil {
		return err
	}
	defer pf.Close()
	l, err := inspectGeoParquet(pf)
	if err != nil {
		return err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.NewGoAllocator())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	sc, err := fr.Schema()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	if idx := sc.FieldIndices(l.info.PrimaryColumn); len(idx) != 1 {
		return fmt.Errorf("%w: geometry column %q not found", ErrInvalidTile, l.info.PrimaryColumn)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	defer rr.Release()

	var rowBase int64
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec := rr.RecordBatch()
		if err := emitRecord(rec, l, rowBase, fn); err != nil {
			return err
		}
		rowBase += rec.NumRows()
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if ctxErr := contextError(err); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	return nil
}

type byteValuer interface {
	arrow.Array
	Value(int) []byte
}

func emitRecord(rec arrow.RecordBatch, l geoParquetLayout, rowBase int64, fn func(Feature) error) error {
	sc := rec.Schema()
	var geom byteValuer
	var ids *array.String
	type prop struct {
		name string
		arr  arrow.Array
	}
	var props []prop
	for i, f := range sc.Fields() {
		col := rec.Column(i)
		switch {
		case f.Name == l.info.PrimaryColumn:
			g, ok := col.(byteValuer)
			if !ok {
				return fmt.Errorf("%w: geometry column %q is %s, want binary WKB", ErrInvalidTile, f.Name, f.Type)
			}
			geom = g
		case l.ownTiles && f.Name == colFeatureID:
			ids, _ = col.(*array.String)
		case l.skip[f.Name]:
		default:
			props = append(props, prop{f.Name, col})
		}
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		feat := Feature{Properties: make(map[string]any, len(props))}
		if ids != nil && ids.IsValid(i) {
			feat.ID = strings.Clone(ids.Value(i))
		}
		if geom.IsValid(i) {
			g, err := geo.DecodeWKB(geom.Value(i), math.MaxInt)
			if err != nil {
				return fmt.Errorf("%w: row %d: geometry: %v", ErrInvalidTile, rowBase+int64(i), err)
			}
			feat.Geometry = g
		}
		for _, p := range props {
			feat.Properties[p.name] = arrowValue(p.arr, i)
		}
		if err := fn(feat); err != nil {
			return err
		}
	}
	return nil
}

// arrowValue converts element i of arr to a JSON-friendly Go value.
func arrowValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.String:
		return strings.Clone(a.Value(i))
	case *array.LargeString:
		return strings.Clone(a.Value(i))
	case *array.StringView:
		return strings.Clone(a.Value(i))
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return int64(a.Value(i))
	case *array.Uint16:
		return int64(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	case *array.Uint64:
		if v := a.Value(i); v <= math.MaxInt64 {
			return int64(v)
		}
		return float64(a.Value(i))
	case *array.Float16:
		return float64(a.Value(i).Float32())
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Date32:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Date64:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Timestamp:
		typ := a.DataType().(*arrow.TimestampType)
		t := a.Value(i).ToTime(typ.Unit)
		if typ.TimeZone == "" {
			return t.Format("2006-01-02T15:04:05.999999999") // naive local time
		}
		return t.UTC().Format(time.RFC3339Nano)
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...)
	case *array.LargeBinary:
		return append([]byte(nil), a.Value(i)...)
	case *array.Dictionary:
		return arrowValue(a.Dictionary(), a.GetValueIndex(i))
	case *array.List:
		start, end := a.ValueOffsets(i)
		return listValues(a.ListValues(), start, end)
	case *array.LargeList:
		start, end := a.ValueOffsets(i)
		return listValues(a.ListValues(), start, end)
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		m := make(map[string]any, a.NumField())
		for k := 0; k < a.NumField(); k++ {
			m[st.Field(k).Name] = arrowValue(a.Field(k), i)
		}
		return m
	}
	v := arr.GetOneForMarshal(i)
	if raw, ok := v.(json.RawMessage); ok {
		var out any
		if json.Unmarshal(raw, &out) == nil {
			return out
		}
		return string(raw)
	}
	return v
}

func listValues(values arrow.Array, start, end int64) []any {
	out := make([]any, 0, end-start)
	for j := start; j < end; j++ {
		out = append(out, arrowValue(values, int(j)))
	}
	return out
}
