package synth

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"siteenv/geo"
)

// cadastreRE is each state's cadastre id convention (see newPlan).
var cadastreRE = map[string]*regexp.Regexp{
	"NSW": regexp.MustCompile(`^\d+/(DP|SP)\d+$`),
	"QLD": regexp.MustCompile(`^\d+(RP|SP)\d+$`),
	"VIC": regexp.MustCompile(`^\d+\\(PS|LP)\d+$`),
	"SA":  regexp.MustCompile(`^[DF]\d+/A\d+$`),
	"WA":  regexp.MustCompile(`^\d+/D(P)?\d+$`),
	"TAS": regexp.MustCompile(`^\d+/S?P\d+$`),
	"NT":  regexp.MustCompile(`^\d+/S\d+$`),
	"ACT": regexp.MustCompile(`^B\d+/S\d+/[A-Z' -]+$`),
}

var (
	labelRE  = regexp.MustCompile(`^(\d+) ([A-Z][A-Za-z' -]+), ([A-Z0-9][A-Z0-9' ().-]+) (ACT|NSW|NT|QLD|SA|TAS|VIC|WA) (\d{4})$`)
	streetRE = regexp.MustCompile(`^[A-Z][a-z]+( [A-Z][a-z]+)* (Street|Road|Avenue|Crescent|Close|Court|Place|Drive|Parade|Lane|Way|Terrace|Grove|Circuit|Boulevard|Highway|Freeway|Parkway)( North| South| East| West)?$`)
)

