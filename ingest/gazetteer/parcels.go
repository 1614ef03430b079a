package gazetteer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/geo"
)

// Limits on parcel input.
const (
	// MaxParcelLine is the longest parcels line accepted, in bytes.
	MaxParcelLine = 16 << 20
	// MaxParcelVertices is the most positions a parcel geometry may have.
	MaxParcelVertices = 100_000
	maxCadastreIDLen  = 100
)

// ReadParcels reads a newline-delimited GeoJSON parcels file and calls yield
// for each parcel with its 1-based line number. Blank lines are skipped.
// Each line must be one GeoJSON Feature whose geometry is a valid Polygon or
// MultiPolygon (geo.Validate) and whose properties are exactly jurisdiction
// (one of States), cadastre_id (a non-empty string) and address (a
// non-empty string or null). Foreign members of the Feature are ignored. A
// bad line stops the read with a *LineError; an error from yield is returned
// as is.
func ReadParcels(r io.Reader, yield func(line int64, p Parcel) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line int64
	var long []byte
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull || len(long) > 0 {
			long = append(long, b...)
			if len(long) > MaxParcelLine {
				return &LineError{File: "parcels", Line: line + 1, Reason: fmt.Sprintf("line is longer than %d bytes", MaxParcelLine)}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			b = long
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("parcels: %w", err)
		}
		if len(b) > 0 {
			line++
			if t := bytes.TrimSpace(b); len(t) > 0 {
				p, reason := parseParcel(t)
				if reason != "" {
					return &LineError{File: "parcels", Line: line, Reason: reason}
				}
				if yerr := yield(line, p); yerr != nil {
					return yerr
				}
			}
		}
		long = long[:0]
		if err == io.EOF {
			return nil
		}
	}
}

type rawFeature struct {
	Type       string          `json:"type"`
	Geometry   json.RawMessage `json:"geometry"`
	Properties json.RawMessage `json:"properties"`
}

func parseParcel(b []byte) (Parcel, string) {
	if !utf8.Valid(b) {
		return Parcel{}, "not valid UTF-8"
	}
	var f rawFeature
	if err := json.Unmarshal(b, &f); err != nil {
		return Parcel{}, "not a GeoJSON Feature: " + jsonReason(err)
	}
	if f.Type != "Feature" {
		return Parcel{}, `"type" must be "Feature"`
	}
	if len(f.Geometry) == 0 || string(f.Geometry) == "null" {
		return Parcel{}, "geometry is missing"
	}
	g, err := geojson.UnmarshalGeometry(f.Geometry)
	if err != nil {
		return Parcel{}, "geometry: " + jsonReason(err)
	}
	var geom orb.Geometry
	switch x := g.Geometry().(type) {
	case orb.Polygon, orb.MultiPolygon:
		geom = x
	default:
		return Parcel{}, fmt.Sprintf("geometry must be a Polygon or MultiPolygon, not %s", g.Type)
	}
	if err := geo.Validate(geom, MaxParcelVertices); err != nil {
		return Parcel{}, "geometry: " + err.Error()
	}
	p := Parcel{Geometry: geom}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(f.Properties, &props); err != nil || props == nil {
		return Parcel{}, "properties must be an object"
	}
	for k := range props {
		switch k {
		case "jurisdiction", "cadastre_id", "address":
		default:
			return Parcel{}, fmt.Sprintf("property %q is not allowed (only jurisdiction, cadastre_id, address)", k)
		}
	}
	if json.Unmarshal(props["jurisdiction"], &p.Jurisdiction) != nil || !ValidState(p.Jurisdiction) {
		return Parcel{}, fmt.Sprintf("jurisdiction must be one of %s", strings.Join(States, " "))
	}
	if json.Unmarshal(props["cadastre_id"], &p.CadastreID) != nil || strings.TrimSpace(p.CadastreID) == "" {
		return Parcel{}, "cadastre_id must be a non-empty string"
	}
	if len(p.CadastreID) > maxCadastreIDLen || p.CadastreID != strings.TrimSpace(p.CadastreID) {
		return Parcel{}, fmt.Sprintf("cadastre_id must be at most %d bytes without leading or trailing spaces", maxCadastreIDLen)
	}
	addr, ok := props["address"]
	if !ok {
		return Parcel{}, "address is required (a string or null)"
	}
	if string(addr) != "null" {
		if json.Unmarshal(addr, &p.AddressLabel) != nil || strings.TrimSpace(p.AddressLabel) == "" {
			return Parcel{}, "address must be a non-empty string or null"
		}
		if len(p.AddressLabel) > maxLabelLen {
			return Parcel{}, fmt.Sprintf("address is longer than %d bytes", maxLabelLen)
		}
	}
	return p, ""
}

func jsonReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

// WriteParcels writes the parcels produced by parcels as newline-delimited
// GeoJSON Features. Coordinates are written in the shortest form that reads
// back to the same float64. It returns the first error of parcels or of w.
func WriteParcels(w io.Writer, parcels func(yield func(Parcel) error) error) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	err := parcels(func(p Parcel) error {
		switch p.Geometry.(type) {
		case orb.Polygon, orb.MultiPolygon:
		default:
			return fmt.Errorf("parcels: %s %s: geometry must be a Polygon or MultiPolygon", p.Jurisdiction, p.CadastreID)
		}
		gj, err := geojson.NewGeometry(p.Geometry).MarshalJSON()
		if err != nil {
			return fmt.Errorf("parcels: %s %s: %w", p.Jurisdiction, p.CadastreID, err)
		}
		buf = append(buf[:0], `{"type":"Feature","geometry":`...)
		buf = append(buf, gj...)
		buf = append(buf, `,"properties":{"jurisdiction":`...)
		buf = appendJSONString(buf, p.Jurisdiction)
		buf = append(buf, `,"cadastre_id":`...)
		buf = appendJSONString(buf, p.CadastreID)
		buf = append(buf, `,"address":`...)
		if p.AddressLabel == "" {
			buf = append(buf, "null"...)
		} else {
			buf = appendJSONString(buf, p.AddressLabel)
		}
		buf = append(buf, "}}\n"...)
		_, err = bw.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
