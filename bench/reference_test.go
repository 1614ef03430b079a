package bench

import (
	"context"
	"io"
	"log/slog"
	"math"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/engine"
	"siteenv/geo"
	"siteenv/ingest/synth"
)

func TestReferenceCases(t *testing.T) {
	t.Parallel()
	a := orb.Point{151.2, -33.87}
	b := offset(a, 80, 1500)
	m := geodesicMid(a, b)
	var azi float64
	wgs84.Inverse(m[1], m[0], b[1], b[0], nil, &azi, nil)
	square := func(c orb.Point, half float64) orb.Polygon {
		var r orb.Ring
		for _, az := range []float64{225, 135, 45, 315, 225} { // counter-clockwise
			r = append(r, offset(c, az, half*math.Sqrt2))
		}
		return orb.Polygon{r}
	}
	sq := square(a, 100)

	tests := []struct {
		name      string
		site, f   orb.Geometry
		want      float64
		tol       float64
		wantDepth float64 // minimum, when want is 0
	}{
		{"point-point", a, b, geo.Distance(a, b), 1e-9, 0},
		{"point beside the middle of a geodesic", offset(m, azi+90, 100), orb.LineString{a, b}, 100, 1e-6, 0},
		{"point beyond the end of a geodesic", offset(b, azi+0.0001, 250), orb.LineString{a, b}, 250, 1e-3, 0},
		{"point inside a polygon", a, sq, 0, 0, 99},
		{"point outside a polygon", offset(a, 0, 150), sq, 50, 1e-3, 0},
		{"polygon containing a polygon", square(a, 300), sq, 0, 0, 199},
		{"crossing lines", orb.LineString{offset(m, azi+90, 50), offset(m, azi-90, 50)}, orb.LineString{a, b}, 0, 0, 49},
		{"line beside a polygon", orb.LineString{offset(a, 90, 160), offset(a, 0, 300)}, sq, 0, -1, 0},
		{"multipoint, nearest member", orb.MultiPoint{b, offset(a, 0, 30)}, a, 30, 1e-9, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := referenceDistance(tc.site, tc.f)
			if tc.tol < 0 { // only check it is positive and sane
				if ref.D <= 0 || ref.D > 300 {
					t.Fatalf("D = %v", ref.D)
				}
				return
			}
			if math.Abs(ref.D-tc.want) > tc.tol {
				t.Fatalf("D = %.9f, want %.9f", ref.D, tc.want)
			}
			if tc.want == 0 && ref.Depth < tc.wantDepth {
				t.Fatalf("depth = %v, want at least %v", ref.Depth, tc.wantDepth)
			}
		})
	}
}

func TestReferenceWithin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ref          reference
		r            float64
		in, boundary bool
	}{
		{reference{D: 10}, 20, true, false},
		{reference{D: 10}, 5, false, false},
		{reference{D: 10.005}, 10, false, true},
		{reference{D: 9.995}, 10, true, true},
		{reference{D: 0, Depth: 50}, 0, true, false},
		{reference{D: 0, Depth: 0.001}, 0, true, true},
		{reference{D: 0, Depth: 0.001}, 5, true, false},
	} {
		in, boundary := tc.ref.within(tc.r)
		if in != tc.in || boundary != tc.boundary {
			t.Errorf("%+v within %v = %v, %v; want %v, %v", tc.ref, tc.r, in, boundary, tc.in, tc.boundary)
		}
	}
}

// TestReferenceAgreesWithEngine checks the reference (which decides who is
// right in a mismatch) against the engine's own distances on real
// synthetic features and sites: both claim geodesic exactness, by
// independent means.
func TestReferenceAgreesWithEngine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := synth.New(11, synth.Small)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := buildDataset(ctx, g, t.TempDir(), 2000, log)
	if err != nil {
		t.Fatal(err)
	}
	anchors, err := sampleAnchors(ctx, ds, 512, 11)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := makeMix(60, anchors, len(ds.layers), 11)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, ds.store, engine.Options{})
	checked := 0
	for i, q := range qs {
		for _, li := range q.layers {
			req := engineRequest(ds, q, []int{li})
			req.Layers[0].IncludeGeometry = true
			res, err := e.Query(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			fs := res[0].Features
			for k := 0; k < len(fs); k += max(1, len(fs)/8) { // near and far ones
				f := fs[k]
				ref := referenceDistance(q.site, f.Geometry)
				if math.Abs(ref.D-f.DistanceM) > 1e-3 {
					t.Errorf("query %d (%s) layer %s feature %s: engine %.6f m, reference %.6f m",
						i, q.kind, ds.layers[li].id, f.ID, f.DistanceM, ref.D)
				}
				checked++
			}
		}
	}
	if checked < 150 {
		t.Fatalf("only %d features checked", checked)
	}
	t.Logf("%d features: engine and reference distances agree within 1 mm", checked)
}
