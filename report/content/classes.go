package content

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/paulmach/orb"

	"siteenv/report"
)

// MapClasses classes a map layer's polygons as the report's maps do: when
// the release's schema has a class field (Fields.ClassField) and the layer
// drew a polygon, l.ClassNames are its classes, l.ClassField its printed
// name and l.Classes, parallel to l.Features, each feature's class (-1:
// none). props(i) reads feature i's properties; it is called only for a
// classed layer.
func MapClasses(l *report.Layer, fieldSchema, units json.RawMessage, props func(i int) map[string]any) {
	fields := NewFields(fieldSchema, units)
	field, names := fields.ClassField()
	if field == "" || !slices.ContainsFunc(l.Features, isPolygon) {
		return
	}
	l.ClassField, l.ClassNames = fields.Label(field), names
	l.Classes = make([]int, len(l.Features))
	for i := range l.Features {
		l.Classes[i] = -1
		if v, ok := props(i)[field]; ok && v != nil {
			l.Classes[i] = slices.Index(names, fmt.Sprint(v))
		}
	}
}

func isPolygon(g orb.Geometry) bool {
	switch g.(type) {
	case orb.Polygon, orb.MultiPolygon:
		return true
	}
	return false
}
