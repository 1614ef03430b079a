package ingest

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"

	"siteenv/internal/jsonscan"
	"siteenv/tiles"
)

// csvLayout maps a CSV file's columns: the geometry (a WKT column, or x and
// y columns) and the properties.
type csvLayout struct {
	header []string
	wkt    int // WKT column, or -1
	x, y   int // longitude/easting and latitude/northing columns, or -1
	props  []csvProp
}

type csvProp struct {
	col   int
	name  string
	field tiles.Field
	typed bool // field is set: convert to its type; else kept as text
}

// wktColumns and xyColumns are the recognised geometry column names
// (compared case-insensitively), in order of preference.
var (
	wktColumns = []string{"wkt", "geometry", "geom"}
	xyColumns  = [][2]string{{"longitude", "latitude"}, {"lon", "lat"}, {"lng", "lat"}, {"x", "y"}}
)

// parseCSVHeader builds the layout for header. Every column other than the
// geometry must be a field of the schema (or the id property), once
// renamed by the layer's field_map, unless the policy drops the others.
func parseCSVHeader(header []string, schema tiles.FieldSchema, idProperty string, policy *fieldPolicy) (*csvLayout, error) {
	l, err := csvGeometryLayout(header)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for i, h := range header {
		if i == l.wkt || i == l.x || i == l.y {
			continue
		}
		name := h
		if to, ok := policy.renamed(h); ok && h != idProperty {
			name = to
		}
		f, ok := schema.Lookup(name)
		switch {
		case ok:
			l.props = append(l.props, csvProp{col: i, name: name, field: f, typed: true})
		case h == idProperty:
			l.props = append(l.props, csvProp{col: i, name: h})
		case policy.dropping():
			policy.noteDropped(h)
		default:
			unknown = append(unknown, strconv.Quote(h))
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("CSV header: column %s is not a field of the layer's field_schema (map it to a field with field_map, or drop or keep the columns outside the schema: unknown_fields, --drop-unknown-fields, --keep-unknown-fields)", strings.Join(unknown, ", "))
	}
	return l, nil
}

// csvGeometryLayout trims header's names (and a byte order mark), refuses
// empty and repeated names, and finds the geometry columns.
func csvGeometryLayout(header []string) (*csvLayout, error) {
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	l := &csvLayout{header: header, wkt: -1, x: -1, y: -1}
	index := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		header[i] = h
		if h == "" {
			return nil, fmt.Errorf("CSV header: column %d has no name", i+1)
		}
		if _, dup := index[strings.ToLower(h)]; dup {
			return nil, fmt.Errorf("CSV header: column %q appears twice", h)
		}
		index[strings.ToLower(h)] = i
	}
	for _, name := range wktColumns {
		if i, ok := index[name]; ok {
			l.wkt = i
			break
		}
	}
	if l.wkt < 0 {
		for _, xy := range xyColumns {
			xi, okx := index[xy[0]]
			yi, oky := index[xy[1]]
			if okx && oky {
				l.x, l.y = xi, yi
				break
			}
		}
	}
	if l.wkt < 0 && l.x < 0 {
		return nil, errors.New("CSV header has no geometry: name a WKT column wkt, geometry or geom, or coordinate columns longitude/latitude, lon/lat, lng/lat or x/y")
	}
	return l, nil
}

// row converts one CSV record.
func (l *csvLayout) row(fields []string, maxVertices int) (orb.Geometry, map[string]any, error) {
	if len(fields) != len(l.header) {
		return nil, nil, fmt.Errorf("row has %d fields, the header has %d", len(fields), len(l.header))
	}
	var g orb.Geometry
	if l.wkt >= 0 {
		s := strings.TrimSpace(fields[l.wkt])
		if s == "" {
			return nil, nil, badGeom("", "geometry is null (empty %s column)", l.header[l.wkt])
		}
		if maxVertices > 0 && countWKTPositions(s) > maxVertices {
			return nil, nil, tooManyPositions(maxVertices)
		}
		var err error
		if g, err = wkt.Unmarshal(s); err != nil {
			return nil, nil, badGeom("", "%s is not valid WKT: %v", l.header[l.wkt], err)
		}
	} else {
		xs, ys := strings.TrimSpace(fields[l.x]), strings.TrimSpace(fields[l.y])
		if xs == "" || ys == "" {
			return nil, nil, badGeom("", "geometry is null (empty %s or %s)", l.header[l.x], l.header[l.y])
		}
		x, err := strconv.ParseFloat(xs, 64)
		if err != nil {
			return nil, nil, badGeom("coordinates", "%s %s is not a number", l.header[l.x], strconv.Quote(truncate(xs, 40)))
		}
		y, err := strconv.ParseFloat(ys, 64)
		if err != nil {
			return nil, nil, badGeom("coordinates", "%s %s is not a number", l.header[l.y], strconv.Quote(truncate(ys, 40)))
		}
		g = orb.Point{x, y}
	}
	props := make(map[string]any, len(l.props))
	for _, p := range l.props {
		props[p.name] = csvValue(fields[p.col], p)
	}
	return g, props, nil
}

// csvValue converts a cell to a value FieldSchema.Normalize understands: an
// empty cell is null; numbers become json.Number; booleans accept
// true/false, t/f and 1/0 in any case. A cell that does not convert is
// passed as text, for Normalize to reject with the field's reason.
func csvValue(cell string, p csvProp) any {
	if cell == "" {
		return nil
	}
	if !p.typed {
		return cell
	}
	switch p.field.Type {
	case tiles.TypeInteger, tiles.TypeNumber:
		t := strings.TrimSpace(cell)
		if _, err := strconv.ParseFloat(t, 64); err == nil && jsonNumberRE(t) {
			return json.Number(t)
		}
		return cell
	case tiles.TypeBoolean:
		if b, err := strconv.ParseBool(strings.TrimSpace(cell)); err == nil {
			return b
		}
		return cell
	}
	return cell
}

// jsonNumberRE reports whether s is a JSON number (strconv also takes
// "Inf", "0x1p3" and "1_000", which are not numbers here).
func jsonNumberRE(s string) bool {
	p := jsonscan.Scanner{B: []byte(s)}
	_, err := p.NumberBytes()
	return err == nil && p.I == len(s)
}

// countingReader counts bytes read, for progress.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func readCSV(ctx context.Context, cfg *config, file io.Reader, src *source, f *feeder) error {
	cr := csv.NewReader(bufio.NewReaderSize(countingReader{file, f.read}, 1<<20))
	cr.ReuseRecord = false
	cr.FieldsPerRecord = -1 // checked per row
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return errEmptyFile
	}
	if err != nil {
		return fmt.Errorf("unreadable CSV header: %w", err)
	}
	layout, err := parseCSVHeader(header, cfg.schema, cfg.IDProperty, cfg.fields)
	if err != nil {
		return err
	}
	src.csv = layout
	var row int64
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		row++
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return err
			}
			if err := f.add(item{src: src, row: row, kind: kindReject, reason: "invalid CSV: " + pe.Error()}); err != nil {
				return err
			}
			continue
		}
		if err := f.add(item{src: src, row: row, kind: kindCSV, fields: rec}); err != nil {
			return err
		}
	}
}
