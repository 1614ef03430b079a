package basemap

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The PMTiles v3 encodings this package needs, after the specification
// (github.com/protomaps/PMTiles, spec/v3/spec.md): the 127-byte header, the
// varint directories and Hilbert tile ids. TestCodecMatchesGoPMTiles holds
// them to github.com/protomaps/go-pmtiles, the reference implementation,
// which is not linked here: its one package also carries cloud bucket
// clients whose init starts a goroutine (opencensus) in every process that
// imports it, and adds 26 MB to the binary.

const headerLen = 127

// Compression and tile type codes of the header.
const (
	compressionNone = 1
	compressionGzip = 2
	tileTypeMVT     = 1
)

// header is a PMTiles v3 header.
type header struct {
	RootOffset, RootLength         uint64
	MetadataOffset, MetadataLength uint64
	LeafOffset, LeafLength         uint64
	DataOffset, DataLength         uint64
	AddressedTiles, TileEntries    uint64
	TileContents                   uint64
	Clustered                      bool
	InternalCompression            uint8
	TileCompression                uint8
	TileType                       uint8
	MinZoom, MaxZoom               uint8
	MinLonE7, MinLatE7             int32
	MaxLonE7, MaxLatE7             int32
	CenterZoom                     uint8
	CenterLonE7, CenterLatE7       int32
}

func (h header) encode() []byte {
	b := make([]byte, headerLen)
	copy(b, "PMTiles")
	b[7] = 3
	le := binary.LittleEndian
	for i, v := range []uint64{h.RootOffset, h.RootLength, h.MetadataOffset, h.MetadataLength, h.LeafOffset, h.LeafLength,
		h.DataOffset, h.DataLength, h.AddressedTiles, h.TileEntries, h.TileContents} {
		le.PutUint64(b[8+8*i:], v)
	}
	if h.Clustered {
		b[96] = 1
	}
	b[97], b[98], b[99], b[100], b[101] = h.InternalCompression, h.TileCompression, h.TileType, h.MinZoom, h.MaxZoom
	for i, v := range []int32{h.MinLonE7, h.MinLatE7, h.MaxLonE7, h.MaxLatE7} {
		le.PutUint32(b[102+4*i:], uint32(v))
	}
	b[118] = h.CenterZoom
	le.PutUint32(b[119:], uint32(h.CenterLonE7))
	le.PutUint32(b[123:], uint32(h.CenterLatE7))
	return b
}

func decodeHeader(b []byte) (header, error) {
	if len(b) < headerLen || string(b[:7]) != "PMTiles" {
		return header{}, errors.New("no PMTiles magic")
	}
	if b[7] != 3 {
		return header{}, fmt.Errorf("PMTiles version %d, want 3", b[7])
	}
	le := binary.LittleEndian
	u := func(i int) uint64 { return le.Uint64(b[8+8*i:]) }
	i32 := func(o int) int32 { return int32(le.Uint32(b[o:])) }
	return header{RootOffset: u(0), RootLength: u(1), MetadataOffset: u(2), MetadataLength: u(3), LeafOffset: u(4), LeafLength: u(5),
		DataOffset: u(6), DataLength: u(7), AddressedTiles: u(8), TileEntries: u(9), TileContents: u(10), Clustered: b[96] == 1,
		InternalCompression: b[97], TileCompression: b[98], TileType: b[99], MinZoom: b[100], MaxZoom: b[101],
		MinLonE7: i32(102), MinLatE7: i32(106), MaxLonE7: i32(110), MaxLatE7: i32(114), CenterZoom: b[118],
		CenterLonE7: i32(119), CenterLatE7: i32(123)}, nil
}

// entry is a directory entry: a run of RunLength tiles from TileID at
// Offset (into the tile data) of Length bytes, or with RunLength 0 a leaf
// directory at Offset (into the leaf directories).
type entry struct {
	TileID    uint64
	Offset    uint64
	Length    uint32
	RunLength uint32
}

// encodeEntries is a directory before its internal compression: the count,
// then the tile ids as deltas, the run lengths, the lengths and the
// offsets (0: right after the previous entry's bytes, else offset+1).
func encodeEntries(es []entry) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(es)))
	last := uint64(0)
	for _, e := range es {
		b = binary.AppendUvarint(b, e.TileID-last)
		last = e.TileID
	}
	for _, e := range es {
		b = binary.AppendUvarint(b, uint64(e.RunLength))
	}
	for _, e := range es {
		b = binary.AppendUvarint(b, uint64(e.Length))
	}
	for i, e := range es {
		if i > 0 && e.Offset == es[i-1].Offset+uint64(es[i-1].Length) {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = binary.AppendUvarint(b, e.Offset+1)
		}
	}
	return b
}

func decodeEntries(b []byte) ([]entry, error) {
	r := bufio.NewReader(bytes.NewReader(b))
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(len(b)) {
		return nil, fmt.Errorf("directory: bad entry count")
	}
	es := make([]entry, n)
	next := func() uint64 {
		v, e := binary.ReadUvarint(r)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	last := uint64(0)
	for i := range es {
		last += next()
		es[i].TileID = last
	}
	for i := range es {
		es[i].RunLength = uint32(next())
	}
	for i := range es {
		es[i].Length = uint32(next())
	}
	for i := range es {
		v := next()
		if v == 0 && i > 0 {
			es[i].Offset = es[i-1].Offset + uint64(es[i-1].Length)
		} else {
			es[i].Offset = v - 1
		}
	}
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	return es, nil
}

// findTile is the entry holding id: an exact entry, a run covering it, or
// the leaf directory whose range it falls in.
func findTile(es []entry, id uint64) (entry, bool) {
	lo, hi := 0, len(es)-1
	for lo <= hi {
		k := (lo + hi) / 2
		switch {
		case id > es[k].TileID:
			lo = k + 1
		case id < es[k].TileID:
			hi = k - 1
		default:
			return es[k], true
		}
	}
	if hi >= 0 && (es[hi].RunLength == 0 || id-es[hi].TileID < uint64(es[hi].RunLength)) {
		return es[hi], true
	}
	return entry{}, false
}

// tileID is the tile's id: the tiles of lower zooms counted, then its
// position along the Hilbert curve over its zoom.
func tileID(z uint8, x, y uint32) uint64 {
	acc := (uint64(1)<<(2*uint64(z)) - 1) / 3
	for s := uint32(1) << z >> 1; s > 0; s >>= 1 {
		rx, ry := uint32(0), uint32(0)
		if x&s != 0 {
			rx = 1
		}
		if y&s != 0 {
			ry = 1
		}
		acc += uint64(s) * uint64(s) * uint64((3*rx)^ry)
		// Rotate the quadrant.
		if ry == 0 {
			if rx == 1 {
				x, y = s-1-x, s-1-y
			}
			x, y = y, x
		}
	}
	return acc
}
