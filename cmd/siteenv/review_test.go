package main

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"

	"siteenv/basemap"
	"siteenv/ledger/ledgertest"
)

// TestReviewDrawsTheConfiguredBasemap: `siteenv review` draws the basemap
// SITEENV_BASEMAP names under its map (the loader serve uses), and without
// one its page says none is configured and serves no basemap image.
func TestReviewDrawsTheConfiguredBasemap(t *testing.T) {
	t.Setenv("SITEENV_DATABASE_URL", ledgertest.DSN(t))
	t.Setenv("SITEENV_STORE", "")
	dir := t.TempDir()
	t.Setenv("SITEENV_DATA_DIR", filepath.Join(dir, "var"))
	t.Chdir(t.TempDir())
	layer := filepath.Join(dir, "layer.json")
	if err := os.WriteFile(layer, []byte(layerJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := releasePair(t, dir)
	for _, args := range [][]string{{"ingest", "--layer", layer, a}, {"ingest", "--layer", layer, b}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}

	// A basemap archive: a lake under the bores, at zooms 10-14.
	lake := geojson.NewFeature(orb.Bound{Min: orb.Point{150.9, -33.9}, Max: orb.Point{151.3, -33.7}}.ToPolygon())
	lake.Properties["kind"] = "water"
	fc := geojson.NewFeatureCollection()
	fc.Features = []*geojson.Feature{lake}
	tiles := map[maptile.Tile]mvt.Layers{}
	for z := maptile.Zoom(10); z <= 14; z++ {
		lo, hi := maptile.At(orb.Point{150.9, -33.7}, z), maptile.At(orb.Point{151.3, -33.9}, z)
		for x := lo.X; x <= hi.X; x++ {
			for y := lo.Y; y <= hi.Y; y++ {
				tiles[maptile.New(x, y, z)] = mvt.NewLayers(map[string]*geojson.FeatureCollection{"water": fc})
			}
		}
	}
	var archive bytes.Buffer
	if err := basemap.Write(&archive, tiles, "review-cmd-test", "© Review Cmd Basemap"); err != nil {
		t.Fatal(err)
	}
	pmtiles := filepath.Join(dir, "basemap.pmtiles")
	if err := os.WriteFile(pmtiles, archive.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	get := func(url string) (int, string, []byte) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), body
	}
	for _, configured := range []bool{false, true} {
		if configured {
			t.Setenv("SITEENV_BASEMAP", pmtiles)
		}
		addr := freeAddr(t)
		ctx, cancel := context.WithCancel(context.Background())
		var out lockedBuffer
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"review", "--addr", addr}, &out, io.Discard) }()
		// Ready once it says where it serves (or it failed).
		for !strings.Contains(out.String(), "reviewing staged releases at") {
			select {
			case err := <-done:
				cancel()
				t.Fatalf("review stopped: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
		}
		_, _, index := get("http://" + addr + "/")
		link := regexp.MustCompile(`/review/nsw\.test-bores/r_[0-9a-f]+`).Find(index)
		if link == nil {
			cancel()
			t.Fatalf("the index lists no staged release:\n%s", index)
		}
		_, _, page := get("http://" + addr + string(link))
		status, ctype, img := get("http://" + addr + "/basemap.png?bbox=151.0,-33.85,151.2,-33.75&w=400&h=300")
		if !configured {
			if !bytes.Contains(page, []byte("No basemap configured")) || bytes.Contains(page, []byte(`data-basemap="true"`)) {
				t.Errorf("without SITEENV_BASEMAP the page does not say no basemap is configured:\n%s", page)
			}
			if status != http.StatusNotFound {
				t.Errorf("without SITEENV_BASEMAP /basemap.png answers %d", status)
			}
		} else {
			if !bytes.Contains(page, []byte("© Review Cmd Basemap")) || !bytes.Contains(page, []byte(`data-basemap="true"`)) {
				t.Errorf("with SITEENV_BASEMAP the page does not name the basemap:\n%s", page)
			}
			if status != http.StatusOK || ctype != "image/png" {
				t.Fatalf("with SITEENV_BASEMAP /basemap.png answers %d %s", status, ctype)
			}
			m, err := png.Decode(bytes.NewReader(img))
			if err != nil {
				t.Fatal(err)
			}
			// The lake covers the whole box: its colour at the centre.
			water := color.NRGBA{R: 0xb9, G: 0xd6, B: 0xe6, A: 0xff}
			if c := color.NRGBAModel.Convert(m.At(200, 150)).(color.NRGBA); c != water {
				t.Errorf("basemap image centre %v, want the lake's %v", c, water)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("review: %v", err)
		}
	}
}
