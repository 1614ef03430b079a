// Package basemap reads a vector-tile basemap from a PMTiles v3 archive
// (its header and directories in pmtiles.go, checked against
// github.com/protomaps/go-pmtiles; orb's encoding/mvt for the tiles) laid out in the Protomaps basemap layer schema
// (earth, water, landuse, roads, places...), for the maps under a report's
// records. It knows no store: the caller opens the archive (a file, an
// object in the store) as an io.ReaderAt.
package basemap

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/maptile"
)

// ErrInvalid is a file that is not a PMTiles v3 archive of vector tiles.
var ErrInvalid = errors.New("basemap: not a PMTiles v3 archive of MVT tiles")

// Archive is an open basemap archive. Safe for concurrent use; decoded
// tiles are cached (a report draws the same few tiles on every map).
type Archive struct {
	r       io.ReaderAt
	h       header
	root    []entry
	attrib  string
	name    string
	version string

	mu struct {
		sync.Mutex
		tiles map[maptile.Tile]mvt.Layers
		order []maptile.Tile
	}
}

// maxCached is how many decoded tiles an Archive keeps.
const maxCached = 256

// Open reads the archive's header, root directory and metadata.
func Open(r io.ReaderAt) (*Archive, error) {
	head := make([]byte, headerLen)
	if _, err := r.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("basemap: header: %w", err)
	}
	h, err := decodeHeader(head)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.TileType != tileTypeMVT {
		return nil, fmt.Errorf("%w: tile type %d", ErrInvalid, h.TileType)
	}
	sum := sha256.Sum256(head)
	a := &Archive{r: r, h: h, version: hex.EncodeToString(sum[:12])}
	a.mu.tiles = map[maptile.Tile]mvt.Layers{}
	if a.root, err = a.directory(h.RootOffset, h.RootLength); err != nil {
		return nil, err
	}
	if h.MetadataLength > 0 {
		raw, err := a.read(h.MetadataOffset, h.MetadataLength)
		if err != nil {
			return nil, err
		}
		if h.InternalCompression == compressionGzip {
			if raw, err = gunzip(raw); err != nil {
				return nil, fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
			}
		}
		var meta map[string]any
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
		}
		a.attrib, _ = meta["attribution"].(string)
		a.name, _ = meta["name"].(string)
	}
	return a, nil
}

// Attribution is what the archive's metadata asks to be printed with the
// map (its "attribution"), with any HTML tags removed; "" when none.
func (a *Archive) Attribution() string { return stripTags(a.attrib) }

// Version identifies the archive's content: a hash of its header, which
// holds the offsets and lengths of its directories, metadata and tiles.
func (a *Archive) Version() string { return a.version }

// MaxZoom is the archive's deepest zoom.
func (a *Archive) MaxZoom() int { return int(a.h.MaxZoom) }

func (a *Archive) read(off, n uint64) ([]byte, error) {
	if n > 64<<20 {
		return nil, fmt.Errorf("%w: a %d-byte block", ErrInvalid, n)
	}
	b := make([]byte, n)
	if _, err := a.r.ReadAt(b, int64(off)); err != nil {
		return nil, fmt.Errorf("basemap: read %d bytes at %d: %w", n, off, err)
	}
	return b, nil
}

func (a *Archive) directory(off, n uint64) ([]entry, error) {
	raw, err := a.read(off, n)
	if err != nil {
		return nil, err
	}
	if a.h.InternalCompression == compressionGzip {
		if raw, err = gunzip(raw); err != nil {
			return nil, fmt.Errorf("%w: directory: %v", ErrInvalid, err)
		}
	}
	es, err := decodeEntries(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return es, nil
}

// Tile returns the tile's MVT bytes (decompressed), or nil when the archive
// holds no such tile.
func (a *Archive) Tile(t maptile.Tile) ([]byte, error) {
	id := tileID(uint8(t.Z), t.X, t.Y)
	dir := a.root
	off, n := uint64(0), uint64(0)
	for depth := 0; depth < 4; depth++ {
		e, ok := findTile(dir, id)
		if !ok {
			return nil, nil
		}
		if e.RunLength > 0 {
			off, n = a.h.DataOffset+e.Offset, uint64(e.Length)
			break
		}
		var err error
		if dir, err = a.directory(a.h.LeafOffset+e.Offset, uint64(e.Length)); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, nil
	}
	raw, err := a.read(off, n)
	if err != nil {
		return nil, err
	}
	if a.h.TileCompression == compressionGzip {
		return gunzip(raw)
	}
	return raw, nil
}

// Layers returns the decoded layers of the tiles at zoom z (at most the
// archive's deepest) covering b, in lon/lat (WGS84, which GDA2020 matches
// to a metre or two at map scale), tile by tile.
func (a *Archive) Layers(b orb.Bound, z int) ([]mvt.Layers, error) {
	z = max(int(a.h.MinZoom), min(z, int(a.h.MaxZoom)))
	lo := maptile.At(orb.Point{b.Min[0], b.Max[1]}, maptile.Zoom(z))
	hi := maptile.At(orb.Point{b.Max[0], b.Min[1]}, maptile.Zoom(z))
	if (hi.X-lo.X+1)*(hi.Y-lo.Y+1) > 64 {
		return nil, nil // a map this wide asks for a zoom the caller should lower
	}
	var out []mvt.Layers
	for x := lo.X; x <= hi.X; x++ {
		for y := lo.Y; y <= hi.Y; y++ {
			ls, err := a.layers(maptile.New(x, y, maptile.Zoom(z)))
			if err != nil {
				return nil, err
			}
			if ls != nil {
				out = append(out, ls)
			}
		}
	}
	return out, nil
}

func (a *Archive) layers(t maptile.Tile) (mvt.Layers, error) {
	a.mu.Lock()
	ls, ok := a.mu.tiles[t]
	a.mu.Unlock()
	if ok {
		return ls, nil
	}
	raw, err := a.Tile(t)
	if err != nil || raw == nil {
		return nil, err
	}
	ls, err = mvt.Unmarshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: tile %d/%d/%d: %v", ErrInvalid, t.Z, t.X, t.Y, err)
	}
	ls.ProjectToWGS84(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.mu.order) >= maxCached {
		delete(a.mu.tiles, a.mu.order[0])
		a.mu.order = a.mu.order[1:]
	}
	a.mu.tiles[t] = ls
	a.mu.order = append(a.mu.order, t)
	return ls, nil
}

// ZoomFor is the zoom whose tiles carry the detail of a map at
// metresPerPixel at latitude lat (a 512-pixel tile's resolution, as
// Protomaps' styles use it).
func ZoomFor(metresPerPixel, lat float64) int {
	z := math.Log2(40075016.686 * math.Cos(lat*math.Pi/180) / 512 / metresPerPixel)
	return max(0, min(15, int(math.Round(z))))
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(io.LimitReader(zr, 64<<20))
}

func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
