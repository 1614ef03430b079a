package synth

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"

	"github.com/paulmach/orb"

	"siteenv/tiles"
)

// WriteLayerFiles writes every layer to dir (created if needed) as
// <layer_id>.geojson, a GeoJSON FeatureCollection streamed to disk, with
// its definition beside it as <layer_id>.layer.json, ready for
// `siteenv ingest --layer <layer_id>.layer.json <layer_id>.geojson`.
// Layers are written in parallel (up to GOMAXPROCS at once). It returns
// layer id -> path of the .geojson file. On error, files already written
// are left in place.
func (g *Generator) WriteLayerFiles(dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths := make(map[string]string, len(g.layers))
	for _, l := range g.layers {
		paths[l.ID] = filepath.Join(dir, l.ID+".geojson")
	}
	jobs := make(chan *layerSpec)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	workers := min(runtime.GOMAXPROCS(0), len(g.layers))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range jobs {
				if err := g.writeLayer(l, dir, paths[l.ID]); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, l := range g.layers {
		jobs <- l
	}
	close(jobs)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return paths, nil
}

func (g *Generator) writeLayer(l *layerSpec, dir, path string) (err error) {
	def, err := json.MarshalIndent(g.layerDef(l), "", "  ")
	if err != nil {
		return fmt.Errorf("synth: layer %s: %w", l.ID, err)
	}
	if err := os.WriteFile(filepath.Join(dir, l.ID+".layer.json"), append(def, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return g.WriteFeatureCollection(l.ID, f)
}

// WriteFeatureCollection streams one layer as a GeoJSON FeatureCollection,
// one feature per line, properties in field name order. Coordinates and
// numbers are written in the shortest form that reads back to the same
// float64.
func (g *Generator) WriteFeatureCollection(layerID string, w io.Writer) error {
	l := g.byID[layerID]
	if l == nil {
		return fmt.Errorf("synth: unknown layer %q", layerID)
	}
	keys := make([]string, len(l.Fields))
	for i, f := range l.Fields {
		keys[i] = f.Name
	}
	sort.Strings(keys)
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.WriteString(`{"type":"FeatureCollection","features":[` + "\n"); err != nil {
		return err
	}
	var buf []byte
	first := true
	err := g.Features(layerID, func(f tiles.Feature) error {
		buf = buf[:0]
		if !first {
			buf = append(buf, ',')
		}
		first = false
		var err error
		if buf, err = appendFeature(buf, f, keys); err != nil {
			return err
		}
		buf = append(buf, '\n')
		_, err = bw.Write(buf)
		return err
	})
	if err != nil {
		return fmt.Errorf("synth: layer %s: %w", layerID, err)
	}
	if _, err := bw.WriteString("]}\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// appendFeature appends f as a GeoJSON Feature with the given property
// keys.
func appendFeature(b []byte, f tiles.Feature, keys []string) ([]byte, error) {
	b = append(b, `{"type":"Feature","id":`...)
	b = appendString(b, f.ID)
	b = append(b, `,"geometry":`...)
	b, err := appendGeometry(b, f.Geometry)
	if err != nil {
		return nil, fmt.Errorf("feature %s: %w", f.ID, err)
	}
	b = append(b, `,"properties":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		switch v := f.Properties[k].(type) {
		case nil:
			b = append(b, "null"...)
		case string:
			b = appendString(b, v)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case float64:
			b = appendFloat(b, v)
		case bool:
			b = strconv.AppendBool(b, v)
		default:
			return nil, fmt.Errorf("feature %s: property %s has type %T", f.ID, k, v)
		}
	}
	return append(b, "}}"...), nil
}

func appendGeometry(b []byte, g orb.Geometry) ([]byte, error) {
	switch g := g.(type) {
	case orb.Point:
		b = append(b, `{"type":"Point","coordinates":`...)
		b = appendPoint(b, g)
	case orb.MultiPoint:
		b = append(b, `{"type":"MultiPoint","coordinates":`...)
		b = appendPoints(b, g)
	case orb.LineString:
		b = append(b, `{"type":"LineString","coordinates":`...)
		b = appendPoints(b, g)
	case orb.MultiLineString:
		b = append(b, `{"type":"MultiLineString","coordinates":[`...)
		for i, ls := range g {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPoints(b, ls)
		}
		b = append(b, ']')
	case orb.Polygon:
		b = append(b, `{"type":"Polygon","coordinates":`...)
		b = appendPolygon(b, g)
	case orb.MultiPolygon:
		b = append(b, `{"type":"MultiPolygon","coordinates":[`...)
		for i, p := range g {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPolygon(b, p)
		}
		b = append(b, ']')
	default:
		return nil, fmt.Errorf("geometry type %T", g)
	}
	return append(b, '}'), nil
}

func appendPolygon(b []byte, p orb.Polygon) []byte {
	b = append(b, '[')
	for i, r := range p {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPoints(b, r)
	}
	return append(b, ']')
}

func appendPoints[S ~[]orb.Point](b []byte, ps S) []byte {
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPoint(b, p)
	}
	return append(b, ']')
}

func appendPoint(b []byte, p orb.Point) []byte {
	b = append(b, '[')
	b = appendFloat(b, p[0])
	b = append(b, ',')
	b = appendFloat(b, p[1])
	return append(b, ']')
}

// appendFloat writes a finite float in the shortest exact form.
func appendFloat(b []byte, v float64) []byte {
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.AppendFloat(b, v, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// appendString writes s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
