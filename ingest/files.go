package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"siteenv/geo"
	"siteenv/tiles"
)

type format int

const (
	formatFeatureCollection format = iota + 1
	formatLines                    // newline-delimited features
	formatSeq                      // RFC 8142 GeoJSON text sequence
	formatCSV
	formatParquet
	formatShapefile  // .shp with its .shx, .dbf (.prj, .cpg)
	formatZip        // a .zip holding one Shapefile
	formatGeoPackage // .gpkg
)

type input struct {
	name   string
	format format
	size   int64
}

// Extensions maps file extensions (lower case) to formats.
var extensions = map[string]format{
	".geojson":    formatFeatureCollection,
	".json":       formatFeatureCollection,
	".ndjson":     formatLines,
	".geojsonl":   formatLines,
	".jsonl":      formatLines,
	".geojsons":   formatSeq,
	".csv":        formatCSV,
	".parquet":    formatParquet,
	".geoparquet": formatParquet,
	".shp":        formatShapefile,
	".zip":        formatZip,
	".gpkg":       formatGeoPackage,
}

func formatOf(name string) (format, error) {
	ext := strings.ToLower(filepath.Ext(name))
	if f, ok := extensions[ext]; ok {
		return f, nil
	}
	if ext == "" {
		return 0, errors.New("no file extension: name the file .geojson, .json, .ndjson, .geojsonl, .jsonl, .geojsons, .csv, .parquet, .geoparquet, .shp, .zip (a zipped Shapefile) or .gpkg")
	}
	return 0, fmt.Errorf("unknown file extension %q: use .geojson, .json, .ndjson, .geojsonl, .jsonl, .geojsons, .csv, .parquet, .geoparquet, .shp, .zip (a zipped Shapefile) or .gpkg", ext)
}

// readFile reads one input into f.
func readFile(ctx context.Context, cfg *config, in input, f *feeder) error {
	file, err := os.Open(in.name)
	if err != nil {
		return err
	}
	defer file.Close()
	src := &source{name: in.name, base: filepath.Base(in.name), crs: cfg.crs}
	switch in.format {
	case formatFeatureCollection, formatLines, formatSeq:
		return readJSON(ctx, cfg, in, file, src, f)
	case formatCSV:
		return readCSV(ctx, cfg, file, src, f)
	case formatParquet:
		return readParquet(ctx, cfg, in, file, src, f)
	case formatShapefile, formatZip:
		return readShapefile(ctx, cfg, in, src, f)
	case formatGeoPackage:
		return readGeoPackage(ctx, cfg, in, src, f)
	}
	return fmt.Errorf("unknown format")
}

func readJSON(ctx context.Context, cfg *config, in input, file *os.File, src *source, f *feeder) error {
	sc := newJSONScanner(file, cfg.MaxVertices, f.read)
	emit := func(sf scannedFeature) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case sf.Err != nil:
			return f.add(item{src: src, row: sf.Row, kind: kindReject, reason: sf.Err.Error()})
		case sf.Overflow:
			return f.add(item{src: src, row: sf.Row, kind: kindReject, reason: tooManyPositions(cfg.MaxVertices).Error()})
		case sf.TooBig:
			return f.add(item{src: src, row: sf.Row, kind: kindReject, reason: fmt.Sprintf("feature is larger than %d MiB", maxFeatureBytes>>20)})
		}
		return f.add(item{src: src, row: sf.Row, kind: kindJSON, raw: sf.Raw})
	}
	switch in.format {
	case formatFeatureCollection:
		return sc.featureCollection(emit, func(raw []byte, after bool) error {
			// As for GeoParquet: the file's own CRS wins unless it is
			// OGC:CRS84 (GeoJSON's default), when the flag applies.
			c, err := legacyCRS(raw)
			if err != nil || c == geo.CRS84 {
				return err
			}
			if c, err = cfg.reconcileCRS("crs member", true, c); err != nil || c == src.crs {
				return err
			}
			if after {
				return fmt.Errorf("the crs member (%s) comes after the features; put it first or use --source-crs", c)
			}
			src.crs = c
			return nil
		})
	case formatLines:
		sc.lineMode = true
	}
	return sc.sequence(emit)
}

// legacyCRS reads a GeoJSON 2008 "crs" member: {"type": "name",
// "properties": {"name": "urn:ogc:def:crs:EPSG::7856"}}. null means the
// default, OGC:CRS84.
func legacyCRS(raw []byte) (geo.CRS, error) {
	var m *struct {
		Type       string `json:"type"`
		Properties struct {
			Name string `json:"name"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("crs member: %v", err)
	}
	if m == nil {
		return geo.CRS84, nil
	}
	if m.Type != "name" {
		return 0, fmt.Errorf("crs member: only named CRSs are supported (type %q)", m.Type)
	}
	c, err := geo.ParseSourceCRS(m.Properties.Name)
	if err != nil {
		return 0, fmt.Errorf("crs member: %w", err)
	}
	return c, nil
}

func readParquet(ctx context.Context, cfg *config, in input, file *os.File, src *source, f *feeder) error {
	if in.size == 0 {
		return errEmptyFile
	}
	info, err := tiles.InspectGeoParquet(ctx, file, in.size)
	if err != nil {
		return err
	}
	if info.CRS != "" && info.CRS != "OGC:CRS84" {
		c, err := geo.ParseSourceCRS(info.CRS)
		if err != nil {
			return fmt.Errorf("the file's crs: %w", err)
		}
		if c, err = cfg.reconcileCRS("GeoParquet crs", true, c); err != nil {
			return err
		}
		src.crs = c
	}
	var row int64
	err = tiles.ReadGeoParquet(ctx, file, in.size, func(feat tiles.Feature) error {
		row++
		if info.Rows > 0 && row%1024 == 0 {
			f.read.Add(in.size * 1024 / info.Rows)
		}
		if feat.Geometry == nil {
			return f.add(item{src: src, row: row, kind: kindReject, reason: badGeom("", "geometry is null").Error()})
		}
		return f.add(item{src: src, row: row, kind: kindFeature, feat: feat})
	})
	return err
}
