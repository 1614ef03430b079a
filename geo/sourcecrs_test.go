package geo

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

// srcRef is one row of testdata/sourcecrs_cs2cs.csv (see gen_sourcecrs.sh).
type srcRef struct {
	line     int
	crs      CRS
	inverse  bool
	x, y     float64
	lon, lat float64
}

func readSourceRefs(t testing.TB) []srcRef {
	t.Helper()
	f, err := os.Open("testdata/sourcecrs_cs2cs.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var refs []srcRef
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "crs,") {
			continue
		}
		fs := strings.Split(s, ",")
		if len(fs) != 6 {
			t.Fatalf("line %d: %d fields", line, len(fs))
		}
		code, err := strconv.Atoi(fs[0])
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		r := srcRef{line: line, crs: CRS(code), inverse: fs[1] == "inv"}
		v := make([]float64, 4)
		for i := range v {
			if v[i], err = strconv.ParseFloat(fs[2+i], 64); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
		}
		r.x, r.y, r.lon, r.lat = v[0], v[1], v[2], v[3]
		refs = append(refs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return refs
}

// TestSourceCRSAgainstPROJ checks every source CRS, both ways, against
// PROJ's cs2cs on a grid over each MGA94 zone and the continent: within
// 1 mm everywhere.
func TestSourceCRSAgainstPROJ(t *testing.T) {
	refs := readSourceRefs(t)
	if len(refs) < 4000 {
		t.Fatalf("only %d reference rows", len(refs))
	}
	worst := map[CRS]float64{}
	covered := map[string]bool{}
	for _, r := range refs {
		if !r.crs.IsSource() || r.crs.Valid() {
			t.Fatalf("line %d: %s is not a source CRS", r.line, r.crs)
		}
		covered[fmt.Sprint(r.crs, r.inverse)] = true
		var d float64
		if r.inverse {
			lon, lat, err := ToCRS84(r.crs, r.x, r.y)
			if err != nil {
				t.Errorf("line %d: ToCRS84(%s, %v, %v): %v", r.line, r.crs, r.x, r.y, err)
				continue
			}
			d = Distance(orb.Point{lon, lat}, orb.Point{r.lon, r.lat})
		} else {
			x, y, err := FromCRS84(r.crs, r.lon, r.lat)
			if err != nil {
				t.Errorf("line %d: FromCRS84(%s, %v, %v): %v", r.line, r.crs, r.lon, r.lat, err)
				continue
			}
			if r.crs == EPSG4283 {
				d = Distance(orb.Point{x, y}, orb.Point{r.x, r.y})
			} else {
				d = math.Hypot(x-r.x, y-r.y)
			}
		}
		worst[r.crs] = max(worst[r.crs], d)
		if d > 0.001 {
			t.Errorf("line %d: %s inverse=%v: %.4f m from PROJ", r.line, r.crs, r.inverse, d)
		}
	}
	for _, code := range SourceEPSG() {
		c := CRS(code)
		if c.Valid() {
			continue
		}
		if !covered[fmt.Sprint(c, true)] || !covered[fmt.Sprint(c, false)] {
			t.Errorf("%s has no reference points in both directions", c)
		}
		t.Logf("%s: worst %.3g m from PROJ", c, worst[c])
	}
}

// TestSourceCRSLiveCS2CS re-checks random points against cs2cs itself when
// it is installed (the CSV above keeps the suite independent of it).
func TestSourceCRSLiveCS2CS(t *testing.T) {
	if _, err := exec.LookPath("cs2cs"); err != nil {
		t.Skip("cs2cs not on PATH (apt-get install proj-bin)")
	}
	rng := rand.New(rand.NewPCG(26, 8048))
	for _, code := range SourceEPSG() {
		c := CRS(code)
		if c.Valid() {
			continue
		}
		geog := "EPSG:7844"
		if c == EPSG3857 {
			geog = "EPSG:4326"
		}
		// GDA2020 positions over the continent (or the zone), projected by
		// our forward, then taken back by cs2cs and by ToCRS84.
		var in strings.Builder
		var xs, ys []float64
		for range 200 {
			lon, lat := 108+rng.Float64()*52, -44+rng.Float64()*35
			if z := c.MGA94Zone(); z != 0 {
				lon = mgaCentralMeridian(z) - 3 + rng.Float64()*6
			}
			x, y, err := FromCRS84(c, lon, lat)
			if err != nil {
				t.Fatal(err)
			}
			xs, ys = append(xs, x), append(ys, y)
			if c == EPSG4283 {
				fmt.Fprintf(&in, "%.12f %.12f\n", y, x)
			} else {
				fmt.Fprintf(&in, "%.6f %.6f\n", x, y)
			}
		}
		cmd := exec.Command("cs2cs", "-f", "%.12f", c.String(), geog)
		cmd.Stdin = strings.NewReader(in.String())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cs2cs %s: %v", c, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(xs) {
			t.Fatalf("cs2cs %s: %d lines for %d points", c, len(lines), len(xs))
		}
		worst := 0.0
		for i, l := range lines {
			f := strings.Fields(l)
			lat, err1 := strconv.ParseFloat(f[0], 64)
			lon, err2 := strconv.ParseFloat(f[1], 64)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatalf("cs2cs %s: %q: %v", c, l, err)
			}
			x, y := math.Round(xs[i]*1e6)/1e6, math.Round(ys[i]*1e6)/1e6
			if c == EPSG4283 {
				x, y = xs[i], ys[i]
			}
			glon, glat, err := ToCRS84(c, x, y)
			if err != nil {
				t.Fatal(err)
			}
			d := Distance(orb.Point{glon, glat}, orb.Point{lon, lat})
			worst = max(worst, d)
			if d > 0.001 {
				t.Errorf("%s (%v, %v): %.4f m from cs2cs", c, x, y, d)
			}
		}
		t.Logf("%s: 200 random points, worst %.3g m from cs2cs", c, worst)
	}
}

