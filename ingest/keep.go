package ingest

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"siteenv/internal/jsonscan"
	"siteenv/tiles"
)

// Keeping the columns outside the schema ("unknown_fields": "keep", or
// Options.KeepUnknownFields): each becomes a nullable string field of the
// release's field_schema under its own name, titled with it, with no unit.
// A release's schema is fixed before its rows are read (the workers encode
// rows against it), so Run first lists each input's columns: a CSV's
// header, a Shapefile's .dbf fields and a GeoPackage table's columns; for
// GeoJSON and GeoParquet, which declare no columns, a pass over the file
// that reads only property names (any feature's property is a column).

// maxKeptFields bounds the columns one release keeps: a GeoJSON file whose
// features all name other properties would otherwise make a schema of
// thousands of fields.
const maxKeptFields = 256

// unknownPolicy returns what to do with columns outside the schema this
// run: a flag overrides the layer file.
func (o Options) unknownPolicy() string {
	switch {
	case o.DropUnknownFields:
		return UnknownFieldsDrop
	case o.KeepUnknownFields:
		return UnknownFieldsKeep
	case o.Layer.UnknownFields == "":
		return UnknownFieldsReject
	}
	return o.Layer.UnknownFields
}

// keepColumns lists the inputs' columns outside the layer's schema and
// makes them string fields of the release: afterwards cfg.Layer,
// cfg.schema and cfg.fields describe the release. A column that cannot be
// a field (its name, or a clash with the schema) is a *FileError naming it.
func (cfg *config) keepColumns(ctx context.Context, inputs []input) error {
	var kept []string
	seen := map[string]bool{}
	for _, in := range inputs {
		cols, err := sourceColumns(ctx, cfg, in)
		if err != nil {
			var fe *FileError
			if errors.As(err, &fe) || errors.Is(err, context.Canceled) {
				return err
			}
			return &FileError{File: in.name, Err: err}
		}
		if err := cfg.checkMapped(cols); err != nil {
			return &FileError{File: in.name, Err: err}
		}
		for _, c := range cols {
			if seen[c] || !cfg.unknownColumn(c) {
				continue
			}
			if err := keepable(c, cfg.own, kept); err != nil {
				return &FileError{File: in.name, Err: err}
			}
			seen[c] = true
			kept = append(kept, c)
		}
	}
	return cfg.useKept(kept)
}

// useKept makes the columns kept string fields of the run's release.
func (cfg *config) useKept(kept []string) error {
	if len(kept) == 0 {
		return nil
	}
	def, err := keptLayer(cfg.Layer, kept)
	if err != nil {
		return err
	}
	cfg.Layer, cfg.schema, cfg.kept = def, def.Schema, kept
	cfg.fields.keep = make(map[string]bool, len(kept))
	for _, k := range kept {
		cfg.fields.keep[k] = true
	}
	return nil
}

// unknownColumn reports whether source column c is outside the layer's
// schema: not a field, not renamed by field_map, not the id property.
func (cfg *config) unknownColumn(c string) bool {
	if _, ok := cfg.own.Lookup(c); ok {
		return false
	}
	if _, ok := cfg.Layer.FieldMap[c]; ok {
		return false
	}
	return c != cfg.IDProperty
}

// checkMapped refuses a file holding both a column that field_map renames
// to a field and a column of that field's own name: every row would have
// the field twice.
func (cfg *config) checkMapped(cols []string) error {
	has := make(map[string]bool, len(cols))
	for _, c := range cols {
		has[c] = true
	}
	for _, c := range cols {
		if to, ok := cfg.Layer.FieldMap[c]; ok && has[to] && to != c {
			return fmt.Errorf("column %q is mapped to field %q by field_map, and the file also has a column %q", c, to, to)
		}
	}
	return nil
}

// keepable reports why column c cannot become a field beside the schema's
// fields and the columns kept before it.
func keepable(c string, own tiles.FieldSchema, kept []string) error {
	hint := "rename it to a field with field_map, add it to field_schema, or drop the unknown columns"
	if _, err := tiles.ParseFieldSchema(map[string]json.RawMessage{c: json.RawMessage(`{"type":"string"}`)}); err != nil {
		return fmt.Errorf("column %q cannot be kept as a field: a field name is a letter or _ then up to 63 letters, digits, _ or -, and not feature_id, geometry or bbox (%s)", c, hint)
	}
	for _, f := range own {
		if strings.EqualFold(f.Name, c) {
			return fmt.Errorf("column %q cannot be kept as a field: its name differs from field %q of field_schema only in case (%s)", c, f.Name, hint)
		}
	}
	for _, k := range kept {
		if strings.EqualFold(k, c) {
			return fmt.Errorf("columns %q and %q cannot both be kept as fields: their names differ only in case (%s)", k, c, hint)
		}
	}
	if len(kept) >= maxKeptFields {
		return fmt.Errorf("more than %d columns outside field_schema to keep (at %q): add the ones you need to field_schema and drop the others", maxKeptFields, c)
	}
	return nil
}

// keptLayer returns a copy of def whose field_schema also has each kept
// column as {"type": ["string", "null"], "title": name}, with a null unit.
func keptLayer(def *LayerDef, kept []string) (*LayerDef, error) {
	d := *def
	d.FieldSchema = make(map[string]json.RawMessage, len(def.FieldSchema)+len(kept))
	for k, v := range def.FieldSchema {
		d.FieldSchema[k] = v
	}
	d.Units = make(map[string]*string, len(def.Units)+len(kept))
	for k, v := range def.Units {
		d.Units[k] = v
	}
	for _, k := range kept {
		if _, dup := d.FieldSchema[k]; dup {
			return nil, fmt.Errorf("ingest: kept column %q is a field of field_schema", k)
		}
		frag, err := json.Marshal(struct {
			Type  []string `json:"type"`
			Title string   `json:"title"`
		}{[]string{"string", "null"}, k})
		if err != nil {
			return nil, err
		}
		d.FieldSchema[k] = frag
		d.Units[k] = nil
	}
	s, err := tiles.ParseFieldSchema(d.FieldSchema)
	if err != nil {
		return nil, fmt.Errorf("ingest: kept columns: %w", err)
	}
	d.Schema = s
	return &d, nil
}

