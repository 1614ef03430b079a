// Package ingest turns source files into immutable, provenance-stamped
// releases: read, validate, reproject, tile, write, publish.
package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/tiles"
)

// LayerDef is layer.json: the Layer resource's own fields plus the
// jurisdictions it covers and its coverage polygon.
type LayerDef struct {
	LayerID       string                     `json:"layer_id"`
	SectionKey    string                     `json:"section_key"`
	SectionName   string                     `json:"section_name,omitempty"`
	Name          string                     `json:"name"`
	Description   *string                    `json:"description"`
	SchemaVersion string                     `json:"schema_version"`
	FieldSchema   map[string]json.RawMessage `json:"field_schema"`
	Units         map[string]*string         `json:"units"`
	RadiusMaxM    float64                    `json:"radius_max_m"`
	// DetailDistanceM is the distance within which a report prints the
	// layer's records as full record cards (beyond it: appendix rows);
	// absent, the report uses its theme's default (500 m contamination and
	// water, 250 m otherwise). Positive, at most radius_max_m.
	DetailDistanceM *float64       `json:"detail_distance_m,omitempty"`
	Sources         []tiles.Source `json:"sources"`
	// Jurisdictions: ACT, NSW, NT, QLD, SA, TAS, VIC, WA or AUS.
	Jurisdictions []string `json:"jurisdictions"`
	// Coverage is a Polygon/MultiPolygon in CRS84, or null for unknown.
	Coverage *geojson.Geometry `json:"coverage"`
	// GeometryTypes allowed in the source (default: all six GeoJSON types).
	GeometryTypes []string `json:"geometry_types,omitempty"`
	// FieldMap renames source columns to fields of field_schema
	// (source name -> field name), applied before the schema check.
	FieldMap map[string]string `json:"field_map,omitempty"`
	// UnknownFields says what to do with a source column that is not a
	// field of field_schema: "reject" the row (default), "drop" the
	// column, or "keep" it as a nullable string field of the release
	// under its own name (the ingest summary lists the columns dropped or
	// kept).
	UnknownFields string `json:"unknown_fields,omitempty"`

	// Schema is FieldSchema parsed; set by ParseLayerDef.
	Schema tiles.FieldSchema `json:"-"`
}

var (
	layerIDRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{0,159}$`)
	sectionKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)
	// Jurisdictions a layer may name.
	Jurisdictions = []string{"ACT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA", "AUS"}
	// GeometryTypes a layer may hold.
	GeometryTypes = []string{"Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon"}
)

// LayerError lists everything wrong with a layer.json.
type LayerError struct{ Problems []string }

func (e *LayerError) Error() string {
	return "layer definition: " + strings.Join(e.Problems, "; ")
}

// ReadLayerDef reads and validates a layer.json file.
func ReadLayerDef(path string) (*LayerDef, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseLayerDef(b)
}

// ParseLayerDef parses and validates layer.json bytes. Unknown fields are
// refused so a misspelt provenance field is never silently dropped.
func ParseLayerDef(b []byte) (*LayerDef, error) {
	var d LayerDef
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, &LayerError{Problems: []string{"not a valid layer.json: " + err.Error()}}
	}
	// Presence of members that may legitimately be null (decoding null into
	// a *json.RawMessage leaves it nil, so look at the keys).
	var members map[string]json.RawMessage
	_ = json.Unmarshal(b, &members)
	present := func(k string) *json.RawMessage {
		if v, ok := members[k]; ok {
			return &v
		}
		return nil
	}
	req := struct {
		Description, Coverage, FieldSchema, Units, RadiusMaxM, Jurisdictions *json.RawMessage
	}{present("description"), present("coverage"), present("field_schema"), present("units"), present("radius_max_m"), present("jurisdictions")}
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if !layerIDRE.MatchString(d.LayerID) {
		add("layer_id must match ^[a-z0-9][a-z0-9._:-]*$ (1..160 characters)")
	}
	if !sectionKeyRE.MatchString(d.SectionKey) {
		add("section_key must match ^[a-z0-9][a-z0-9_-]*$ (1..100 characters)")
	}
	if strings.TrimSpace(d.Name) == "" {
		add("name is required")
	}
	if strings.TrimSpace(d.SchemaVersion) == "" {
		add("schema_version is required")
	}
	if req.FieldSchema == nil {
		add("field_schema is required (an object, possibly empty)")
	} else if s, err := tiles.ParseFieldSchema(d.FieldSchema); err != nil {
		add("field_schema: %v", err)
	} else {
		d.Schema = s
	}
	if req.Units == nil {
		add("units is required (an object, possibly empty)")
	}
	for name := range d.Units {
		if _, ok := d.FieldSchema[name]; !ok {
			add("units names %q, which is not in field_schema", name)
		}
	}
	if req.RadiusMaxM == nil || d.RadiusMaxM < 0 || d.RadiusMaxM > 10000 {
		add("radius_max_m is required, 0..10000")
	}
	if v := d.DetailDistanceM; v != nil && (!(*v > 0) || *v > d.RadiusMaxM) {
		add("detail_distance_m must be positive and at most radius_max_m (%g), not %g", d.RadiusMaxM, *v)
	}
	if len(d.Sources) == 0 {
		add("sources needs at least one source")
	}
	for i, s := range d.Sources {
		for field, v := range map[string]string{"source_variant_id": s.SourceVariantID, "provider": s.Provider, "licence": s.Licence, "attribution": s.Attribution} {
			if strings.TrimSpace(v) == "" {
				add("sources[%d].%s is required", i, field)
			}
		}
	}
	if req.Jurisdictions == nil || len(d.Jurisdictions) == 0 {
		add("jurisdictions is required (e.g. [\"NSW\"] or [\"AUS\"])")
	}
	for _, j := range d.Jurisdictions {
		if !slices.Contains(Jurisdictions, j) {
			add("jurisdiction %q is not one of %s", j, strings.Join(Jurisdictions, ", "))
		}
	}
	if req.Coverage == nil {
		add("coverage is required (a Polygon or MultiPolygon in CRS84, or null for unknown)")
	} else if d.Coverage != nil {
		switch d.Coverage.Geometry().(type) {
		case orb.Polygon, orb.MultiPolygon:
		default:
			add("coverage must be a Polygon or MultiPolygon (or null)")
		}
	}
	for _, gt := range d.GeometryTypes {
		if !slices.Contains(GeometryTypes, gt) {
			add("geometry_types: %q is not a GeoJSON geometry type", gt)
		}
	}
	if len(d.GeometryTypes) == 0 {
		d.GeometryTypes = GeometryTypes
	}
	for from, to := range d.FieldMap {
		if _, ok := d.FieldSchema[to]; !ok {
			add("field_map maps %q to %q, which is not in field_schema", from, to)
		}
	}
	switch d.UnknownFields {
	case "", UnknownFieldsReject, UnknownFieldsDrop, UnknownFieldsKeep:
	default:
		add("unknown_fields must be %q, %q or %q", UnknownFieldsReject, UnknownFieldsDrop, UnknownFieldsKeep)
	}
	if len(p) > 0 {
		return nil, &LayerError{Problems: p}
	}
	return &d, nil
}
