package geo

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

// mgaRef is one row of testdata/mga_cs2cs.csv (see gen_mga.sh).
type mgaRef struct {
	line     int
	inverse  bool
	zone     int
	lon, lat float64
	e, n     float64
}

func readMGARefs(t testing.TB) []mgaRef {
	t.Helper()
	f, err := os.Open("testdata/mga_cs2cs.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var refs []mgaRef
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "dir,") {
			continue
		}
		fs := strings.Split(s, ",")
		if len(fs) != 6 {
			t.Fatalf("line %d: %d fields", line, len(fs))
		}
		r := mgaRef{line: line, inverse: fs[0] == "inv"}
		if r.zone, err = strconv.Atoi(fs[1]); err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		v := make([]float64, 4)
		for i := range v {
			if v[i], err = strconv.ParseFloat(fs[2+i], 64); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
		}
		r.lon, r.lat, r.e, r.n = v[0], v[1], v[2], v[3]
		refs = append(refs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return refs
}

// TestMGAAgainstCS2CS checks forward and inverse MGA against PROJ for every
// zone 47..58: within 1 mm (the reference is rounded to 1 micrometre and
// 1e-11 degree).
func TestMGAAgainstCS2CS(t *testing.T) {
	refs := readMGARefs(t)
	zones := map[int][2]int{}
	var maxFwd, maxInv, maxInvDeg float64
	for _, r := range refs {
		c := zones[r.zone]
		if r.inverse {
			c[1]++
			lon, lat := MGAInverse(r.zone, r.e, r.n)
			d := Distance(orb.Point{lon, lat}, orb.Point{r.lon, r.lat})
			dd := math.Max(math.Abs(lon-r.lon), math.Abs(lat-r.lat))
			maxInv, maxInvDeg = math.Max(maxInv, d), math.Max(maxInvDeg, dd)
			if d > 1e-3 || dd > 1e-8 {
				t.Errorf("line %d: MGAInverse(%d, %v, %v) = %.11f, %.11f; cs2cs %.11f, %.11f (%.3g m)", r.line, r.zone, r.e, r.n, lon, lat, r.lon, r.lat, d)
			}
			// The checked conversion agrees.
			crs, _ := MGA(r.zone)
			if lon2, lat2, err := ToCRS84(crs, r.e, r.n); err != nil || lon2 != lon || lat2 != lat {
				t.Errorf("line %d: ToCRS84 = %v, %v, %v", r.line, lon2, lat2, err)
			}
		} else {
			c[0]++
			e, n := MGAForward(r.zone, r.lon, r.lat)
			d := math.Hypot(e-r.e, n-r.n)
			maxFwd = math.Max(maxFwd, d)
			if d > 1e-3 {
				t.Errorf("line %d: MGAForward(%d, %v, %v) = %.6f, %.6f; cs2cs %.6f, %.6f (%.3g m)", r.line, r.zone, r.lon, r.lat, e, n, r.e, r.n, d)
			}
		}
		zones[r.zone] = c
	}
	for z := 47; z <= 58; z++ {
		if c := zones[z]; c[0] < 100 || c[1] < 100 {
			t.Errorf("zone %d: only %d forward and %d inverse reference points", z, c[0], c[1])
		}
	}
	t.Logf("%d reference points; max error forward %.3g m, inverse %.3g m (%.3g degrees)", len(refs), maxFwd, maxInv, maxInvDeg)
}

func TestMGAKnownPoints(t *testing.T) {
	tests := []struct {
		name     string
		zone     int
		lon, lat float64
		e, n     float64 // printf '151.2108 -33.8523\n' | cs2cs -f %.6f OGC:CRS84 EPSG:7856 (PROJ 9.1.1)
	}{
		{"Sydney Harbour Bridge", 56, 151.2108, -33.8523, 334475.546767, 6252780.548820},
		{"central meridian, equator", 56, 153, 0, 500000, 10000000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, n := MGAForward(tt.zone, tt.lon, tt.lat)
			if d := math.Hypot(e-tt.e, n-tt.n); d > 1e-3 {
				t.Errorf("MGAForward = %.6f, %.6f; want %.6f, %.6f", e, n, tt.e, tt.n)
			}
			lon, lat := MGAInverse(tt.zone, tt.e, tt.n)
			if d := Distance(orb.Point{lon, lat}, orb.Point{tt.lon, tt.lat}); d > 1e-3 {
				t.Errorf("MGAInverse = %.10f, %.10f; want %v, %v", lon, lat, tt.lon, tt.lat)
			}
		})
	}
}

// TestMGARoundTrip checks inverse(forward(p)) == p to a few nanometres
// across ±10 degrees of every central meridian.
func TestMGARoundTrip(t *testing.T) {
	var worst float64
	for zone := 47; zone <= 58; zone++ {
		cm := mgaCentralMeridian(zone)
		for dl := -10.0; dl <= 10; dl += 0.75 {
			for lat := -60.0; lat <= 5; lat += 2.5 {
				lon := cm + dl
				e, n := MGAForward(zone, lon, lat)
				lon2, lat2 := MGAInverse(zone, e, n)
				d := Distance(orb.Point{lon, lat}, orb.Point{lon2, lat2})
				worst = math.Max(worst, d)
				if d > 1e-8 {
					t.Errorf("zone %d (%v, %v): round trip off by %.3g m", zone, lon, lat, d)
				}
			}
		}
	}
	t.Logf("worst round trip %.3g m", worst)
}

func TestMGAPoles(t *testing.T) {
	e, n := MGAForward(56, 153, -90)
	lon, lat := MGAInverse(56, e, n)
	if math.Abs(lat+90) > 1e-9 || math.IsNaN(lon) {
		t.Errorf("south pole round trip = %v, %v", lon, lat)
	}
}

func BenchmarkMGAForward(b *testing.B) {
	b.ReportAllocs()
	var s float64
	for i := 0; b.Loop(); i++ {
		e, n := MGAForward(56, 151.2+float64(i%100)*1e-3, -33.85)
		s += e + n
	}
	_ = s
}

func BenchmarkMGAInverse(b *testing.B) {
	b.ReportAllocs()
	var s float64
	for i := 0; b.Loop(); i++ {
		lon, lat := MGAInverse(56, 334475+float64(i%100), 6252780)
		s += lon + lat
	}
	_ = s
}
