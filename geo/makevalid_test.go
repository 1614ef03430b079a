package geo

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"
	"github.com/paulmach/orb/planar"
)

// TestMakeValidAgainstPostGIS repairs each invalid polygon of
// testdata/makevalid_postgis.csv (made by gen_makevalid.sh with PostGIS
// ST_MakeValid) and checks the result is valid, covers exactly the probe
// points PostGIS's covers, and has its area.
func TestMakeValidAgainstPostGIS(t *testing.T) {
	f, err := os.Open("testdata/makevalid_postgis.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment, r.FieldsPerRecord = '#', -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	type ref struct {
		in     orb.Geometry
		area   float64
		pts    []orb.Point
		inside []bool
	}
	cases := map[string]*ref{}
	var order []string
	for _, row := range rows {
		c := cases[row[0]]
		if c == nil {
			c = &ref{}
			cases[row[0]] = c
			order = append(order, row[0])
		}
		switch row[1] {
		case "wkt":
			if c.in, err = wkt.Unmarshal(row[2]); err != nil {
				t.Fatalf("%s: %v", row[0], err)
			}
		case "area":
			c.area, _ = strconv.ParseFloat(row[2], 64)
		case "pt":
			x, _ := strconv.ParseFloat(row[2], 64)
			y, _ := strconv.ParseFloat(row[3], 64)
			c.pts = append(c.pts, orb.Point{x, y})
			c.inside = append(c.inside, row[4] == "1")
		}
	}
	if len(order) < 10 {
		t.Fatalf("only %d cases in the reference", len(order))
	}
	for _, name := range order {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			if Validate(c.in, 0) == nil {
				t.Fatalf("the input is valid; the case tests nothing")
			}
			got, ok := MakeValid(c.in)
			if !ok {
				t.Fatalf("MakeValid found no area")
			}
			if err := Validate(got, 0); err != nil {
				t.Fatalf("repaired geometry is invalid: %v\n%s", err, wkt.MarshalString(got))
			}
			if a := planar.Area(got); math.Abs(a-c.area) > 1e-9*math.Max(1, c.area) {
				t.Errorf("area %v, PostGIS %v\n%s", a, c.area, wkt.MarshalString(got))
			}
			bad := 0
			for i, p := range c.pts {
				if in := covers(got, p); in != c.inside[i] {
					if bad++; bad <= 5 {
						t.Errorf("probe %v: covered %v, PostGIS %v", p, in, c.inside[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d probes disagree\n%s", bad, len(c.pts), wkt.MarshalString(got))
			}
		})
	}
}

func covers(g orb.Geometry, p orb.Point) bool {
	var polys []orb.Polygon
	switch g := g.(type) {
	case orb.Polygon:
		polys = []orb.Polygon{g}
	case orb.MultiPolygon:
		polys = g
	}
	for _, pg := range polys {
		if locate(p, pg[0]) == locOutside {
			continue
		}
		inHole := false
		for _, h := range pg[1:] {
			if locate(p, h) == locInside {
				inHole = true
			}
		}
		if !inHole {
			return true
		}
	}
	return false
}

func TestMakeValidBowtieIsTwoTriangles(t *testing.T) {
	bowtie := orb.Polygon{{{0, 0}, {2, 2}, {2, 0}, {0, 2}, {0, 0}}}
	got, ok := MakeValid(bowtie)
	mp, isMulti := got.(orb.MultiPolygon)
	if !ok || !isMulti || len(mp) != 2 || len(mp[0][0]) != 4 || len(mp[1][0]) != 4 {
		t.Fatalf("got %s, want two triangles", wkt.MarshalString(got))
	}
	if _, ok := MakeValid(orb.LineString{{0, 0}, {1, 1}}); ok {
		t.Fatal("a LineString was repaired into an area")
	}
}

// FuzzMakeValid: any polygon, however broken, is repaired into a valid
// geometry or refused (ok false); MakeValid never panics and never returns
// an invalid geometry.
func FuzzMakeValid(f *testing.F) {
	f.Add([]byte{0, 0, 2, 2, 2, 0, 0, 2})
	f.Add([]byte{0, 0, 10, 0, 10, 10, 0, 10, 0, 0, 5, 5})
	f.Add([]byte{5, 0, 8, 10, 0, 4, 10, 4, 2, 10})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 6 || len(b) > 200 {
			return
		}
		// Coordinates on a small grid make crossings, touches and overlaps
		// common; a byte of 255 starts a new ring.
		var poly orb.Polygon
		var ring orb.Ring
		flush := func() {
			if len(ring) >= 3 {
				poly = append(poly, append(ring, ring[0]))
			}
			ring = nil
		}
		for i := 0; i+1 < len(b); i += 2 {
			if b[i] == 255 {
				flush()
				continue
			}
			ring = append(ring, orb.Point{150 + float64(b[i]%32)/10, -34 + float64(b[i+1]%32)/10})
		}
		flush()
		if len(poly) == 0 {
			return
		}
		got, ok := MakeValid(poly)
		if !ok {
			return
		}
		if err := Validate(got, 0); err != nil {
			t.Fatalf("MakeValid(%v) = %v: %v", poly, got, err)
		}
	})
}
