// Command gen writes ../../au.bin, the Australian state and territory outlines
// embedded by package austates, from the Natural Earth 1:10m admin-1 data that
// github.com/sams96/rgeo embeds.
//
// Run it through `go generate ./geo/austates` (the directive lives in
// austates.go). It reads only rgeo's embedded data, so its output depends on
// nothing but the pinned rgeo version and the constants below.
//
// Shared state borders are simplified once: the rings are cut into arcs at
// the points where neighbouring rings meet or part (as TopoJSON does), each
// distinct arc is simplified with Douglas-Peucker, and the rings are stored as
// lists of arc references. Neighbouring states therefore still share exactly
// the same border after simplification (no slivers, no gaps), and the decoder
// can tell coastline (arcs used once) from state borders (arcs used by two
// states).
//
// File format (gzip-compressed; all integers are varints as written by
// encoding/binary.AppendUvarint / AppendVarint; coordinates are microdegrees,
// CRS84 lon/lat):
//
//	"AUBM" magic, 1 byte version (1)
//	uvarint arc count
//	  per arc: uvarint point count (>= 2), then per point varint dlon, dlat:
//	  the difference from the previous point, which for an arc's first point
//	  is the previous arc's last point ((0, 0) before the first arc)
//	uvarint state count
//	  per state: uvarint length + code bytes, uvarint length + name bytes,
//	  uvarint polygon count; per polygon uvarint ring count (outer ring
//	  first, then holes); per ring uvarint arc-reference count, then per
//	  reference varint r: arc r when r >= 0, arc ^r reversed when r < 0.
//	  A ring is its arcs concatenated, each arc's first point dropped after
//	  the first arc since it repeats the previous arc's last point; rings are
//	  closed (first point == last point).
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/clip"
	"github.com/paulmach/orb/geojson"
	"github.com/sams96/rgeo"
)

// Tolerance is the Douglas-Peucker tolerance in microdegrees (0.001 degree,
// about 110 m north-south and 90 m east-west at Sydney's latitude).
const Tolerance = 1000

// ClipBox is the box the outlines are clipped to (CRS84 lon/lat). It keeps the
// mainland, Tasmania and the Torres Strait islands and drops the remote
// islands (Lord Howe, Macquarie) that no site map around the mainland shows.
var ClipBox = orb.Bound{Min: orb.Point{112, -44}, Max: orb.Point{155, -9}}

// codes maps Natural Earth's iso_3166_2 property to the code austates exposes.
// Jervis Bay Territory is a separate admin-1 unit in Natural Earth (and in
// law): it is kept as its own unit so that the land fill has no hole on the
// NSW south coast and StateAt does not call it NSW.
var codes = map[string]string{
	"AU-NSW":  "NSW",
	"AU-VIC":  "VIC",
	"AU-QLD":  "QLD",
	"AU-SA":   "SA",
	"AU-WA":   "WA",
	"AU-TAS":  "TAS",
	"AU-NT":   "NT",
	"AU-ACT":  "ACT",
	"AU-X02~": "JBT",
}

// skipped are Australian admin-1 units outside ClipBox; the generator fails
// if any other unknown unit appears, or if one of these reaches into the box.
var skipped = map[string]bool{
	"AU-X03~": true, // Macquarie Island
}

func main() {
	out := flag.String("o", "au.bin", "output file")
	flag.Parse()
	b, st, err := Generate()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "%s: %d states, %d polygons, %d rings, %d arcs (%d left unsimplified), %d -> %d points, %d bytes\n",
		*out, st.States, st.Polygons, st.Rings, st.Arcs, st.Restored, st.PointsIn, st.PointsOut, len(b))
}

// Stats describes one generation run.
type Stats struct {
	States, Polygons, Rings, Arcs int
	PointsIn, PointsOut           int // ring vertices before and after simplification
	Restored                      int // arcs left unsimplified so that a ring did not collapse
}

type pt struct{ x, y int64 } // microdegrees

type state struct {
	code, name string
	polys      [][][]pt // polygon -> ring -> closed ring points
}

// Generate builds the file's bytes from rgeo's embedded data.
func Generate() ([]byte, Stats, error) {
	var st Stats
	states, err := load()
	if err != nil {
		return nil, st, err
	}
	st.States = len(states)
	for _, s := range states {
		st.Polygons += len(s.polys)
		for _, p := range s.polys {
			st.Rings += len(p)
			for _, r := range p {
				st.PointsIn += len(r)
			}
		}
	}

	topo := buildTopology(states)
	for i, a := range topo.arcs {
		topo.arcs[i] = simplifyArc(a, Tolerance)
	}
	// A ring made of few short arcs can collapse; fall back to its arcs
	// unsimplified (only tiny islands are affected, if any).
	for _, polys := range topo.rings {
		for _, rings := range polys {
			for _, refs := range rings {
				if ringLen(topo, refs) < 4 {
					for _, r := range refs {
						topo.arcs[arcIndex(r)] = topo.raw[arcIndex(r)]
						st.Restored++
					}
				}
			}
		}
	}
	st.Arcs = len(topo.arcs)
	for _, polys := range topo.rings {
		for _, rings := range polys {
			for _, refs := range rings {
				st.PointsOut += ringLen(topo, refs)
			}
		}
	}

	raw := encode(states, topo)
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, st, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, st, err
	}
	if err := zw.Close(); err != nil {
		return nil, st, err
	}
	return buf.Bytes(), st, nil
}

