package synth

import (
	"bytes"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"

	"siteenv/basemap"
)

// TestDemoBasemap: the demo's basemap is a PMTiles archive whose tile over
// the first Parramatta address holds streets and the locality's name.
func TestDemoBasemap(t *testing.T) {
	g := small(t)
	var buf bytes.Buffer
	if err := g.WriteBasemap(&buf); err != nil {
		t.Fatal(err)
	}
	a, err := basemap.Open(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	p := orb.Point{151.0036, -33.8150}
	tl, err := a.Layers(p.Bound().Pad(0.005), 15)
	if err != nil {
		t.Fatal(err)
	}
	roads, places := 0, 0
	for _, ls := range tl {
		for _, l := range ls {
			switch l.Name {
			case "roads":
				roads += len(l.Features)
			case "places":
				places += len(l.Features)
			}
		}
	}
	if roads == 0 {
		t.Errorf("no streets around Parramatta (%d tiles)", len(tl))
	}
	raw, err := a.Tile(maptile.At(p, 12))
	if err != nil || raw == nil {
		t.Errorf("no zoom 12 tile over Parramatta: %v", err)
	}
	t.Logf("%d bytes, %d roads and %d places around Parramatta", buf.Len(), roads, places)
}
