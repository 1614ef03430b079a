package tiles

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Parquet key/value metadata keys written into every tile.
const (
	// GeoMetadataKey holds the GeoParquet file metadata (JSON).
	GeoMetadataKey = "geo"
	// FieldSchemaMetadataKey holds the layer's field schema (JSON), so a tile
	// can be decoded without its manifest.
	FieldSchemaMetadataKey = "siteenv:field_schema"
)

// GeoParquetVersion is the GeoParquet specification version tiles follow.
const GeoParquetVersion = "1.1.0"

// Tile column names.
const (
	colFeatureID = "feature_id"
	colGeometry  = "geometry"
	colBBox      = "bbox"
)

// crs84PROJJSON is the PROJJSON definition of OGC:CRS84 (WGS 84 longitude,
// latitude), as PROJ writes it. GeoParquet readers treat a missing crs as
// this CRS; tiles spell it out for readers that do not.
const crs84PROJJSON = `{
  "$schema": "https://proj.org/schemas/v0.7/projjson.schema.json",
  "type": "GeographicCRS",
  "name": "WGS 84 (CRS84)",
  "datum_ensemble": {
    "name": "World Geodetic System 1984 ensemble",
    "members": [
      {"name": "World Geodetic System 1984 (Transit)", "id": {"authority": "EPSG", "code": 1166}},
      {"name": "World Geodetic System 1984 (G730)", "id": {"authority": "EPSG", "code": 1152}},
      {"name": "World Geodetic System 1984 (G873)", "id": {"authority": "EPSG", "code": 1153}},
      {"name": "World Geodetic System 1984 (G1150)", "id": {"authority": "EPSG", "code": 1154}},
      {"name": "World Geodetic System 1984 (G1674)", "id": {"authority": "EPSG", "code": 1155}},
      {"name": "World Geodetic System 1984 (G1762)", "id": {"authority": "EPSG", "code": 1156}},
      {"name": "World Geodetic System 1984 (G2139)", "id": {"authority": "EPSG", "code": 1309}},
      {"name": "World Geodetic System 1984 (G2296)", "id": {"authority": "EPSG", "code": 1383}}
    ],
    "ellipsoid": {"name": "WGS 84", "semi_major_axis": 6378137, "inverse_flattening": 298.257223563},
    "accuracy": "2.0",
    "id": {"authority": "EPSG", "code": 6326}
  },
  "coordinate_system": {
    "subtype": "ellipsoidal",
    "axis": [
      {"name": "Geodetic longitude", "abbreviation": "Lon", "direction": "east", "unit": "degree"},
      {"name": "Geodetic latitude", "abbreviation": "Lat", "direction": "north", "unit": "degree"}
    ]
  },
  "scope": "Not known.",
  "area": "World.",
  "bbox": {"south_latitude": -90, "west_longitude": -180, "north_latitude": 90, "east_longitude": 180},
  "id": {"authority": "OGC", "code": "CRS84"}
}`

// geoMetadata is the GeoParquet "geo" file metadata.
type geoMetadata struct {
	Version       string               `json:"version"`
	PrimaryColumn string               `json:"primary_column"`
	Columns       map[string]geoColumn `json:"columns"`
}

// geoColumn is the GeoParquet metadata of one geometry column.
type geoColumn struct {
	Encoding      string          `json:"encoding"`
	GeometryTypes []string        `json:"geometry_types"`
	CRS           json.RawMessage `json:"crs,omitempty"`
	Edges         string          `json:"edges,omitempty"`
	Orientation   string          `json:"orientation,omitempty"`
	BBox          []float64       `json:"bbox,omitempty"`
	Epoch         *float64        `json:"epoch,omitempty"`
	Covering      *geoCovering    `json:"covering,omitempty"`
}

type geoCovering struct {
	BBox *bboxCovering `json:"bbox,omitempty"`
}

// bboxCovering names the struct column and fields holding each bound, e.g.
// "xmin": ["bbox", "xmin"].
type bboxCovering struct {
	XMin []string `json:"xmin"`
	YMin []string `json:"ymin"`
	XMax []string `json:"xmax"`
	YMax []string `json:"ymax"`
}

