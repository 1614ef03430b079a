package ingest

import (
	"fmt"
	"strconv"

	"github.com/paulmach/orb"
)

// parsedFeature is a GeoJSON Feature as read from the source.
type parsedFeature struct {
	id    string
	hasID bool
	geom  orb.Geometry
	props map[string]any
}

// parseFeature parses one GeoJSON Feature object. The geometry is decoded
// with the vertex cap; a missing or null geometry is an error, as is
// anything after the object.
func parseFeature(raw []byte, maxVertices int, intern map[string]string) (parsedFeature, error) {
	var f parsedFeature
	p := &jparser{b: raw, intern: intern}
	if p.peek() != '{' {
		return f, &fieldError{"feature", "must be a JSON object"}
	}
	p.i++
	var typ string
	haveGeom := false
	if !p.consume('}') {
		for {
			key, err := p.keyRaw()
			if err != nil {
				return f, err
			}
			switch string(key) {
			case "type":
				if p.peek() != '"' {
					return f, &fieldError{"type", `must be "Feature"`}
				}
				if typ, err = p.str(); err != nil {
					return f, err
				}
			case "id":
				switch c := p.peek(); {
				case c == '"':
					if f.id, err = p.str(); err != nil {
						return f, err
					}
					f.hasID = true
				case c == '-' || (c >= '0' && c <= '9'):
					raw, err := p.numberBytes()
					if err != nil {
						return f, err
					}
					f.id, f.hasID = string(raw), true
				case c == 'n':
					if err := p.literal("null"); err != nil {
						return f, err
					}
				default:
					return f, &fieldError{"id", "must be a string or a number"}
				}
			case "geometry":
				haveGeom = true
				if f.geom, err = decodeGeoJSONGeometry(p, maxVertices); err != nil {
					return f, err
				}
			case "properties":
				if f.props, err = p.properties(); err != nil {
					return f, err
				}
			default: // bbox and foreign members
				if err := p.skip(0); err != nil {
					return f, err
				}
			}
			if p.consume(',') {
				continue
			}
			if p.consume('}') {
				break
			}
			return f, p.syntax("',' or '}'")
		}
	}
	if p.peek() != 0 {
		return f, p.syntax("the end of the feature")
	}
	switch {
	case typ != "Feature":
		if typ == "" {
			return f, &fieldError{"type", `is missing: a feature's type must be "Feature"`}
		}
		return f, &fieldError{"type", fmt.Sprintf(`is %s, not "Feature"`, strconv.Quote(truncate(typ, 64)))}
	case !haveGeom:
		return f, badGeom("", "geometry is missing")
	case f.geom == nil:
		return f, badGeom("", "geometry is null")
	}
	if f.props == nil {
		f.props = map[string]any{}
	}
	return f, nil
}
