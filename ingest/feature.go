package ingest

import (
	"fmt"
	"strconv"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/internal/jsonscan"
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
	f, err := readFeature(raw, maxVertices, intern)
	return f, featureError(err)
}

func readFeature(raw []byte, maxVertices int, intern map[string]string) (parsedFeature, error) {
	var f parsedFeature
	p := &jparser{Scanner: jsonscan.Scanner{B: raw}, intern: intern}
	if p.Peek() != '{' {
		return f, &fieldError{"feature", "must be a JSON object"}
	}
	p.I++
	var typ string
	haveGeom := false
	if !p.Consume('}') {
		for {
			key, err := p.KeyRaw()
			if err != nil {
				return f, err
			}
			switch string(key) {
			case "type":
				if p.Peek() != '"' {
					return f, &fieldError{"type", `must be "Feature"`}
				}
				if typ, err = p.Str(); err != nil {
					return f, err
				}
			case "id":
				switch c := p.Peek(); {
				case c == '"':
					if f.id, err = p.Str(); err != nil {
						return f, err
					}
					f.hasID = true
				case c == '-' || (c >= '0' && c <= '9'):
					raw, err := p.NumberBytes()
					if err != nil {
						return f, err
					}
					f.id, f.hasID = string(raw), true
				case c == 'n':
					if err := p.Literal("null"); err != nil {
						return f, err
					}
				default:
					return f, &fieldError{"id", "must be a string or a number"}
				}
			case "geometry":
				haveGeom = true
				if f.geom, err = geo.ReadGeometry(&p.Scanner, geo.ReadOptions{MaxVertices: maxVertices, Source: true}); err != nil {
					return f, err
				}
			case "properties":
				if f.props, err = p.properties(); err != nil {
					return f, err
				}
			default: // bbox and foreign members
				if err := p.Skip(0); err != nil {
					return f, err
				}
			}
			if p.Consume(',') {
				continue
			}
			if p.Consume('}') {
				break
			}
			return f, p.Syntax("',' or '}'")
		}
	}
	if p.Peek() != 0 {
		return f, p.Syntax("the end of the feature")
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
