package ingest

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/tiles"
)

// shpRecords returns the record contents of a fixture .shp.
func shpRecords(tb testing.TB, name string) (int32, [][]byte) {
	b, err := os.ReadFile(filepath.Join(pubDir, "shp", name))
	if err != nil {
		tb.Fatal(err)
	}
	typ := int32(binary.LittleEndian.Uint32(b[32:]))
	var recs [][]byte
	for p := 100; p+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[p+4:])) * 2
		recs = append(recs, b[p+8:p+8+n])
		p += 8 + n
	}
	return typ, recs
}

// FuzzDecodeShape: a Shapefile record never panics, and what it decodes
// is one of the six GeoJSON types.
func FuzzDecodeShape(f *testing.F) {
	for _, name := range []string{"polygons_7844.shp", "lines_7844.shp", "points_7844.shp"} {
		typ, recs := shpRecords(f, name)
		for _, r := range recs {
			f.Add(byte(typ), r)
		}
	}
	f.Fuzz(func(t *testing.T, typ byte, b []byte) {
		g, err := decodeShape(b, int32(typ), 10_000)
		if err != nil {
			return
		}
		switch g.(type) {
		case orb.Point, orb.MultiPoint, orb.LineString, orb.MultiLineString, orb.Polygon, orb.MultiPolygon:
		default:
			t.Fatalf("decoded %T", g)
		}
	})
}

// FuzzDBF: a dBASE header and records never panic.
func FuzzDBF(f *testing.F) {
	for _, name := range []string{"polygons_7844.dbf", "points_4283.dbf", "polygons_ldid.dbf"} {
		b, err := os.ReadFile(filepath.Join(pubDir, "shp", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	schema := setupSchema(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		dec, _ := codePage("UTF-8", true, 0)
		tab, err := readDBFHeader(bytes.NewReader(b), int64(len(b)), dec, schema, "")
		if err != nil {
			return
		}
		rest := b[min(len(b), tab.headerLen):]
		for len(rest) >= tab.recordLen {
			tab.record(rest[:tab.recordLen])
			rest = rest[tab.recordLen:]
		}
	})
}

// FuzzDecodeGeoPackageGeometry: GeoPackage geometry blobs never panic.
func FuzzDecodeGeoPackageGeometry(f *testing.F) {
	hdr := []byte{'G', 'P', 0, 0x03, 0xE6, 0x10, 0, 0} // little endian, 32-byte envelope, srs 4326
	env := make([]byte, 32)
	pt := []byte{1, 1, 0, 0, 0}
	pt = binary.LittleEndian.AppendUint64(pt, math.Float64bits(151.2))
	pt = binary.LittleEndian.AppendUint64(pt, math.Float64bits(-33.8))
	f.Add(append(append(append([]byte(nil), hdr...), env...), pt...))
	f.Add(append([]byte{'G', 'P', 0, 0x01, 0xE6, 0x10, 0, 0}, pt...))
	f.Add([]byte{'G', 'P', 0, 0x11, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeGeoPackageGeometry(b, 10_000)
	})
}

func setupSchema(tb testing.TB) tiles.FieldSchema {
	def, err := ParseLayerDef([]byte(testLayerJSON))
	if err != nil {
		tb.Fatal(err)
	}
	return def.Schema
}
