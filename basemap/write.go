package basemap

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/maptile"
)

// Write writes tiles (each tile's layers, in lon/lat) as a PMTiles v3
// archive: gzip-compressed MVT tiles, a root directory and leaf
// directories as the format asks, metadata naming the attribution.
// The output is the same for the same input.
func Write(w io.Writer, tiles map[maptile.Tile]mvt.Layers, name, attribution string) error {
	keys := make([]maptile.Tile, 0, len(tiles))
	for t := range tiles {
		keys = append(keys, t)
	}
	id := func(t maptile.Tile) uint64 { return tileID(uint8(t.Z), t.X, t.Y) }
	slices.SortFunc(keys, func(a, b maptile.Tile) int {
		switch ia, ib := id(a), id(b); {
		case ia < ib:
			return -1
		case ia > ib:
			return 1
		}
		return 0
	})
	var data bytes.Buffer
	var entries []entry
	minZ, maxZ := uint8(255), uint8(0)
	for _, t := range keys {
		ls := tiles[t]
		// Marshal projects in place: work on a copy.
		cp := make(mvt.Layers, len(ls))
		for i, l := range ls {
			l2 := *l
			l2.Features = slices.Clone(l.Features)
			for j, f := range l2.Features {
				f2 := *f
				f2.Geometry = cloneGeometry(f.Geometry)
				l2.Features[j] = &f2
			}
			cp[i] = &l2
		}
		cp.ProjectToTile(t)
		cp.Clip(mvt.MapboxGLDefaultExtentBound)
		raw, err := mvt.Marshal(cp)
		if err != nil {
			return fmt.Errorf("basemap: tile %d/%d/%d: %w", t.Z, t.X, t.Y, err)
		}
		gz := gzipped(raw)
		entries = append(entries, entry{TileID: id(t), Offset: uint64(data.Len()), Length: uint32(len(gz)), RunLength: 1})
		data.Write(gz)
		minZ, maxZ = min(minZ, uint8(t.Z)), max(maxZ, uint8(t.Z))
	}
	if len(entries) == 0 {
		return fmt.Errorf("basemap: no tiles to write")
	}
	// The root directory must fit the archive's first 16 KiB: beyond a few
	// thousand tiles, the entries go to leaf directories the root points to.
	root := gzipped(encodeEntries(entries))
	var leaves bytes.Buffer
	for size := 4096; len(root) > rootMax; size /= 2 {
		leaves.Reset()
		var rootEntries []entry
		for i := 0; i < len(entries); i += size {
			leaf := gzipped(encodeEntries(entries[i:min(i+size, len(entries))]))
			rootEntries = append(rootEntries, entry{TileID: entries[i].TileID, Offset: uint64(leaves.Len()), Length: uint32(len(leaf))})
			leaves.Write(leaf)
		}
		root = gzipped(encodeEntries(rootEntries))
	}
	rawMeta, err := json.Marshal(map[string]any{"name": name, "attribution": attribution, "vector_layers": []any{}})
	if err != nil {
		return err
	}
	meta := gzipped(rawMeta)
	lo, hi := keys[0].Bound(), keys[0].Bound()
	for _, t := range keys {
		b := t.Bound()
		lo = lo.Union(b)
		hi = hi.Union(b)
	}
	h := header{Clustered: true, InternalCompression: compressionGzip, TileCompression: compressionGzip,
		TileType: tileTypeMVT, MinZoom: minZ, MaxZoom: maxZ,
		AddressedTiles: uint64(len(entries)), TileEntries: uint64(len(entries)), TileContents: uint64(len(entries)),
		MinLonE7: int32(lo.Min[0] * 1e7), MinLatE7: int32(lo.Min[1] * 1e7), MaxLonE7: int32(lo.Max[0] * 1e7), MaxLatE7: int32(lo.Max[1] * 1e7),
		CenterZoom: maxZ, CenterLonE7: int32(lo.Center()[0] * 1e7), CenterLatE7: int32(lo.Center()[1] * 1e7)}
	h.RootOffset = headerLen
	h.RootLength = uint64(len(root))
	h.MetadataOffset = h.RootOffset + h.RootLength
	h.MetadataLength = uint64(len(meta))
	h.LeafOffset = h.MetadataOffset + h.MetadataLength
	h.LeafLength = uint64(leaves.Len())
	h.DataOffset = h.LeafOffset + h.LeafLength
	h.DataLength = uint64(data.Len())
	for _, b := range [][]byte{h.encode(), root, meta, leaves.Bytes(), data.Bytes()} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// rootMax is the most a root directory may take: the archive's first 16 KiB
// hold the header and it (a variable so a test can ask for leaves).
var rootMax = 16384 - headerLen

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}