func TestAddresses(t *testing.T) {
	g := small(t)
	labels := map[string]orb.Point{}
	streets := map[string]bool{}
	// Each address carries its locality's LGA as the sourced table gives it
	// (none invented).
	locs, err := localities()
	if err != nil {
		t.Fatal(err)
	}
	lgaOf := map[[3]string]string{}
	for _, l := range locs {
		lgaOf[[3]string{l.Name, l.State, l.Postcode}] = l.LGA
	}
	withLGA := 0
	err = g.Addresses(func(a Address) error {
		if want := lgaOf[[3]string{a.Locality, a.State, a.Postcode}]; a.LGA != want {
			return fmt.Errorf("%q: LGA %q, the locality table says %q", a.Label, a.LGA, want)
		}
		if a.LGA != "" {
			withLGA++
		}
		if _, dup := labels[a.Label]; dup {
			return fmt.Errorf("duplicate label %q", a.Label)
		}
		labels[a.Label] = a.Point
		m := labelRE.FindStringSubmatch(a.Label)
		if m == nil || m[1] != a.Number || m[2] != a.Street || m[3] != a.Locality || m[4] != a.State || m[5] != a.Postcode {
			return fmt.Errorf("label %q does not match %+v", a.Label, a)
		}
		streets[a.Street] = true
		if !geoOK(a.Point) {
			return fmt.Errorf("%q: point %v", a.Label, a.Point)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if withLGA < len(labels)*9/10 {
		t.Errorf("only %d of %d addresses carry an LGA", withLGA, len(labels))
	}
	if n := int64(len(labels)); n != g.AddressCount() || math.Abs(float64(n-Small.Addresses())) > 0.1*float64(Small.Addresses()) {
		t.Errorf("%d addresses, AddressCount %d, target %d", n, g.AddressCount(), Small.Addresses())
	}
	for s := range streets {
		if !streetRE.MatchString(s) {
			t.Errorf("implausible street name %q", s)
		}
	}
	// Density follows population: the Sydney, Melbourne and Brisbane
	// areas hold a large share.
	capital := 0
	for _, p := range labels {
		for _, c := range []orb.Point{{151.0, -33.85}, {145.0, -37.85}, {153.0, -27.5}} {
			if math.Abs(p[0]-c[0]) < 0.6 && math.Abs(p[1]-c[1]) < 0.6 {
				capital++
			}
		}
	}
	if share := float64(capital) / float64(len(labels)); share < 0.4 {
		t.Errorf("only %.0f%% of addresses in the three largest capitals", share*100)
	}
}

func geoOK(p orb.Point) bool {
	return p[0] > 112 && p[0] < 154 && p[1] > -44 && p[1] < -9
}

func TestParcels(t *testing.T) {
	g := small(t)
	addrs := map[string]orb.Point{}
	g.Addresses(func(a Address) error { addrs[a.Label] = a.Point; return nil })
	ids := map[string]bool{}
	states := map[string]int{}
	var parcels []Parcel
	strata, vacant, onParcel := 0, 0, 0
	err := g.Parcels(func(p Parcel) error {
		parcels = append(parcels, p)
		key := p.Jurisdiction + " " + p.CadastreID
		if ids[key] {
			return fmt.Errorf("duplicate cadastre id %s", key)
		}
		ids[key] = true
		states[p.Jurisdiction]++
		re := cadastreRE[p.Jurisdiction]
		if re == nil || !re.MatchString(p.CadastreID) {
			return fmt.Errorf("%s cadastre id %q breaks the convention", p.Jurisdiction, p.CadastreID)
		}
		if strings.Contains(p.CadastreID, "/SP") && p.Jurisdiction == "NSW" {
			strata++
		}
		poly, ok := p.Geometry.(orb.Polygon)
		if !ok {
			return fmt.Errorf("%s: geometry %T", key, p.Geometry)
		}
		if err := geo.Validate(poly, 0); err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
		if poly[0].Orientation() != orb.CCW {
			return fmt.Errorf("%s: exterior is not counter-clockwise", key)
		}
		w, d := sides(poly[0])
		if w < minFront-0.1 || w > maxFront+0.1 || d < minDepth-0.1 || d > maxDepth+0.1 {
			return fmt.Errorf("%s: lot %.1f x %.1f m", key, w, d)
		}
		if p.AddressLabel == "" {
			vacant++
			return nil
		}
		pt, ok := addrs[p.AddressLabel]
		if !ok {
			return fmt.Errorf("%s: address %q does not exist", key, p.AddressLabel)
		}
		if !planar.PolygonContains(poly, pt) {
			return fmt.Errorf("%s: address point of %q is outside the parcel", key, p.AddressLabel)
		}
		onParcel++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for st := range cadastreRE {
		if states[st] == 0 {
			t.Errorf("no parcels in %s", st)
		}
	}
	if strata == 0 {
		t.Error("no NSW strata plans")
	}
	if f := float64(onParcel) / float64(len(addrs)); f < 0.95 || f == 1 {
		t.Errorf("%.3f of addresses on a parcel, want most but not all", f)
	}
	if f := float64(vacant) / float64(len(parcels)); f < 0.02 || f > 0.12 {
		t.Errorf("%.3f of parcels vacant", f)
	}
	checkNoOverlap(t, parcels)
}

// sides returns the lengths in metres of a rectangle's first two edges
// (frontage, depth).
func sides(r orb.Ring) (float64, float64) {
	return metresBetween(r[0], r[1]), metresBetween(r[1], r[2])
}

func metresBetween(a, b orb.Point) float64 {
	dx := (b[0] - a[0]) * mPerDegLonEq * math.Cos(a[1]*math.Pi/180)
	dy := (b[1] - a[1]) * mPerDegLat
	return math.Hypot(dx, dy)
}

// checkNoOverlap wants no two parcels to share interior: for all pairs
// close enough to touch (a grid of ~100 m cells), a separating axis must
// exist (convex rectangles), allowing 2 cm for rounding.
func checkNoOverlap(t *testing.T, parcels []Parcel) {
	type cell struct{ x, y int }
	grid := map[cell][]int{}
	const size = 0.001 // degrees
	for i, p := range parcels {
		b := p.Geometry.Bound()
		for x := int(math.Floor(b.Min[0] / size)); x <= int(math.Floor(b.Max[0]/size)); x++ {
			for y := int(math.Floor(b.Min[1] / size)); y <= int(math.Floor(b.Max[1]/size)); y++ {
				grid[cell{x, y}] = append(grid[cell{x, y}], i)
			}
		}
	}
	checked := map[[2]int]bool{}
	overlaps := 0
	for _, idx := range grid {
		for a := 0; a < len(idx); a++ {
			for b := a + 1; b < len(idx); b++ {
				i, j := idx[a], idx[b]
				if checked[[2]int{i, j}] {
					continue
				}
				checked[[2]int{i, j}] = true
				pi, pj := parcels[i].Geometry.(orb.Polygon)[0], parcels[j].Geometry.(orb.Polygon)[0]
				if !pi.Bound().Intersects(pj.Bound()) {
					continue
				}
				if convexOverlap(pi, pj, 0.02) {
					overlaps++
					if overlaps < 5 {
						t.Errorf("parcels %s and %s overlap", parcels[i].CadastreID, parcels[j].CadastreID)
					}
				}
			}
		}
	}
	if len(checked) < len(parcels) {
		t.Errorf("only %d neighbouring pairs checked for %d parcels", len(checked), len(parcels))
	}
}

// convexOverlap reports whether two convex rings share more than tol
// metres of interior on every axis (separating axis theorem, in metres).
func convexOverlap(a, b orb.Ring, tol float64) bool {
	lat := a[0][1]
	k := mPerDegLonEq * math.Cos(lat*math.Pi/180)
	m := func(p orb.Point) [2]float64 { return [2]float64{p[0] * k, p[1] * mPerDegLat} }
	for _, r := range []orb.Ring{a, b} {
		for i := 0; i+1 < len(r); i++ {
			p, q := m(r[i]), m(r[i+1])
			nx, ny := -(q[1] - p[1]), q[0]-p[0]
			l := math.Hypot(nx, ny)
			nx, ny = nx/l, ny/l
			proj := func(s orb.Ring) (float64, float64) {
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, v := range s {
					x := m(v)
					d := x[0]*nx + x[1]*ny
					lo, hi = math.Min(lo, d), math.Max(hi, d)
				}
				return lo, hi
			}
			alo, ahi := proj(a)
			blo, bhi := proj(b)
			if math.Min(ahi, bhi)-math.Max(alo, blo) <= tol {
				return false
			}
		}
	}
	return true
}

func TestAllocation(t *testing.T) {
	locs, err := localities()
	if err != nil {
		t.Fatal(err)
	}
	for _, total := range []int64{Small.Addresses(), Medium.Addresses(), Large.Addresses()} {
		counts := allocateAddresses(7, locs, total)
		sum := int64(0)
		for i, c := range counts {
			sum += int64(c)
			if int(c) > lotCapacity(maxHalf(&locs[i])) {
				t.Fatalf("%s: %d addresses over capacity", locs[i].Name, c)
			}
		}
		if sum != total {
			t.Errorf("allocated %d of %d", sum, total)
		}
	}
}

func TestParcelsStop(t *testing.T) {
	g := small(t)
	stop := errors.New("stop")
	n := 0
	if err := g.Parcels(func(Parcel) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Parcels: %v after %d", err, n)
	}
}

// TestCadastreIDsUniquePerJurisdiction: the gazetteer's key is (jurisdiction,
// cadastre id); several localities share an ACT division name.
func TestCadastreIDsUniquePerJurisdiction(t *testing.T) {
	g, err := New(20261122, Small)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	if err := g.Parcels(func(p Parcel) error {
		k := p.Jurisdiction + "|" + p.CadastreID
		if seen[k] {
			t.Fatalf("duplicate parcel id %s", k)
		}
		seen[k] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
