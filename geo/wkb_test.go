package geo

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
)

func TestDecodeWKB(t *testing.T) {
	geoms := []orb.Geometry{
		orb.Point{151.2, -33.8},
		orb.LineString{{1, 2}, {3, 4}},
		orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}, {{0.2, 0.1}, {0.3, 0.1}, {0.3, 0.2}, {0.2, 0.1}}},
		orb.MultiPoint{{1, 2}, {3, 4}},
		orb.MultiLineString{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}},
		orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}, {{{5, 5}, {6, 5}, {6, 6}, {5, 5}}}},
	}
	for _, g := range geoms {
		for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			b, err := wkb.Marshal(g, bo)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeWKB(b, 100)
			if err != nil || !orb.Equal(got, g) {
				t.Errorf("%s %v: got %v, %v", g.GeoJSONType(), bo, got, err)
			}
		}
	}
	// ISO Z (1002) and EWKB Z (0x80000002) linestrings: Z dropped.
	iso := []byte{1, 0xEA, 0x03, 0, 0, 2, 0, 0, 0}
	ewkb := []byte{1, 2, 0, 0, 0x80, 2, 0, 0, 0}
	for _, head := range [][]byte{iso, ewkb} {
		b := append([]byte(nil), head...)
		for _, v := range []float64{1, 2, 99, 3, 4, 99} {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		got, err := DecodeWKB(b, 100)
		if err != nil || !orb.Equal(got, orb.LineString{{1, 2}, {3, 4}}) {
			t.Errorf("Z linestring: %v, %v", got, err)
		}
	}
	bad := map[string][]byte{
		"empty":          nil,
		"bad order":      {2, 1, 0, 0, 0},
		"truncated":      {1, 1, 0, 0, 0, 0, 0},
		"collection":     {1, 7, 0, 0, 0, 0, 0, 0, 0},
		"huge count":     {1, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f},
		"trailing bytes": append(must(wkb.Marshal(orb.Point{1, 2})), 0),
		"empty point":    must(wkb.Marshal(orb.Point{math.NaN(), math.NaN()})),
	}
	for name, b := range bad {
		if _, err := DecodeWKB(b, 100); !errors.Is(err, ErrInvalidGeometry) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeWKB(must(wkb.Marshal(orb.LineString{{1, 2}, {3, 4}, {5, 6}})), 2); !errors.Is(err, ErrInvalidGeometry) {
		t.Errorf("vertex limit: %v", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func FuzzDecodeWKB(f *testing.F) {
	f.Add(must(wkb.Marshal(orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}})))
	f.Add(must(wkb.Marshal(orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}}, binary.BigEndian)))
	f.Add([]byte{1, 0xEA, 0x03, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := DecodeWKB(b, 1000)
		if err == nil && g == nil {
			t.Fatal("nil geometry without error")
		}
	})
}
