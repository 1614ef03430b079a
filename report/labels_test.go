package report

import (
	"image"
	"testing"

	"github.com/paulmach/orb"
)

// TestNoLabelCoversAMark: on a print map crowded with keyed records (120
// bores, 40 polygons, lines; half of the keys minor, as appendix records
// are), no placed key label and no ring label covers a point mark, nor
// another label, and every major key is placed.
func TestNoLabelCoversAMark(t *testing.T) {
	t.Parallel()
	m := pointSiteMap()
	m.Print = true
	k := 0
	major := 0
	for i := range m.Layers {
		l := &m.Layers[i]
		for j := range l.Features {
			k++
			l.Keys = append(l.Keys, k)
			minor := j >= 12
			l.Minor = append(l.Minor, minor)
			if !minor {
				major++
			}
		}
	}
	d := layoutPrint(m, ringRadii(m.Layers))
	if len(d.marks) < 100 {
		t.Fatalf("%d marks drawn", len(d.marks))
	}
	labelsClear(t, d)
	if len(d.keyBoxes) < major {
		t.Errorf("%d labels placed, fewer than the %d major keys", len(d.keyBoxes), major)
	}
	t.Logf("%d marks, %d keys, %d labels placed, %d ring labels", len(d.marks), k, len(d.keyBoxes), len(d.ringBoxes))
}

// TestRingLabelsCoverNoMark: a ring label never covers a mark. Where
// marks crowd the label's usual place (the ring's northernmost point) it
// moves round the ring; where marks crowd every place it could take, it is
// left off (the page names the distances) rather than printed over them.
func TestRingLabelsCoverNoMark(t *testing.T) {
	t.Parallel()
	rings := []float64{100, 250, 500}
	points := func(fs []orb.Geometry, cx, cy, hx, hy, step float64) []orb.Geometry {
		for x := cx - hx; x <= cx+hx; x += step {
			for y := cy - hy; y <= cy+hy; y += step {
				fs = append(fs, offset(parramatta, x, y))
			}
		}
		return fs
	}
	var north []orb.Geometry
	for _, r := range rings {
		north = points(north, 0, r, 60, 30, 12)
	}
	// Everywhere crowded but the scale bar's corner: a label must not
	// take the bar's place for want of any other.
	f := newFrame(parramatta, rings[len(rings)-1], printPanel)
	var corner []orb.Geometry
	for _, g := range points(nil, 0, 0, 900, 600, 16) {
		if x, y := f.px(g.(orb.Point)); !(image.Point{int(x), int(y)}).In(image.Rect(0, 800, 420, MapHeight)) {
			corner = append(corner, g)
		}
	}
	for _, tc := range []struct {
		name     string
		features []orb.Geometry
		labelled int // -1: any number
	}{
		{"usual places crowded", north, len(rings)},
		{"every place crowded", points(nil, 0, 0, 900, 600, 16), 0},
		{"all but the scale bar's corner crowded", corner, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := Map{
				Title: "12 Smith Street, Parramatta", Section: "Groundwater", Date: renderDate,
				Site: parramatta, Print: true, Rings: rings,
				Layers: []Layer{{ID: "bores", Name: "Groundwater bores", RadiusM: 500, Coverage: "complete",
					Features: tc.features, Attribution: []string{"Bureau of Meteorology (CC-BY-4.0)"}}},
			}
			d := layoutPrint(m, ringRadii(ringLayers(rings)))
			if len(d.marks) < len(tc.features)/2 {
				t.Fatalf("%d marks drawn of %d points", len(d.marks), len(tc.features))
			}
			labelsClear(t, d)
			if tc.labelled >= 0 && len(d.ringBoxes) != tc.labelled {
				t.Errorf("%d ring labels placed, want %d", len(d.ringBoxes), tc.labelled)
			}
			// The marks crowd each ring's usual label place, its
			// northernmost point: no label stays there.
			for _, r := range rings {
				x, y := d.f.px(offset(parramatta, 0, r))
				for _, b := range d.ringBoxes {
					if (image.Point{int(x), int(y)}).In(b) {
						t.Errorf("the %s ring label at %v is over the crowded north of its ring", Distance(r), b)
					}
				}
			}
			if len(d.ringLabels) != len(d.ringBoxes) {
				t.Errorf("%d ring labels drawn, %d placed", len(d.ringLabels), len(d.ringBoxes))
			}
		})
	}
}

// labelsClear fails t where a placed key or ring label covers a mark,
// another label, the map's furniture or its basemap note.
func labelsClear(t *testing.T, d *drawer) {
	t.Helper()
	if len(d.reserved) < 3 {
		t.Errorf("%d furniture and note boxes reserved, want the north arrow's, the scale bar's and the note's", len(d.reserved))
	}
	labels := append(d.keyBoxes[:len(d.keyBoxes):len(d.keyBoxes)], d.ringBoxes...)
	for i, b := range labels {
		for _, r := range d.reserved {
			if b.Overlaps(r) {
				t.Errorf("label %d at %v covers the furniture or note at %v", i, b, r)
			}
		}
		for _, mk := range d.marks {
			if b.Overlaps(mk) {
				t.Errorf("label %d at %v covers the mark at %v", i, b, mk)
			}
		}
		for j, o := range labels[:i] {
			if b.Overlaps(o) {
				t.Errorf("label %d at %v covers label %d at %v", i, b, j, o)
			}
		}
	}
}

// TestScreenRingLabelsCoverNoMark: the map image (GET .../map-image) keeps
// its ring labels off the marks as the print map does: moved round the
// ring where the usual place is crowded, left off (the legend names every
// ring) where nothing is clear.
func TestScreenRingLabelsCoverNoMark(t *testing.T) {
	t.Parallel()
	rings := []float64{100, 250, 500}
	points := func(fs []orb.Geometry, cx, cy, hx, hy, step float64) []orb.Geometry {
		for x := cx - hx; x <= cx+hx; x += step {
			for y := cy - hy; y <= cy+hy; y += step {
				fs = append(fs, offset(parramatta, x, y))
			}
		}
		return fs
	}
	var north []orb.Geometry
	for _, r := range rings {
		north = points(north, 0, r, 60, 30, 12)
	}
	for _, tc := range []struct {
		name     string
		features []orb.Geometry
		labelled int
	}{
		{"usual places crowded", north, len(rings)},
		{"every place crowded", points(nil, 0, 0, 900, 600, 16), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := Map{
				Title: "12 Smith Street, Parramatta", Section: "Groundwater", Date: renderDate,
				Site: parramatta, Rings: rings,
				Layers: []Layer{{ID: "bores", Name: "Groundwater bores", RadiusM: 500, Coverage: "complete",
					Features: tc.features, Attribution: []string{"Bureau of Meteorology (CC-BY-4.0)"}}},
			}
			d := layoutScreen(m, ringRadii(ringLayers(rings)))
			if len(d.marks) < len(tc.features)/2 {
				t.Fatalf("%d marks drawn of %d points", len(d.marks), len(tc.features))
			}
			for _, b := range d.ringBoxes {
				for _, mk := range d.marks {
					if b.Overlaps(mk) {
						t.Fatalf("a ring label at %v covers the mark at %v", b, mk)
					}
				}
			}
			if len(d.ringBoxes) != tc.labelled || len(d.ringLabels) != tc.labelled {
				t.Errorf("%d ring labels placed, %d drawn, want %d", len(d.ringBoxes), len(d.ringLabels), tc.labelled)
			}
		})
	}
}
