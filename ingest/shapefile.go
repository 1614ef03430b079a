package ingest

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"siteenv/geo"
	"siteenv/tiles"
)

// shpSet opens the member files of one Shapefile (.shp, .shx, .dbf, .prj,
// .cpg), from a directory or from inside a zip.
type shpSet struct {
	// open returns a member by extension (lower case, with the dot), its
	// size, or an error matching fs.ErrNotExist.
	open  func(ext string) (io.ReadCloser, int64, error)
	close func() error
}

// shpSetFromPath opens the Shapefile whose .shp is p: its siblings share
// its base name (any case of the extensions).
func shpSetFromPath(p string) (*shpSet, error) {
	dir, base := filepath.Dir(p), filepath.Base(p)
	stem := base[:len(base)-len(filepath.Ext(base))]
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, e := range entries {
		n := e.Name()
		ext := strings.ToLower(filepath.Ext(n))
		if n[:len(n)-len(ext)] == stem && !e.IsDir() {
			names[ext] = filepath.Join(dir, n)
		}
	}
	names[".shp"] = p
	return &shpSet{
		open: func(ext string) (io.ReadCloser, int64, error) {
			n, ok := names[ext]
			if !ok {
				return nil, 0, fmt.Errorf("%w: no %s beside the .shp", fs.ErrNotExist, ext)
			}
			f, err := os.Open(n)
			if err != nil {
				return nil, 0, err
			}
			st, err := f.Stat()
			if err != nil {
				f.Close()
				return nil, 0, err
			}
			return f, st.Size(), nil
		},
		close: func() error { return nil },
	}, nil
}

// shpSetFromZip opens the one Shapefile inside a zip (in any folder of it;
// macOS resource forks are ignored). A zip with no .shp or with more than
// one is refused: one zip, one layer.
func shpSetFromZip(p string) (*shpSet, error) {
	zr, err := zip.OpenReader(p)
	if err != nil {
		return nil, fmt.Errorf("not a readable zip: %w", err)
	}
	var shps []string
	members := map[string]*zip.File{}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || strings.HasPrefix(f.Name, "__MACOSX/") || strings.HasPrefix(path.Base(f.Name), "._") {
			continue
		}
		ext := strings.ToLower(path.Ext(f.Name))
		key := strings.ToLower(f.Name[:len(f.Name)-len(ext)]) + ext
		members[key] = f
		if ext == ".shp" {
			shps = append(shps, f.Name)
		}
	}
	switch len(shps) {
	case 0:
		zr.Close()
		return nil, errors.New("the zip holds no .shp")
	case 1:
	default:
		zr.Close()
		sort.Strings(shps)
		return nil, fmt.Errorf("the zip holds %d shapefiles (%s): give one zip per layer, or unzip it and name the .shp", len(shps), strings.Join(shps, ", "))
	}
	stem := strings.ToLower(shps[0][:len(shps[0])-4])
	return &shpSet{
		open: func(ext string) (io.ReadCloser, int64, error) {
			f, ok := members[stem+ext]
			if !ok {
				return nil, 0, fmt.Errorf("%w: no %s beside %s in the zip", fs.ErrNotExist, ext, shps[0])
			}
			rc, err := f.Open()
			if err != nil {
				return nil, 0, err
			}
			return rc, int64(f.UncompressedSize64), nil
		},
		close: zr.Close,
	}, nil
}

// readAllMember reads a small optional member (.prj, .cpg, .shx); ok is
// false when it is absent.
func (s *shpSet) readAll(ext string, max int64) (b []byte, ok bool, err error) {
	rc, size, err := s.open(ext)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer rc.Close()
	if size > max {
		return nil, true, fmt.Errorf("%s is larger than %d bytes", ext, max)
	}
	b, err = io.ReadAll(io.LimitReader(rc, max))
	return b, true, err
}

// readShapefile streams the features of a Shapefile (in.name is the .shp
// or a .zip holding one) into f.
// openShpSet opens a Shapefile input: a .shp with its siblings, or a zip.
func openShpSet(in input) (*shpSet, error) {
	if in.format == formatZip {
		return shpSetFromZip(in.name)
	}
	return shpSetFromPath(in.name)
}

// openDBF opens a Shapefile's table and reads its header, mapping its
// fields to schema's (see readDBFHeader); the reader is left at the first
// record. The caller closes the closer.
func openDBF(set *shpSet, schema tiles.FieldSchema, idProp string) (*dbfTable, *bufio.Reader, io.Closer, error) {
	cpg, hasCPG, err := set.readAll(".cpg", 1<<10)
	if err != nil {
		return nil, nil, nil, err
	}
	dbf, dbfSize, err := set.open(".dbf")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, errors.New("no .dbf: a Shapefile is the .shp, .shx and .dbf together")
	}
	if err != nil {
		return nil, nil, nil, err
	}
	dr := bufio.NewReaderSize(dbf, 1<<20)
	peek, err := dr.Peek(32)
	if err != nil {
		dbf.Close()
		return nil, nil, nil, errors.New(".dbf: truncated header")
	}
	decode, err := codePage(string(cpg), hasCPG, peek[29])
	if err != nil {
		dbf.Close()
		return nil, nil, nil, err
	}
	table, err := readDBFHeader(dr, dbfSize, decode, schema, idProp)
	if err != nil {
		dbf.Close()
		return nil, nil, nil, err
	}
	return table, dr, dbf, nil
}

