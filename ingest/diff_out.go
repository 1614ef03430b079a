package ingest

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"

	"github.com/paulmach/orb/encoding/wkt"

	"siteenv/tiles"
)

// changeSink receives the changed features of a diff, one at a time.
type changeSink interface {
	write(change string, t *tiles.Tile, i int, what string) error
	close() error
}

func newChangeSink(out io.Writer, format string, from, to *tiles.Manifest) (changeSink, error) {
	if format == ChangesGeoParquet {
		schema, err := tiles.UnionSchema(from.FieldSchema, to.FieldSchema)
		if err != nil {
			return nil, fmt.Errorf("changes as GeoParquet: %w (write CSV instead)", err)
		}
		w, err := tiles.NewChangeWriter(out, schema, tiles.WriterOptions{})
		if err != nil {
			return nil, fmt.Errorf("changes as GeoParquet: %w (write CSV instead)", err)
		}
		return geoParquetSink{w}, nil
	}
	w := csv.NewWriter(out)
	if err := w.Write([]string{"change", "feature_id", "geometry", "properties", "what_changed"}); err != nil {
		return nil, err
	}
	return csvSink{w}, nil
}

type csvSink struct{ w *csv.Writer }

func (s csvSink) write(change string, t *tiles.Tile, i int, what string) error {
	g, err := t.Geometry(i)
	if err != nil {
		return err
	}
	props, err := json.Marshal(t.Properties(i))
	if err != nil {
		return err
	}
	return s.w.Write([]string{change, t.IDs[i], wkt.MarshalString(g), string(props), what})
}

func (s csvSink) close() error {
	s.w.Flush()
	return s.w.Error()
}

type geoParquetSink struct{ w *tiles.ChangeWriter }

func (s geoParquetSink) write(change string, t *tiles.Tile, i int, _ string) error {
	g, err := t.Geometry(i)
	if err != nil {
		return err
	}
	return s.w.Write(change, tiles.Feature{ID: t.IDs[i], Geometry: g, Properties: t.Properties(i)})
}

func (s geoParquetSink) close() error {
	_, err := s.w.Close()
	return err
}
