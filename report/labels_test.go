package report

import (
	"testing"
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
	labels := append(d.keyBoxes[:len(d.keyBoxes):len(d.keyBoxes)], d.ringBoxes...)
	for i, b := range labels {
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
	if len(d.keyBoxes) < major {
		t.Errorf("%d labels placed, fewer than the %d major keys", len(d.keyBoxes), major)
	}
	t.Logf("%d marks, %d keys, %d labels placed, %d ring labels", len(d.marks), k, len(d.keyBoxes), len(d.ringBoxes))
}
