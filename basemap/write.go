package basemap

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"slices"

	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/maptile"
	"github.com/protomaps/go-pmtiles/pmtiles"
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
	id := func(t maptile.Tile) uint64 { return pmtiles.ZxyToID(uint8(t.Z), t.X, t.Y) }
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
	var entries []pmtiles.EntryV3
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
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(raw)
		zw.Close()
		entries = append(entries, pmtiles.EntryV3{TileID: id(t), Offset: uint64(data.Len()), Length: uint32(gz.Len()), RunLength: 1})
		data.Write(gz.Bytes())
		minZ, maxZ = min(minZ, uint8(t.Z)), max(maxZ, uint8(t.Z))
	}
	if len(entries) == 0 {
		return fmt.Errorf("basemap: no tiles to write")
	}
	// The root directory must fit the archive's first 16 KiB: beyond a few
	// thousand tiles, the entries go to leaf directories the root points to.
	root := pmtiles.SerializeEntries(entries, pmtiles.Gzip)
	var leaves bytes.Buffer
	for size := 4096; len(root) > 16384-pmtiles.HeaderV3LenBytes; size /= 2 {
		leaves.Reset()
		var rootEntries []pmtiles.EntryV3
		for i := 0; i < len(entries); i += size {
			leaf := pmtiles.SerializeEntries(entries[i:min(i+size, len(entries))], pmtiles.Gzip)
			rootEntries = append(rootEntries, pmtiles.EntryV3{TileID: entries[i].TileID, Offset: uint64(leaves.Len()), Length: uint32(len(leaf))})
			leaves.Write(leaf)
		}
		root = pmtiles.SerializeEntries(rootEntries, pmtiles.Gzip)
	}
	meta, err := pmtiles.SerializeMetadata(map[string]any{"name": name, "attribution": attribution, "vector_layers": []any{}}, pmtiles.Gzip)
	if err != nil {
		return err
	}
	lo, hi := keys[0].Bound(), keys[0].Bound()
	for _, t := range keys {
		b := t.Bound()
		lo = lo.Union(b)
		hi = hi.Union(b)
	}
	h := pmtiles.HeaderV3{SpecVersion: 3, Clustered: true, InternalCompression: pmtiles.Gzip, TileCompression: pmtiles.Gzip,
		TileType: pmtiles.Mvt, MinZoom: minZ, MaxZoom: maxZ,
		AddressedTilesCount: uint64(len(entries)), TileEntriesCount: uint64(len(entries)), TileContentsCount: uint64(len(entries)),
		MinLonE7: int32(lo.Min[0] * 1e7), MinLatE7: int32(lo.Min[1] * 1e7), MaxLonE7: int32(lo.Max[0] * 1e7), MaxLatE7: int32(lo.Max[1] * 1e7),
		CenterZoom: maxZ, CenterLonE7: int32(lo.Center()[0] * 1e7), CenterLatE7: int32(lo.Center()[1] * 1e7)}
	h.RootOffset = pmtiles.HeaderV3LenBytes
	h.RootLength = uint64(len(root))
	h.MetadataOffset = h.RootOffset + h.RootLength
	h.MetadataLength = uint64(len(meta))
	h.LeafDirectoryOffset = h.MetadataOffset + h.MetadataLength
	h.LeafDirectoryLength = uint64(leaves.Len())
	h.TileDataOffset = h.LeafDirectoryOffset + h.LeafDirectoryLength
	h.TileDataLength = uint64(data.Len())
	for _, b := range [][]byte{pmtiles.SerializeHeader(h), root, meta, leaves.Bytes(), data.Bytes()} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
