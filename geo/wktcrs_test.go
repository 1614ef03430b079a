package geo

import (
	"bufio"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCRSFromWKT identifies every source CRS from the WKT GDAL writes for
// it (ESRI .prj, WKT1, WKT2), with and without its EPSG authority codes,
// and refuses CRSs outside the list.
func TestCRSFromWKT(t *testing.T) {
	f, err := os.Open("testdata/wkt_gdal.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := regexp.MustCompile(`,(AUTHORITY|ID)\["EPSG",[^\]]*\]`)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		parts := strings.SplitN(line, "|", 3)
		code, _ := strconv.Atoi(parts[0])
		flavour, wkt := parts[1], parts[2]
		n++
		for _, variant := range []string{"as written", "without EPSG codes"} {
			w := wkt
			if variant != "as written" {
				w = ids.ReplaceAllString(wkt, "")
			}
			c, err := CRSFromWKT(w)
			if code == 0 {
				if !errors.Is(err, ErrUnsupportedCRS) {
					t.Errorf("%s %s: %.60s... = %v, %v; want unsupported", flavour, variant, w, c, err)
				}
				continue
			}
			if err != nil || c.EPSG() != code {
				t.Errorf("EPSG:%d %s %s: got %v, %v", code, flavour, variant, c, err)
			}
		}
	}
	if n < 90 {
		t.Fatalf("only %d WKT definitions", n)
	}
	for _, bad := range []string{"", "GEOGCS[", `PROJCS["x",PROJECTION["Transverse_Mercator"]]`, strings.Repeat("A[", 100), `GEOGCS["x"] tail`} {
		if _, err := CRSFromWKT(bad); !errors.Is(err, ErrUnsupportedCRS) {
			t.Errorf("CRSFromWKT(%.40q): %v", bad, err)
		}
	}
}

func FuzzCRSFromWKT(f *testing.F) {
	f.Add(`PROJCS["GDA_1994_MGA_Zone_56",GEOGCS["GCS_GDA_1994",DATUM["D_GDA_1994",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",500000.0],PARAMETER["False_Northing",10000000.0],PARAMETER["Central_Meridian",153.0],PARAMETER["Scale_Factor",0.9996],PARAMETER["Latitude_Of_Origin",0.0],UNIT["Meter",1.0]]`)
	f.Add(`GEOGCRS["GDA2020",DATUM["x"],ID["EPSG",7844]]`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := CRSFromWKT(s)
		if err == nil && !c.IsSource() {
			t.Fatalf("CRSFromWKT returned %v, not a source CRS", c)
		}
	})
}
