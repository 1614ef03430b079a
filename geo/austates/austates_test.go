package austates

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

func TestDecodeEmbedded(t *testing.T) {
	t.Parallel()
	d, err := decode(auBin)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ACT": "Australian Capital Territory",
		"JBT": "Jervis Bay Territory",
		"NSW": "New South Wales",
		"NT":  "Northern Territory",
		"QLD": "Queensland",
		"SA":  "South Australia",
		"TAS": "Tasmania",
		"VIC": "Victoria",
		"WA":  "Western Australia",
	}
	var codes []string
	for _, s := range d.states {
		codes = append(codes, s.Code)
		if want[s.Code] != s.Name {
			t.Errorf("%s: name %q, want %q", s.Code, s.Name, want[s.Code])
		}
		if len(s.Geometry) == 0 {
			t.Errorf("%s: no polygons", s.Code)
		}
		if b := s.Geometry.Bound(); !containsBound(clipBox, b) {
			t.Errorf("%s: bound %v outside the clip box", s.Code, b)
		}
		for _, p := range s.Geometry {
			for _, r := range p {
				if len(r) < 4 || !r.Closed() {
					t.Errorf("%s: open or degenerate ring of %d points", s.Code, len(r))
				}
			}
		}
	}
	if want := []string{"ACT", "JBT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA"}; !slices.Equal(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	if len(d.coast) == 0 || len(d.borders) == 0 {
		t.Fatalf("%d coastline and %d border lines", len(d.coast), len(d.borders))
	}
}

// clipBox is the generator's clip box.
var clipBox = orb.Bound{Min: orb.Point{112, -44}, Max: orb.Point{155, -9}}

func TestEmbeddedSize(t *testing.T) {
	t.Parallel()
	if n := len(auBin); n > 400<<10 {
		t.Fatalf("au.bin is %d bytes, more than 400 KiB", n)
	}
}

func TestStateAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    orb.Point
		want string
	}{
		{"Sydney", orb.Point{151.2093, -33.8688}, "NSW"},
		{"Melbourne", orb.Point{144.9631, -37.8136}, "VIC"},
		{"Canberra", orb.Point{149.13, -35.2809}, "ACT"},
		{"Hobart", orb.Point{147.3272, -42.8821}, "TAS"},
		{"Perth", orb.Point{115.8605, -31.9505}, "WA"},
		// Darwin's CBD lies just outside the 1:10m coast: StateAt is the
		// land alone; its jurisdiction is TestCapitalsInTheirState's.
		{"Darwin Airport", orb.Point{130.8766, -12.4147}, "NT"},
		{"Brisbane", orb.Point{153.0251, -27.4698}, "QLD"},
		{"Adelaide", orb.Point{138.6007, -34.9285}, "SA"},
		{"Tasman Sea", orb.Point{155, -35}, ""},
		{"Bass Strait", orb.Point{146, -40}, ""},
		{"Albury", orb.Point{146.9135, -36.0737}, "NSW"},
		{"Wodonga", orb.Point{146.8878, -36.1218}, "VIC"},
		{"Jervis Bay Village", orb.Point{150.695, -35.13}, "JBT"},
		{"Queanbeyan east side", orb.Point{149.25, -35.37}, "NSW"},
		{"Alice Springs", orb.Point{133.8807, -23.6980}, "NT"},
		{"Horn Island, Torres Strait", orb.Point{142.29, -10.61}, "QLD"},
		{"Lord Howe Island (clipped)", orb.Point{159.08, -31.55}, ""},
		{"Auckland", orb.Point{174.7633, -36.8485}, ""},
	} {
		if got := StateAt(tc.p); got != tc.want {
			t.Errorf("StateAt(%s %v) = %q, want %q", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		b    orb.Bound
		want []string
	}{
		{"Sydney", orb.Point{151.2093, -33.8688}.Bound().Pad(0.1), []string{"NSW"}},
		{"Albury-Wodonga", orb.Point{146.9, -36.1}.Bound().Pad(0.1), []string{"NSW", "VIC"}},
		// Victoria's bound reaches north-east past Canberra: Within culls
		// by bounds only.
		{"Canberra", orb.Point{149.13, -35.2809}.Bound().Pad(0.1), []string{"ACT", "NSW", "VIC"}},
		{"Perth", orb.Point{115.8605, -31.9505}.Bound().Pad(0.1), []string{"WA"}},
		{"Tasman Sea", orb.Bound{Min: orb.Point{156, -40}, Max: orb.Point{158, -38}}, nil},
	} {
		var got []string
		for _, s := range Within(tc.b) {
			got = append(got, s.Code)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Within(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBordersShared proves that neighbouring states share their borders
// exactly: just either side of the middle of every border segment lies a
// state, and a different one on each side (no gap, no overlap).
func TestBordersShared(t *testing.T) {
	t.Parallel()
	const off = 1e-5 // about a metre
	checked := 0
	for _, l := range Borders() {
		for i := 1; i < len(l); i++ {
			a, b := l[i-1], l[i]
			dx, dy := b[0]-a[0], b[1]-a[1]
			n := math.Hypot(dx, dy)
			if n < 20*off {
				continue // too short to step off safely
			}
			m := orb.Point{(a[0] + b[0]) / 2, (a[1] + b[1]) / 2}
			left := StateAt(orb.Point{m[0] - dy/n*off, m[1] + dx/n*off})
			right := StateAt(orb.Point{m[0] + dy/n*off, m[1] - dx/n*off})
			if left == "" || right == "" || left == right {
				t.Errorf("border segment %v-%v: sides %q and %q", a, b, left, right)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d border segments checked", checked)
	}
}

// TestCoastline checks the split between coastline and borders on states
// whose shape is known: the ACT is landlocked, Tasmania is all coast.
func TestCoastline(t *testing.T) {
	t.Parallel()
	act := stateByCode(t, "ACT").Geometry.Bound()
	tas := stateByCode(t, "TAS").Geometry.Bound()
	for _, l := range Coastline() {
		if act.Intersects(l.Bound()) && planar.MultiPolygonContains(stateByCode(t, "ACT").Geometry, l[len(l)/2]) {
			t.Errorf("coastline line inside the ACT")
		}
	}
	var actBorder, tasCoast bool
	for _, l := range Borders() {
		if tas.Intersects(l.Bound()) {
			t.Errorf("border line %v touches Tasmania", l.Bound())
		}
		actBorder = actBorder || containsBound(act, l.Bound())
	}
	for _, l := range Coastline() {
		tasCoast = tasCoast || containsBound(tas, l.Bound())
	}
	if !actBorder || !tasCoast {
		t.Fatalf("ACT border found %v, Tasmanian coast found %v", actBorder, tasCoast)
	}
}

func containsBound(outer, inner orb.Bound) bool {
	return outer.Contains(inner.Min) && outer.Contains(inner.Max)
}

func stateByCode(t *testing.T, code string) State {
	t.Helper()
	for _, s := range States() {
		if s.Code == code {
			return s
		}
	}
	t.Fatalf("no state %s", code)
	return State{}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if len(States()) != 9 || StateAt(orb.Point{151.2093, -33.8688}) != "NSW" {
				t.Error("wrong answer under concurrent use")
			}
		})
	}
	wg.Wait()
}

func TestDecodeRejectsCorruptFiles(t *testing.T) {
	t.Parallel()
	raw := gunzip(t, auBin)
	for _, tc := range []struct {
		name string
		gz   []byte
	}{
		{"empty", nil},
		{"not gzip", []byte("AUBM\x01")},
		{"bad magic", gzipBytes(t, append([]byte("AUBX\x01"), raw[5:]...))},
		{"truncated", gzipBytes(t, raw[:len(raw)/2])},
		{"trailing bytes", gzipBytes(t, append(slices.Clone(raw), 0))},
		{"truncated gzip", auBin[:len(auBin)-10]},
	} {
		if _, err := decode(tc.gz); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err %v, want ErrFormat", tc.name, err)
		}
	}
}

// FuzzParse checks that no input makes the parser panic or hang, and that
// whatever it accepts keeps the invariants the renderer relies on.
func FuzzParse(f *testing.F) {
	raw := gunzip(f, auBin)
	f.Add(raw)
	f.Add(raw[:200])
	f.Add([]byte(magic + "\x01\x02\x00\x00\x02\x02\x01\x03ACT\x00\x01\x01\x01\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parse(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		for i, s := range d.states {
			if i > 0 && d.states[i-1].Code > s.Code {
				t.Fatalf("states not sorted: %q before %q", d.states[i-1].Code, s.Code)
			}
			for _, p := range s.Geometry {
				for _, r := range p {
					if len(r) < 4 || !r.Closed() {
						t.Fatalf("%s: accepted an open or degenerate ring %v", s.Code, r)
					}
				}
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(auBin)))
	for b.Loop() {
		if _, err := decode(auBin); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStateAt(b *testing.B) {
	b.ReportAllocs()
	p := orb.Point{146.8878, -36.1218}
	get()
	for b.Loop() {
		if StateAt(p) != "VIC" {
			b.Fatal("wrong state")
		}
	}
}

func gunzip(tb testing.TB, gz []byte) []byte {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func gzipBytes(tb testing.TB, raw []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