func TestParseSourceCRS(t *testing.T) {
	for _, code := range SourceEPSG() {
		for _, s := range []string{fmt.Sprintf("EPSG:%d", code), fmt.Sprintf("urn:ogc:def:crs:EPSG::%d", code)} {
			c, err := ParseSourceCRS(s)
			if err != nil || c.EPSG() != code || c.String() != fmt.Sprintf("EPSG:%d", code) {
				t.Errorf("ParseSourceCRS(%q) = %v, %v", s, c, err)
			}
		}
	}
	for _, s := range []string{"EPSG:3111", "EPSG:28347", "EPSG:28359", "EPSG:028356", "EPSG:2835x", "", "EPSG:"} {
		_, err := ParseSourceCRS(s)
		var ue *UnsupportedCRSError
		if !errors.As(err, &ue) || !ue.Source || !strings.Contains(err.Error(), "EPSG:28348..28358") {
			t.Errorf("ParseSourceCRS(%q): %v", s, err)
		}
	}
	// The contract's list is unchanged: the API never accepts these.
	for _, code := range []int{4283, 28356, 3577, 9473, 3857} {
		if _, err := CRSFromEPSG(code); !errors.Is(err, ErrUnsupportedCRS) {
			t.Errorf("CRSFromEPSG(%d) accepted a source-only CRS", code)
		}
		if _, err := ParseCRS(fmt.Sprintf("EPSG:%d", code)); !errors.Is(err, ErrUnsupportedCRS) {
			t.Errorf("ParseCRS(EPSG:%d) accepted a source-only CRS", code)
		}
	}
}

func TestSourceCRSDomain(t *testing.T) {
	for _, tc := range []struct {
		c    CRS
		x, y float64
	}{
		{EPSG4283, 200, -30},
		{CRS(28356), 5e7, 6e6},
		{EPSG3857, 3e7, 0},
		{EPSG3577, 1e9, 1e9},
		{EPSG9473, math.NaN(), 0},
	} {
		if _, _, err := ToCRS84(tc.c, tc.x, tc.y); !errors.Is(err, ErrOutOfDomain) {
			t.Errorf("ToCRS84(%s, %v, %v): %v", tc.c, tc.x, tc.y, err)
		}
	}
}
