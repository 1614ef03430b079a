package jobs_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/jobs"
)

// TestLayerDetailDistance: a layer whose layer.json sets its own
// detail_distance_m (300 m, under the water theme's 500 m default) gets it
// in its section heading and in the split between record cards and the
// appendix: a bore just inside is a card, one just outside an appendix row.
func TestLayerDetailDistance(t *testing.T) {
	t.Parallel()
	b := reportSetup(t, nil)
	// The site is a 40 m square at origin: east(m) is m-20 from its edge.
	b.publishBoresWith(boreFeatures(map[string]orb.Point{"B-INSIDE": east(312), "B-OUTSIDE": east(328)}),
		map[string]any{"detail_distance_m": 300})
	rep, _ := b.order()
	if ran, err := b.runner(jobs.Config{}, nil).RunReportOnce(b.ctx); !ran || err != nil {
		t.Fatalf("RunReportOnce = %v, %v", ran, err)
	}
	rev := b.built(rep.ID, 1)

	var ev jobs.Evidence
	if err := json.Unmarshal(rev.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	for _, l := range ev.Layers {
		if l.LayerID == boresID && l.DetailM != 300 {
			t.Errorf("evidence: the bores' detail distance is %v m, want 300", l.DetailM)
		}
	}

	if text := flat(pdfText(t, b.pdf(&rev))); !strings.Contains(text, "Groundwater bores (detail distance 300 m)") {
		t.Errorf("the PDF's bores heading does not state its detail distance:\n%s", text)
	}

	secs, err := b.led.ReportSections(b.ctx, rev.ID, -1, 200)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, s := range secs {
		for _, line := range strings.Split(s.Text, "\n") {
			for _, id := range []string{"B-INSIDE", "B-OUTSIDE"} {
				if strings.Contains(line, "] "+id+":") {
					rows[id] = line
				}
			}
		}
	}
	if r, ok := rows["B-INSIDE"]; !ok || strings.Contains(r, "(appendix)") {
		t.Errorf("B-INSIDE (292 m) should be a record card: %q", r)
	}
	if r, ok := rows["B-OUTSIDE"]; !ok || !strings.Contains(r, "(appendix)") {
		t.Errorf("B-OUTSIDE (308 m) should be an appendix row: %q", r)
	}
}
