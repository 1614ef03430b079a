package basemap

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"
	"github.com/protomaps/go-pmtiles/pmtiles"
)

// TestCodecMatchesGoPMTiles: the header, directory and tile id encodings
// agree with go-pmtiles, the reference implementation, both ways: ids for
// every tile to zoom 8 and random deep ones, directories of random
// entries, and an archive Write makes read back by go-pmtiles tile by tile.
func TestCodecMatchesGoPMTiles(t *testing.T) {
	// Not parallel: it shrinks rootMax so the archive needs leaves.
	for z := uint8(0); z <= 8; z++ {
		for x := uint32(0); x < 1<<z; x++ {
			for y := uint32(0); y < 1<<z; y++ {
				if got, want := tileID(z, x, y), pmtiles.ZxyToID(z, x, y); got != want {
					t.Fatalf("tileID(%d, %d, %d) = %d, go-pmtiles %d", z, x, y, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		z := uint8(9 + rng.IntN(17))
		x, y := rng.Uint32N(1<<z), rng.Uint32N(1<<z)
		if got, want := tileID(z, x, y), pmtiles.ZxyToID(z, x, y); got != want {
			t.Fatalf("tileID(%d, %d, %d) = %d, go-pmtiles %d", z, x, y, got, want)
		}
	}
	var es []entry
	var ref []pmtiles.EntryV3
	id, off := uint64(0), uint64(0)
	for range 3000 {
		id += 1 + uint64(rng.IntN(50))
		e := entry{TileID: id, Offset: off, Length: uint32(1 + rng.IntN(5000)), RunLength: uint32(rng.IntN(3))}
		if rng.IntN(4) == 0 {
			e.Offset += 7 // not right after the previous one
		}
		off = e.Offset + uint64(e.Length)
		es = append(es, e)
		ref = append(ref, pmtiles.EntryV3{TileID: e.TileID, Offset: e.Offset, Length: e.Length, RunLength: e.RunLength})
	}
	if !bytes.Equal(encodeEntries(es), gunzipped(t, pmtiles.SerializeEntries(ref, pmtiles.Gzip))) {
		t.Fatal("encodeEntries differs from go-pmtiles' SerializeEntries")
	}
	back := pmtiles.DeserializeEntries(bytes.NewBuffer(gzipped(encodeEntries(es))), pmtiles.Gzip)
	got, err := decodeEntries(encodeEntries(es))
	if err != nil || len(back) != len(es) || len(got) != len(es) {
		t.Fatalf("decoded %d and %d entries of %d: %v", len(back), len(got), len(es), err)
	}
	for i := range es {
		if got[i] != es[i] || back[i] != ref[i] {
			t.Fatalf("entry %d: %+v, go-pmtiles %+v, want %+v", i, got[i], back[i], es[i])
		}
	}

	// An archive of 5,000 tiles (leaf directories) read by go-pmtiles.
	tiles := map[maptile.Tile]mvt.Layers{}
	for x := uint32(0); x < 100; x++ {
		for y := uint32(0); y < 50; y++ {
			tl := maptile.New(60000+x, 40000+y, 16)
			f := geojson.NewFeature(tl.Center())
			f.Properties["name"] = "p"
			c := geojson.NewFeatureCollection()
			c.Append(f)
			tiles[tl] = mvt.Layers{mvt.NewLayer("places", c)}
		}
	}
	var buf bytes.Buffer
	rootMax = 60
	defer func() { rootMax = 16384 - headerLen }()
	if err := Write(&buf, tiles, "t", "a"); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	h, err := pmtiles.DeserializeHeader(raw[:headerLen])
	if err != nil || h.LeafDirectoryLength == 0 || h.RootLength > 60 || h.MaxZoom != 16 {
		t.Fatalf("go-pmtiles reads the header %+v: %v", h, err)
	}
	if ours, _ := decodeHeader(raw); !bytes.Equal(ours.encode(), pmtiles.SerializeHeader(h)) {
		t.Fatal("the header differs from go-pmtiles' reading of it")
	}
	root := pmtiles.DeserializeEntries(bytes.NewBuffer(raw[h.RootOffset:h.RootOffset+h.RootLength]), pmtiles.Gzip)
	a, err := Open(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for tl := range tiles {
		tid := pmtiles.ZxyToID(uint8(tl.Z), tl.X, tl.Y)
		e, ok := pmtiles.FindTile(root, tid)
		if ok && e.RunLength == 0 {
			leaf := pmtiles.DeserializeEntries(bytes.NewBuffer(raw[h.LeafDirectoryOffset+e.Offset:h.LeafDirectoryOffset+e.Offset+uint64(e.Length)]), pmtiles.Gzip)
			e, ok = pmtiles.FindTile(leaf, tid)
		}
		if !ok {
			t.Fatalf("go-pmtiles finds no tile %v", tl)
		}
		refTile := gunzipped(t, raw[h.TileDataOffset+e.Offset:h.TileDataOffset+e.Offset+uint64(e.Length)])
		ourTile, err := a.Tile(tl)
		if err != nil || !bytes.Equal(refTile, ourTile) {
			t.Fatalf("tile %v: ours %d bytes, go-pmtiles %d: %v", tl, len(ourTile), len(refTile), err)
		}
		ls, err := mvt.Unmarshal(ourTile)
		if err != nil || len(ls) != 1 || len(ls[0].Features) != 1 {
			t.Fatalf("tile %v decodes to %v: %v", tl, ls, err)
		}
	}
	if _, err := Open(bytes.NewReader(append([]byte("PMTiles\x02"), make([]byte, 200)...))); err == nil {
		t.Error("a version 2 archive opened")
	}
}

func gunzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
