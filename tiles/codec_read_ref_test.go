package tiles

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/paulmach/orb"
)

// refTile is a tile decoded by readTileArrow, the former Arrow-based
// reader, kept as the oracle for ReadTile.
type refTile struct {
	IDs    []string
	Bounds []orb.Bound
	WKB    [][]byte
	Props  []map[string]any
}

func readTileArrow(ctx context.Context, r io.ReaderAt, size int64) (*refTile, error) {
	pf, err := openParquet(r, size)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	md := pf.MetaData()
	fsJSON := md.KeyValueMetadata().FindValue(FieldSchemaMetadataKey)
	if fsJSON == nil {
		return nil, fmt.Errorf("%w: no field schema", ErrInvalidTile)
	}
	var schema FieldSchema
	if err := json.Unmarshal([]byte(*fsJSON), &schema); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.NewGoAllocator())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTile, err)
	}
	defer tbl.Release()
	sc := tbl.Schema()
	col := func(name string) (*arrow.Chunked, error) {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("%w: missing column %q", ErrInvalidTile, name)
		}
		return tbl.Column(idx[0]).Data(), nil
	}
	n := int(tbl.NumRows())
	t := &refTile{Props: make([]map[string]any, n)}
	for i := range t.Props {
		t.Props[i] = map[string]any{}
	}
	ids, err := col(colFeatureID)
	if err != nil {
		return nil, err
	}
	for _, ch := range ids.Chunks() {
		a, ok := ch.(*array.String)
		if !ok {
			return nil, fmt.Errorf("%w: feature_id type", ErrInvalidTile)
		}
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				return nil, fmt.Errorf("%w: null feature_id", ErrInvalidTile)
			}
			t.IDs = append(t.IDs, strings.Clone(a.Value(i)))
		}
	}
	geoms, err := col(colGeometry)
	if err != nil {
		return nil, err
	}
	for _, ch := range geoms.Chunks() {
		a, ok := ch.(*array.Binary)
		if !ok {
			return nil, fmt.Errorf("%w: geometry type", ErrInvalidTile)
		}
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				return nil, fmt.Errorf("%w: null geometry", ErrInvalidTile)
			}
			t.WKB = append(t.WKB, append([]byte(nil), a.Value(i)...))
		}
	}
	bbox, err := col(colBBox)
	if err != nil {
		return nil, err
	}
	for _, ch := range bbox.Chunks() {
		s, ok := ch.(*array.Struct)
		if !ok || s.NumField() != 4 {
			return nil, fmt.Errorf("%w: bbox type", ErrInvalidTile)
		}
		var parts [4]*array.Float64
		for k := range parts {
			if parts[k], ok = s.Field(k).(*array.Float64); !ok {
				return nil, fmt.Errorf("%w: bbox field type", ErrInvalidTile)
			}
		}
		for i := 0; i < s.Len(); i++ {
			t.Bounds = append(t.Bounds, orb.Bound{
				Min: orb.Point{parts[0].Value(i), parts[1].Value(i)},
				Max: orb.Point{parts[2].Value(i), parts[3].Value(i)},
			})
		}
	}
	for _, f := range schema {
		data, err := col(f.Name)
		if err != nil {
			return nil, err
		}
		if !arrow.TypeEqual(data.DataType(), f.arrowType()) {
			return nil, fmt.Errorf("%w: column %q type", ErrInvalidTile, f.Name)
		}
		if data.NullN() > 0 && !f.Nullable {
			return nil, fmt.Errorf("%w: column %q has nulls", ErrInvalidTile, f.Name)
		}
		row := 0
		for _, ch := range data.Chunks() {
			for i := 0; i < ch.Len(); i++ {
				var v any
				if ch.IsValid(i) {
					switch a := ch.(type) {
					case *array.String:
						v = a.Value(i)
					case *array.Int64:
						v = f.present(a.Value(i))
					case *array.Timestamp:
						v = f.present(int64(a.Value(i)))
					case *array.Float64:
						v = a.Value(i)
					case *array.Boolean:
						v = a.Value(i)
					case *array.Date32:
						v = f.present(int32(a.Value(i)))
					}
				}
				t.Props[row][f.Name] = v
				row++
			}
		}
	}
	return t, nil
}