// keptText is the text a kept column's value is kept as: numbers as the
// source wrote them (or in shortest decimal form), booleans true or false,
// times in RFC 3339, JSON objects and arrays as compact JSON.
func keptText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return string(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", errors.New("is not a finite number")
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case []byte:
		return "", errors.New("holds binary data, which cannot be kept as a string")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cannot be kept as a string: %v", err)
	}
	return string(b), nil
}

// sourceColumns lists the property columns one input's rows will have, in
// source order, as its reader names them (a Shapefile's or GeoPackage's
// columns matched to the schema's fields).
func sourceColumns(ctx context.Context, cfg *config, in input) ([]string, error) {
	switch in.format {
	case formatFeatureCollection, formatLines, formatSeq:
		return jsonColumns(ctx, cfg, in)
	case formatCSV:
		return csvColumns(in)
	case formatParquet:
		return parquetColumns(ctx, in)
	case formatShapefile, formatZip:
		return shapefileColumns(cfg, in)
	case formatGeoPackage:
		return gpkgPropertyColumns(ctx, cfg, in)
	}
	return nil, errors.New("unknown format")
}

// columnList collects names in order of first appearance.
type columnList struct {
	names []string
	seen  map[string]bool
}

func (l *columnList) add(name string) {
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if !l.seen[name] {
		l.seen[name] = true
		l.names = append(l.names, name)
	}
}

// jsonColumns reads the property names of every feature. Broken features
// are passed over: the ingest rejects them.
func jsonColumns(ctx context.Context, cfg *config, in input) ([]string, error) {
	file, err := os.Open(in.name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var cols columnList
	sc := newJSONScanner(file, cfg.MaxVertices, new(atomic.Int64))
	emit := func(sf scannedFeature) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sf.Err == nil && !sf.Overflow && !sf.TooBig && sf.Raw != nil {
			propertyNames(sf.Raw, cols.add)
		}
		return nil
	}
	switch in.format {
	case formatFeatureCollection:
		err = sc.featureCollection(emit, func([]byte, bool) error { return nil })
	case formatLines:
		sc.lineMode = true
		err = sc.sequence(emit)
	default:
		err = sc.sequence(emit)
	}
	return cols.names, err
}

// propertyNames calls fn with each member name of a feature's
// "properties" object, skipping the values.
func propertyNames(raw []byte, fn func(string)) {
	p := jsonscan.Scanner{B: raw}
	if !p.Consume('{') || p.Consume('}') {
		return
	}
	for {
		key, err := p.KeyRaw()
		if err != nil {
			return
		}
		if string(key) == "properties" && p.Consume('{') {
			if !p.Consume('}') {
				for {
					k, err := p.KeyRaw()
					if err != nil {
						return
					}
					fn(string(k))
					if p.Skip(0) != nil {
						return
					}
					if p.Consume(',') {
						continue
					}
					if !p.Consume('}') {
						return
					}
					break
				}
			}
		} else if p.Skip(0) != nil {
			return
		}
		if !p.Consume(',') {
			return
		}
	}
}

// csvColumns reads the header: every column but the geometry's.
func csvColumns(in input) ([]string, error) {
	file, err := os.Open(in.name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	cr := csv.NewReader(bufio.NewReader(file))
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, nil // the ingest reports an empty or unreadable file
	}
	l, err := csvGeometryLayout(header)
	if err != nil {
		return nil, err
	}
	var cols []string
	for i, h := range l.header {
		if i != l.wkt && i != l.x && i != l.y {
			cols = append(cols, h)
		}
	}
	return cols, nil
}

// parquetColumns reads every row's property names (a GeoParquet file's
// own schema is not exposed by the reader), in name order.
func parquetColumns(ctx context.Context, in input) ([]string, error) {
	file, err := os.Open(in.name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if in.size == 0 {
		return nil, nil
	}
	seen := map[string]bool{}
	err = tiles.ReadGeoParquet(ctx, file, in.size, func(feat tiles.Feature) error {
		for k := range feat.Properties {
			seen[k] = true
		}
		return nil
	})
	cols := make([]string, 0, len(seen))
	for k := range seen {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	return cols, err
}

// shapefileColumns reads the .dbf's field descriptors.
func shapefileColumns(cfg *config, in input) ([]string, error) {
	set, err := openShpSet(in)
	if err != nil {
		return nil, err
	}
	defer set.close()
	table, _, closer, err := openDBF(set, cfg.own, cfg.IDProperty)
	if err != nil {
		return nil, err
	}
	closer.Close()
	cols := make([]string, len(table.fields))
	for i, f := range table.fields {
		cols[i] = f.prop
	}
	return cols, nil
}

// gpkgPropertyColumns reads the feature table's columns.
func gpkgPropertyColumns(ctx context.Context, cfg *config, in input) ([]string, error) {
	if in.size == 0 {
		return nil, nil
	}
	db, conn, err := openGeoPackage(ctx, in.name)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	table, geomCol, err := gpkgTable(ctx, conn, cfg.Table)
	if err != nil {
		return nil, err
	}
	cols, _, err := gpkgColumns(ctx, conn, table, geomCol)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = matchField(c.name, cfg.own, cfg.IDProperty)
	}
	return out, nil
}