// newTileGeoMetadata builds the metadata of a tile.
func newTileGeoMetadata(types []string, bbox [4]float64) geoMetadata {
	return geoMetadata{
		Version:       GeoParquetVersion,
		PrimaryColumn: colGeometry,
		Columns: map[string]geoColumn{
			colGeometry: {
				Encoding:      "WKB",
				GeometryTypes: types,
				CRS:           json.RawMessage(compactJSON(crs84PROJJSON)),
				BBox:          bbox[:],
				Covering: &geoCovering{BBox: &bboxCovering{
					XMin: []string{colBBox, "xmin"},
					YMin: []string{colBBox, "ymin"},
					XMax: []string{colBBox, "xmax"},
					YMax: []string{colBBox, "ymax"},
				}},
			},
		},
	}
}

func compactJSON(s string) []byte {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("tiles: bad built-in JSON: " + err.Error()) // programming error, caught by tests
	}
	b, _ := json.Marshal(v)
	return b
}

var encodingRE = regexp.MustCompile(`^(WKB|point|linestring|polygon|multipoint|multilinestring|multipolygon)$`)

var geometryTypeRE = regexp.MustCompile(`^(GeometryCollection|(Multi)?(Point|LineString|Polygon))( Z)?$`)

// validateGeoMetadata checks the constraints of the GeoParquet 1.0/1.1 JSON
// schema (format-specs/schema.json) that matter to readers; tests check the
// same documents against the official schema file.
func validateGeoMetadata(m geoMetadata) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: geo metadata: %s", ErrInvalidTile, fmt.Sprintf(format, args...))
	}
	if !strings.HasPrefix(m.Version, "1.") {
		return bad("unsupported version %q", m.Version)
	}
	if m.PrimaryColumn == "" {
		return bad("missing primary_column")
	}
	if len(m.Columns) == 0 {
		return bad("no columns")
	}
	if _, ok := m.Columns[m.PrimaryColumn]; !ok {
		return bad("primary_column %q is not in columns", m.PrimaryColumn)
	}
	for name, c := range m.Columns {
		if !encodingRE.MatchString(c.Encoding) {
			return bad("column %q: bad or missing encoding %q", name, c.Encoding)
		}
		if c.GeometryTypes == nil {
			return bad("column %q: missing geometry_types", name)
		}
		seen := map[string]bool{}
		for _, t := range c.GeometryTypes {
			if !geometryTypeRE.MatchString(t) || seen[t] {
				return bad("column %q: bad or repeated geometry type %q", name, t)
			}
			seen[t] = true
		}
		if n := len(c.BBox); n != 0 && n != 4 && n != 6 {
			return bad("column %q: bbox must have 4 or 6 numbers", name)
		}
		for _, v := range c.BBox {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("column %q: bbox is not finite", name)
			}
		}
		if c.Edges != "" && c.Edges != "planar" && c.Edges != "spherical" {
			return bad("column %q: bad edges %q", name, c.Edges)
		}
		if c.Orientation != "" && c.Orientation != "counterclockwise" {
			return bad("column %q: bad orientation %q", name, c.Orientation)
		}
		if c.Covering != nil && c.Covering.BBox != nil {
			b := c.Covering.BBox
			for _, p := range []struct {
				got  []string
				want string
			}{{b.XMin, "xmin"}, {b.YMin, "ymin"}, {b.XMax, "xmax"}, {b.YMax, "ymax"}} {
				if len(p.got) != 2 || p.got[0] == "" || p.got[1] != p.want {
					return bad("column %q: bad bbox covering for %s", name, p.want)
				}
			}
		}
	}
	return nil
}

// crsID returns "AUTHORITY:CODE" from a PROJJSON object's id, "" when the
// crs is absent or null.
func crsID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var c struct {
		ID *struct {
			Authority string `json:"authority"`
			Code      any    `json:"code"`
		} `json:"id"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.ID == nil || c.ID.Authority == "" {
		return "", fmt.Errorf("%w: crs has no id", ErrInvalidTile)
	}
	switch code := c.ID.Code.(type) {
	case string:
		return c.ID.Authority + ":" + code, nil
	case float64:
		return fmt.Sprintf("%s:%d", c.ID.Authority, int64(code)), nil
	}
	return "", fmt.Errorf("%w: crs id has no code", ErrInvalidTile)
}