func load() ([]*state, error) {
	zr, err := gzip.NewReader(bytes.NewReader(rgeo.Provinces10()))
	if err != nil {
		return nil, fmt.Errorf("rgeo Provinces10: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("rgeo Provinces10: %w", err)
	}
	var fc geojson.FeatureCollection
	if err := json.Unmarshal(data, &fc); err != nil {
		return nil, fmt.Errorf("rgeo Provinces10: %w", err)
	}

	byCode := map[string]*state{}
	for _, f := range fc.Features {
		// Provinces10 also holds the admin-0 country features (upper-case
		// ADMIN, no iso_3166_2): only admin-1 units are wanted.
		if f.Properties.MustString("admin", "") != "Australia" {
			continue
		}
		iso := f.Properties.MustString("iso_3166_2", "")
		var mp orb.MultiPolygon
		switch g := f.Geometry.(type) {
		case orb.Polygon:
			mp = orb.MultiPolygon{g}
		case orb.MultiPolygon:
			mp = g
		default:
			return nil, fmt.Errorf("%s: unexpected geometry %s", iso, f.Geometry.GeoJSONType())
		}
		mp = clip.MultiPolygon(ClipBox, mp.Clone())
		code, known := codes[iso]
		switch {
		case skipped[iso] && len(mp) > 0:
			return nil, fmt.Errorf("%s is meant to lie outside the clip box but does not", iso)
		case skipped[iso]:
			continue
		case !known:
			return nil, fmt.Errorf("unknown Australian admin-1 unit %q (%s)", iso, f.Properties.MustString("name", ""))
		}
		if len(mp) == 0 {
			continue // e.g. Lord Howe Island, a second AU-NSW feature
		}
		name := f.Properties.MustString("name", "")
		s := byCode[code]
		switch {
		case s == nil:
			s = &state{code: code, name: name}
			byCode[code] = s
		case s.name != name:
			return nil, fmt.Errorf("%s: two features inside the clip box (%q, %q)", code, s.name, name)
		}
		for _, p := range mp {
			var poly [][]pt
			for i, r := range p {
				rr := roundRing(r)
				if len(rr) < 4 {
					if i == 0 {
						break // degenerate outer ring: drop the polygon
					}
					continue
				}
				poly = append(poly, rr)
			}
			if len(poly) > 0 {
				s.polys = append(s.polys, poly)
			}
		}
	}
	var states []*state
	for _, s := range byCode {
		if len(s.polys) > 0 {
			states = append(states, s)
		}
	}
	if len(states) != len(codes) {
		return nil, fmt.Errorf("found %d of the %d expected units", len(states), len(codes))
	}
	slices.SortFunc(states, func(a, b *state) int { return strings.Compare(a.code, b.code) })
	return states, nil
}

// roundRing converts to microdegrees (the data has 6 decimals, so this is
// exact), drops repeated points and closes the ring.
func roundRing(r orb.Ring) []pt {
	var out []pt
	for _, p := range r {
		q := pt{int64(math.Round(p[0] * 1e6)), int64(math.Round(p[1] * 1e6))}
		if len(out) > 0 && out[len(out)-1] == q {
			continue
		}
		out = append(out, q)
	}
	if len(out) > 0 && out[0] != out[len(out)-1] {
		out = append(out, out[0])
	}
	return out
}

type topology struct {
	raw, arcs [][]pt
	rings     [][][][]int // state -> polygon -> ring -> arc refs
}

func arcIndex(r int) int {
	if r < 0 {
		return ^r
	}
	return r
}

func ringLen(t *topology, refs []int) int {
	n := 1
	for _, r := range refs {
		n += len(t.arcs[arcIndex(r)]) - 1
	}
	return n
}

// buildTopology cuts every ring into arcs at junctions and deduplicates arcs
// shared by neighbouring rings.
func buildTopology(states []*state) *topology {
	// A point is a junction when it occurs with different neighbours in two
	// places: there two rings that ran together part, or a ring touches
	// another.
	type pair struct{ a, b pt }
	seen := map[pt]pair{}
	junction := map[pt]bool{}
	for _, s := range states {
		for _, p := range s.polys {
			for _, r := range p {
				n := len(r) - 1 // r is closed
				for i := 0; i < n; i++ {
					prev, next := r[(i+n-1)%n], r[(i+1)%n]
					if less(next, prev) {
						prev, next = next, prev
					}
					if old, ok := seen[r[i]]; !ok {
						seen[r[i]] = pair{prev, next}
					} else if old != (pair{prev, next}) {
						junction[r[i]] = true
					}
				}
			}
		}
	}

	t := &topology{}
	index := map[string]int{}
	add := func(a []pt, rotatable bool) int {
		c, rev := canonical(a, rotatable)
		k := key(c)
		i, ok := index[k]
		if !ok {
			i = len(t.raw)
			index[k] = i
			t.raw = append(t.raw, c)
			t.arcs = append(t.arcs, c)
		}
		if rev {
			return ^i
		}
		return i
	}
	for _, s := range states {
		var polys [][][]int
		for _, p := range s.polys {
			var rings [][]int
			for _, r := range p {
				n := len(r) - 1
				start := -1
				for i := 0; i < n; i++ {
					if junction[r[i]] {
						start = i
						break
					}
				}
				var refs []int
				if start < 0 {
					refs = []int{add(r, true)}
				} else {
					// Walk the ring from a junction, cutting at each one.
					cur := []pt{r[start]}
					for k := 1; k <= n; k++ {
						q := r[(start+k)%n]
						cur = append(cur, q)
						if junction[q] {
							refs = append(refs, add(cur, false))
							cur = []pt{q}
						}
					}
				}
				rings = append(rings, refs)
			}
			polys = append(polys, rings)
		}
		t.rings = append(t.rings, polys)
	}
	return t
}

func less(a, b pt) bool { return a.x < b.x || (a.x == b.x && a.y < b.y) }

// canonical returns the arc in a form shared by both directions (and, for a
// whole ring without junctions, by every starting point), and whether that
// form is the reverse of a. An arc cut at junctions keeps its ends even when
// they coincide (a ring with a single junction).
func canonical(a []pt, rotatable bool) ([]pt, bool) {
	c := slices.Clone(a)
	if rotatable {
		n := len(c) - 1
		m := 0
		for i := 1; i < n; i++ {
			if less(c[i], c[m]) {
				m = i
			}
		}
		if m != 0 {
			rot := append(slices.Clone(c[m:n]), c[:m]...)
			c = append(rot, rot[0])
		}
	}
	r := slices.Clone(c)
	slices.Reverse(r)
	if slices.CompareFunc(r, c, cmp) < 0 {
		return r, true
	}
	return c, false
}

func cmp(a, b pt) int {
	switch {
	case less(a, b):
		return -1
	case a == b:
		return 0
	default:
		return 1
	}
}

func key(a []pt) string {
	b := make([]byte, 0, len(a)*16)
	for _, p := range a {
		b = binary.BigEndian.AppendUint64(b, uint64(p.x))
		b = binary.BigEndian.AppendUint64(b, uint64(p.y))
	}
	return string(b)
}

// simplifyArc is Douglas-Peucker keeping both ends; distances are to the
// segment (so a closed arc, whose ends coincide, first keeps its farthest
// point).
func simplifyArc(a []pt, tol float64) []pt {
	if len(a) <= 2 {
		return a
	}
	keep := make([]bool, len(a))
	keep[0], keep[len(a)-1] = true, true
	var rec func(i, j int)
	rec = func(i, j int) {
		far, best := -1, tol
		for k := i + 1; k < j; k++ {
			if d := segDist(a[k], a[i], a[j]); d > best {
				far, best = k, d
			}
		}
		if far < 0 {
			return
		}
		keep[far] = true
		rec(i, far)
		rec(far, j)
	}
	rec(0, len(a)-1)
	var out []pt
	for i, p := range a {
		if keep[i] {
			out = append(out, p)
		}
	}
	return out
}

func segDist(p, a, b pt) float64 {
	px, py := float64(p.x), float64(p.y)
	ax, ay := float64(a.x), float64(a.y)
	bx, by := float64(b.x), float64(b.y)
	dx, dy := bx-ax, by-ay
	if dx == 0 && dy == 0 {
		return math.Hypot(px-ax, py-ay)
	}
	u := ((px-ax)*dx + (py-ay)*dy) / (dx*dx + dy*dy)
	u = max(0, min(1, u))
	return math.Hypot(px-(ax+u*dx), py-(ay+u*dy))
}

func encode(states []*state, t *topology) []byte {
	b := []byte("AUBM\x01")
	b = binary.AppendUvarint(b, uint64(len(t.arcs)))
	var last pt
	for _, a := range t.arcs {
		b = binary.AppendUvarint(b, uint64(len(a)))
		for _, p := range a {
			b = binary.AppendVarint(b, p.x-last.x)
			b = binary.AppendVarint(b, p.y-last.y)
			last = p
		}
	}
	b = binary.AppendUvarint(b, uint64(len(states)))
	for i, s := range states {
		b = appendString(b, s.code)
		b = appendString(b, s.name)
		b = binary.AppendUvarint(b, uint64(len(t.rings[i])))
		for _, rings := range t.rings[i] {
			b = binary.AppendUvarint(b, uint64(len(rings)))
			for _, refs := range rings {
				b = binary.AppendUvarint(b, uint64(len(refs)))
				for _, r := range refs {
					b = binary.AppendVarint(b, int64(r))
				}
			}
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