func readShapefile(ctx context.Context, cfg *config, in input, src *source, f *feeder) error {
	set, err := openShpSet(in)
	if err != nil {
		return err
	}
	defer set.close()

	// The .shp header: shape type and bounding box.
	shp, shpSize, err := set.open(".shp")
	if err != nil {
		return err
	}
	defer shp.Close()
	br := bufio.NewReaderSize(shp, 1<<20)
	var hdr [100]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return errors.New(".shp: truncated: shorter than its 100-byte header")
	}
	if binary.BigEndian.Uint32(hdr[0:]) != 9994 || binary.LittleEndian.Uint32(hdr[28:]) != 1000 {
		return errors.New(".shp: not a Shapefile (bad file code or version)")
	}
	declared := int64(binary.BigEndian.Uint32(hdr[24:])) * 2
	if declared > shpSize {
		return fmt.Errorf(".shp: truncated: the header says %d bytes, the file has %d", declared, shpSize)
	}
	fileType := int32(binary.LittleEndian.Uint32(hdr[32:]))
	if k := shpKind(fileType); k < 0 || k == shpMultiPatch {
		return fmt.Errorf(".shp: shape type %d is not supported (points, multipoints, polylines and polygons are)", fileType)
	}
	le := binary.LittleEndian
	box := [4]float64{math.Float64frombits(le.Uint64(hdr[36:])), math.Float64frombits(le.Uint64(hdr[44:])),
		math.Float64frombits(le.Uint64(hdr[52:])), math.Float64frombits(le.Uint64(hdr[60:]))}

	// CRS: the .prj decides, and must agree with --source-crs.
	prj, hasPRJ, err := set.readAll(".prj", 64<<10)
	if err != nil {
		return err
	}
	var fileCRS geo.CRS
	if hasPRJ {
		if fileCRS, err = geo.CRSFromWKT(strings.TrimSpace(string(prj))); err != nil {
			return fmt.Errorf(".prj: %w", err)
		}
	}
	if src.crs, err = cfg.reconcileCRS(".prj", hasPRJ, fileCRS); err != nil {
		return err
	}
	if !hasPRJ && !cfg.crsGiven && fileType != shpNull && !lonLatBox(box[0], box[1], box[2], box[3]) {
		return &MissingCRSError{What: "no .prj and no --source-crs"}
	}

	// The index: the record count, checked against the table.
	shx, shxSize, err := set.open(".shx")
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("no .shx: a Shapefile is the .shp, .shx and .dbf together")
	}
	if err != nil {
		return err
	}
	var shxHdr [100]byte
	_, err = io.ReadFull(shx, shxHdr[:])
	shx.Close()
	if err != nil || binary.BigEndian.Uint32(shxHdr[0:]) != 9994 || (shxSize-100)%8 != 0 ||
		int64(binary.BigEndian.Uint32(shxHdr[24:]))*2 != shxSize {
		return errors.New(".shx: truncated or not a Shapefile index")
	}
	shxRecords := (shxSize - 100) / 8

	// The table.
	table, dr, dbf, err := openDBF(set, cfg.own, cfg.IDProperty)
	if err != nil {
		return err
	}
	defer dbf.Close()
	if table.records != shxRecords {
		return fmt.Errorf("the .dbf has %d records and the .shx %d: the files do not belong together", table.records, shxRecords)
	}

	rec := make([]byte, table.recordLen)
	var content []byte
	pos := int64(100)
	for row := int64(1); row <= table.records; row++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var rh [8]byte
		if _, err := io.ReadFull(br, rh[:]); err != nil {
			return fmt.Errorf(".shp: truncated: record %d of %d is missing", row, table.records)
		}
		n := int64(binary.BigEndian.Uint32(rh[4:])) * 2
		if pos+8+n > declared {
			return fmt.Errorf(".shp: truncated or corrupt: record %d runs past the end of the file", row)
		}
		if int64(cap(content)) < n {
			content = make([]byte, n)
		}
		content = content[:n]
		if _, err := io.ReadFull(br, content); err != nil {
			return fmt.Errorf(".shp: truncated: record %d is cut short", row)
		}
		pos += 8 + n
		f.read.Add(8 + n + int64(table.recordLen))
		if _, err := io.ReadFull(dr, rec); err != nil {
			return fmt.Errorf(".dbf: truncated: record %d is missing", row)
		}
		props, deleted, perr := table.record(rec)
		if deleted {
			continue
		}
		if perr != nil {
			if err := f.add(item{src: src, row: row, kind: kindReject, reason: perr.Error()}); err != nil {
				return err
			}
			continue
		}
		g, gerr := decodeShape(content, fileType, cfg.MaxVertices)
		if gerr != nil {
			if err := f.add(item{src: src, row: row, kind: kindReject, reason: gerr.Error()}); err != nil {
				return err
			}
			continue
		}
		if err := f.add(item{src: src, row: row, kind: kindFeature, feat: tiles.Feature{Geometry: g, Properties: props}}); err != nil {
			return err
		}
	}
	if pos < declared {
		return fmt.Errorf(".shp: holds more records than the .dbf's %d", table.records)
	}
	return nil
}
