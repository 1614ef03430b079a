package austates_test

import (
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/geo/austates"
)

// capitals are the capital cities' CBDs (and the project's own Darwin
// sample point): a report on any of them must not ask which state it is in.
var capitals = []struct {
	name string
	p    orb.Point
	want string
}{
	{"Sydney", orb.Point{151.2093, -33.8688}, "NSW"},
	{"Melbourne", orb.Point{144.9631, -37.8136}, "VIC"},
	{"Brisbane", orb.Point{153.0251, -27.4698}, "QLD"},
	{"Perth", orb.Point{115.8605, -31.9505}, "WA"},
	{"Adelaide", orb.Point{138.6007, -34.9285}, "SA"},
	{"Hobart", orb.Point{147.3272, -42.8821}, "TAS"},
	{"Darwin", orb.Point{130.8456, -12.4634}, "NT"},
	{"Darwin sample point", orb.Point{130.8418, -12.4634}, "NT"},
	{"Canberra", orb.Point{149.1300, -35.2809}, "ACT"},
}

// TestCapitalsInTheirState: every capital's CBD resolves to its state,
// Darwin's too, though Natural Earth's 1:10m coast runs 400 m inland of it.
func TestCapitalsInTheirState(t *testing.T) {
	t.Parallel()
	for _, c := range capitals {
		if got := austates.StatesOf(c.p); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s %v: %v, want [%s]", c.name, c.p, got, c.want)
		}
		// A lot there, a few tens of metres across, too.
		lot := orb.Polygon{{{c.p[0], c.p[1]}, {c.p[0] + 3e-4, c.p[1]}, {c.p[0] + 3e-4, c.p[1] + 3e-4}, {c.p[0], c.p[1] + 3e-4}, {c.p[0], c.p[1]}}}
		if got := austates.StatesOf(lot); !slices.Equal(got, []string{c.want}) {
			t.Errorf("a lot in %s: %v, want [%s]", c.name, got, c.want)
		}
	}
}

// TestCoastalWaters: a point within 3 nautical miles of one state's land is
// that state's; as near two states, both's (the order must name one); farther
// out, nobody's.
func TestCoastalWaters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    orb.Point
		want []string
	}{
		{"2 km off Bondi", orb.Point{151.30, -33.895}, []string{"NSW"}},
		{"1 km off Cottesloe", orb.Point{115.74, -31.99}, []string{"WA"}},
		{"Port Phillip, 3 km off St Kilda", orb.Point{144.95, -37.89}, []string{"VIC"}},
		{"12 km off Bondi", orb.Point{151.40, -33.895}, nil},
		{"Tasman Sea", orb.Point{155, -35}, nil},
		{"Bass Strait", orb.Point{146, -40}, nil},
		{"off Point Danger, near NSW and QLD", orb.Point{153.54, -28.15}, []string{"NSW", "QLD"}},
	} {
		if got := austates.StatesOf(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}
