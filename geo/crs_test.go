package geo

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/paulmach/orb"
)

func TestParseCRS(t *testing.T) {
	tests := []struct {
		in        string
		want      CRS
		epsg      int
		str       string
		projected bool
		zone      int
	}{
		{"OGC:CRS84", CRS84, 4326, "OGC:CRS84", false, 0},
		{"ogc:crs84", CRS84, 4326, "OGC:CRS84", false, 0},
		{"urn:ogc:def:crs:OGC:1.3:CRS84", CRS84, 4326, "OGC:CRS84", false, 0},
		{"EPSG:4326", EPSG4326, 4326, "EPSG:4326", false, 0},
		{"epsg:4326", EPSG4326, 4326, "EPSG:4326", false, 0},
		{"urn:ogc:def:crs:EPSG::4326", EPSG4326, 4326, "EPSG:4326", false, 0},
		{"EPSG:7844", EPSG7844, 7844, "EPSG:7844", false, 0},
		{"EPSG:7847", CRS(7847), 7847, "EPSG:7847", true, 47},
		{"EPSG:7856", CRS(7856), 7856, "EPSG:7856", true, 56},
		{"EPSG:7858", CRS(7858), 7858, "EPSG:7858", true, 58},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := ParseCRS(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if c != tt.want || c.EPSG() != tt.epsg || c.String() != tt.str || c.IsProjected() != tt.projected ||
				c.IsGeographic() == tt.projected || c.Zone() != tt.zone || !c.Valid() {
				t.Errorf("ParseCRS(%q) = %d: epsg %d, %q, projected %v, zone %d", tt.in, c, c.EPSG(), c, c.IsProjected(), c.Zone())
			}
		})
	}
}

func TestParseCRSRejects(t *testing.T) {
	for _, in := range []string{
		"", "CRS84", "OGC:CRS83", "EPSG:", "EPSG:7846", "EPSG:7859", "EPSG:3857", "EPSG:28356",
		"EPSG:07856", "EPSG:+7856", "EPSG:7856 ", " EPSG:7856", "EPSG:7856.0", "EPSG:-4326",
		"EPSG::4326", "urn:ogc:def:crs:EPSG:4326", "urn:ogc:def:crs:EPSG:9.9:4326", "EPSG:99999999999999999999",
		"EPSG:1", // CRS84's internal value is not an EPSG code
	} {
		c, err := ParseCRS(in)
		var ue *UnsupportedCRSError
		if err == nil || !errors.Is(err, ErrUnsupportedCRS) || !errors.As(err, &ue) {
			t.Errorf("ParseCRS(%q) = %v, %v; want an UnsupportedCRSError", in, c, err)
		}
	}
}

func TestCRSFromEPSG(t *testing.T) {
	for _, code := range SupportedEPSG() {
		c, err := CRSFromEPSG(code)
		if err != nil || c.EPSG() != code {
			t.Errorf("CRSFromEPSG(%d) = %v, %v", code, c, err)
		}
	}
	for _, code := range []int{0, 1, -4326, 4283, 7843, 7846, 7859, 28356} {
		if _, err := CRSFromEPSG(code); !errors.Is(err, ErrUnsupportedCRS) {
			t.Errorf("CRSFromEPSG(%d): err = %v", code, err)
		}
	}
	want := []int{4326, 7844, 7847, 7848, 7849, 7850, 7851, 7852, 7853, 7854, 7855, 7856, 7857, 7858}
	if got := SupportedEPSG(); !slices.Equal(got, want) {
		t.Errorf("SupportedEPSG() = %v", got)
	}
	if _, err := MGA(46); !errors.Is(err, ErrUnsupportedCRS) {
		t.Errorf("MGA(46): %v", err)
	}
	if c, err := MGA(55); err != nil || c.EPSG() != 7855 {
		t.Errorf("MGA(55) = %v, %v", c, err)
	}
	if CRS(0).Valid() || CRS(0).String() != "CRS(0)" || CRS(0).EPSG() != 0 {
		t.Errorf("zero CRS: %v %q %d", CRS(0).Valid(), CRS(0), CRS(0).EPSG())
	}
}

func TestCRSText(t *testing.T) {
	var v struct{ CRS CRS }
	if err := json.Unmarshal([]byte(`{"CRS":"EPSG:7855"}`), &v); err != nil || v.CRS != CRS(7855) {
		t.Fatalf("unmarshal: %v %v", v.CRS, err)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"CRS":"EPSG:7855"}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"CRS":"EPSG:3857"}`), &v); !errors.Is(err, ErrUnsupportedCRS) {
		t.Fatalf("unmarshal unsupported: %v", err)
	}
	if _, err := json.Marshal(struct{ C CRS }{}); !errors.Is(err, ErrUnsupportedCRS) {
		t.Fatalf("marshal zero: %v", err)
	}
}

func TestToCRS84(t *testing.T) {
	z56 := CRS(7856)
	tests := []struct {
		name     string
		c        CRS
		x, y     float64
		lon, lat float64
		err      error
	}{
		{"crs84 identity", CRS84, 151.2, -33.8, 151.2, -33.8, nil},
		{"4326 is lon,lat", EPSG4326, 151.2, -33.8, 151.2, -33.8, nil},
		{"7844 is lon,lat", EPSG7844, 151.2, -33.8, 151.2, -33.8, nil},
		{"latitude out of range", CRS84, 151.2, -95, 0, 0, ErrOutOfDomain},
		{"longitude out of range", EPSG7844, 181, 0, 0, 0, ErrOutOfDomain},
		{"NaN", CRS84, math.NaN(), 0, 0, 0, ErrOutOfDomain},
		{"MGA 56", z56, 334475.546767, 6252780.548820, 151.2108, -33.8523, nil},
		{"MGA Inf", z56, math.Inf(1), 6252780, 0, 0, ErrOutOfDomain},
		{"MGA far east", z56, 5e7, 6252780, 0, 0, ErrOutOfDomain},
		{"invalid crs", CRS(3111), 0, 0, 0, 0, ErrUnsupportedCRS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lon, lat, err := ToCRS84(tt.c, tt.x, tt.y)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || math.Abs(lon-tt.lon) > 1e-9 || math.Abs(lat-tt.lat) > 1e-9 {
				t.Fatalf("ToCRS84 = %v, %v, %v; want %v, %v", lon, lat, err, tt.lon, tt.lat)
			}
			x, y, err := FromCRS84(tt.c, lon, lat)
			if err != nil || math.Abs(x-tt.x) > 1e-6 || math.Abs(y-tt.y) > 1e-6 {
				t.Fatalf("FromCRS84 = %v, %v, %v; want %v, %v", x, y, err, tt.x, tt.y)
			}
		})
	}
	var de *DomainError
	if _, _, err := FromCRS84(z56, 100, -30); !errors.As(err, &de) || !errors.Is(err, ErrOutOfDomain) {
		t.Errorf("FromCRS84 53 degrees off the meridian: %v", err)
	}
}

func TestReprojectToCRS84(t *testing.T) {
	z56 := CRS(7856)
	e, n := 334475.546767, 6252780.548820
	want := orb.Point{151.2108, -33.8523}
	p := orb.Point{e, n}
	ring := func() orb.Ring { return orb.Ring{{e, n}, {e + 100, n}, {e + 100, n + 100}, {e, n}} }
	geoms := []orb.Geometry{
		p,
		orb.MultiPoint{p, p},
		orb.LineString{p, p},
		orb.MultiLineString{{p, p}},
		ring(),
		orb.Polygon{ring(), ring()},
		orb.MultiPolygon{{ring()}, {ring()}},
		orb.Collection{p, orb.Polygon{ring()}, orb.Collection{orb.LineString{p}}},
	}
	for _, g := range geoms {
		out, err := ReprojectToCRS84(z56, g)
		if err != nil {
			t.Fatalf("%T: %v", g, err)
		}
		if out.GeoJSONType() != g.GeoJSONType() {
			t.Fatalf("%T became %T", g, out)
		}
		first := firstPoint(out)
		if Distance(first, want) > 1e-3 {
			t.Errorf("%T: first point %v, want %v", g, first, want)
		}
	}
	// In place: the input slices are rewritten.
	ls := orb.LineString{p, {e + 10, n}}
	if _, err := ReprojectToCRS84(z56, ls); err != nil || Distance(ls[0], want) > 1e-3 {
		t.Errorf("not in place: %v %v", ls, err)
	}
	// A Bound becomes the envelope of its outline.
	out, err := ReprojectToCRS84(z56, orb.Bound{Min: p, Max: orb.Point{e + 1000, n + 1000}})
	if err != nil {
		t.Fatal(err)
	}
	b := out.(orb.Bound)
	for _, c := range []orb.Point{p, {e + 1000, n}, {e + 1000, n + 1000}, {e, n + 1000}} {
		lon, lat, _ := ToCRS84(z56, c[0], c[1])
		if !b.Contains(orb.Point{lon, lat}) {
			t.Errorf("bound %v misses corner %v", b, c)
		}
	}
	if math.Abs(b.Min[0]-want[0]) > 1e-8 || math.Abs(b.Max[1]-b.Min[1]) > 1100.0/111e3 {
		t.Errorf("bound = %v", b)
	}
	// Geographic input is returned untouched.
	g := orb.Point{200, 100}
	if out, err := ReprojectToCRS84(EPSG4326, g); err != nil || out != g {
		t.Errorf("geographic: %v %v", out, err)
	}
	if out, err := ReprojectToCRS84(z56, nil); err != nil || out != nil {
		t.Errorf("nil: %v %v", out, err)
	}
	if _, err := ReprojectToCRS84(z56, orb.MultiPoint{p, {math.NaN(), 0}}); !errors.Is(err, ErrOutOfDomain) {
		t.Errorf("NaN: %v", err)
	}
	if _, err := ReprojectToCRS84(CRS(0), p); !errors.Is(err, ErrUnsupportedCRS) {
		t.Errorf("zero CRS: %v", err)
	}
	for _, g := range orb.AllGeometries {
		if _, err := ReprojectToCRS84(z56, g); err != nil && !errors.Is(err, ErrOutOfDomain) {
			t.Errorf("%T: %v", g, err)
		}
	}
}

func firstPoint(g orb.Geometry) orb.Point {
	switch g := g.(type) {
	case orb.Point:
		return g
	case orb.MultiPoint:
		return g[0]
	case orb.LineString:
		return g[0]
	case orb.Ring:
		return g[0]
	case orb.MultiLineString:
		return g[0][0]
	case orb.Polygon:
		return g[0][0]
	case orb.MultiPolygon:
		return g[0][0][0]
	case orb.Collection:
		return firstPoint(g[0])
	}
	return orb.Point{math.NaN(), math.NaN()}
}

func FuzzParseCRS(f *testing.F) {
	for _, s := range []string{"OGC:CRS84", "EPSG:7856", "urn:ogc:def:crs:EPSG::4326", "EPSG:0", "epsg:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCRS(s)
		if err != nil {
			if !errors.Is(err, ErrUnsupportedCRS) {
				t.Fatalf("ParseCRS(%q): %v", s, err)
			}
			return
		}
		if !c.Valid() {
			t.Fatalf("ParseCRS(%q) = invalid %d", s, c)
		}
		back, err := ParseCRS(c.String())
		if err != nil || back != c {
			t.Fatalf("ParseCRS(String()) = %v, %v", back, err)
		}
	})
}

func BenchmarkToCRS84(b *testing.B) {
	b.ReportAllocs()
	c := CRS(7856)
	for i := 0; b.Loop(); i++ {
		if _, _, err := ToCRS84(c, 334475+float64(i%1000), 6252780); err != nil {
			b.Fatal(err)
		}
	}
}
