package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"siteenv/store"
	"siteenv/tiles"
)

// Tiles are the leaves of a quadtree over the Hilbert key space: starting
// from the whole world, a square holding more than TileRows features is
// split into its four quarters, down to level histLevel, where a square
// still too full is cut into runs of TileRows features along the sort
// order. So a tile is a compact square (dense areas get small squares,
// sparse ones large), the plan depends only on the features' keys, and the
// same input always gives the same tiles whatever the memory budget. A tile
// is named after its square, z<level>_<x>_<y> (x from the west, y from the
// south), with _<n> for the runs of an over-full deepest square.

type tileSpec struct {
	name    string
	hi      uint64 // keys below hi (and at or above the previous spec's hi)
	chunked bool
}

// planTiles computes the tiles from the per-square counts at histLevel.
func planTiles(hist map[uint32]int64, tileRows int) []tileSpec {
	prefixes := make([]uint32, 0, len(hist))
	for p := range hist {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	cum := make([]int64, len(prefixes)+1)
	for i, p := range prefixes {
		cum[i+1] = cum[i] + hist[p]
	}
	var specs []tileSpec
	var plan func(level int, prefix uint64, lo, hi int)
	plan = func(level int, prefix uint64, lo, hi int) {
		n := cum[hi] - cum[lo]
		if n == 0 {
			return
		}
		if n <= int64(tileRows) || level == histLevel {
			x, y := hilbertD2XY(1<<level, prefix)
			specs = append(specs, tileSpec{
				name:    fmt.Sprintf("z%d_%d_%d", level, x, y),
				hi:      (prefix + 1) << (2 * (keyOrder - level)),
				chunked: n > int64(tileRows),
			})
			return
		}
		shift := 2 * (histLevel - level - 1)
		for c := uint64(0); c < 4; c++ {
			child := prefix*4 + c
			end := uint32((child + 1) << shift)
			j := lo + sort.Search(hi-lo, func(i int) bool { return prefixes[lo+i] >= end })
			plan(level+1, child, lo, j)
			lo = j
		}
	}
	plan(0, 0, 0, len(prefixes))
	return specs
}

// tileJob is one tile's records, in order.
type tileJob struct {
	idx  int
	name string
	recs [][]byte
	buf  []byte // holds copies of the records when the iterator reuses memory
}

// tileOut is a tile written to a temporary file.
type tileOut struct {
	name string
	path string
	info tiles.TileInfo
}

// writeTiles cuts the sorted records into tiles and writes them to files
// under dir, in parallel.
func writeTiles(ctx context.Context, cfg *config, srt *sorter, dir string, prog *progress) ([]tileOut, error) {
	specs := planTiles(srt.hist, cfg.TileRows)
	it, err := srt.finish()
	if err != nil {
		return nil, err
	}
	defer it.close()
	tileDir := filepath.Join(dir, "tiles")
	if err := os.Mkdir(tileDir, 0o700); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan *tileJob)
	var (
		mu   sync.Mutex
		outs []tileOut
		idxs []int
		wg   sync.WaitGroup
	)
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range jobs {
				out, err := writeTile(cfg, tileDir, job)
				if err != nil {
					cancel(err)
					continue
				}
				prog.tiles.Add(1)
				mu.Lock()
				outs = append(outs, out)
				idxs = append(idxs, job.idx)
				mu.Unlock()
			}
		}()
	}

	_, stable := it.(*memIter) // records stay put until the sorter goes
	cutErr := func() error {
		si, chunk, n := 0, 0, 0
		job := &tileJob{}
		send := func() error {
			if len(job.recs) == 0 {
				return nil
			}
			job.idx = n
			job.name = specs[si].name
			if specs[si].chunked {
				job.name = fmt.Sprintf("%s_%d", specs[si].name, chunk)
				chunk++
			}
			n++
			select {
			case jobs <- job:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			job = &tileJob{}
			return nil
		}
		var count int64
		for {
			rec, ok, err := it.next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			count++
			key := recordKey(rec)
			for si < len(specs) && key >= specs[si].hi {
				if err := send(); err != nil {
					return err
				}
				si, chunk = si+1, 0
			}
			if si == len(specs) {
				return errors.New("ingest: internal error: record beyond the tile plan")
			}
			if !stable {
				if len(job.buf)+len(rec) > cap(job.buf) {
					job.buf = make([]byte, 0, max(len(rec), 4<<20))
				}
				n := len(job.buf)
				job.buf = append(job.buf, rec...)
				rec = job.buf[n:len(job.buf):len(job.buf)]
			}
			job.recs = append(job.recs, rec)
			if specs[si].chunked && len(job.recs) == cfg.TileRows {
				if err := send(); err != nil {
					return err
				}
			}
		}
		if count != srt.count {
			return fmt.Errorf("ingest: internal error: sorted %d records, expected %d", count, srt.count)
		}
		return send()
	}()
	close(jobs)
	wg.Wait()
	if cutErr != nil {
		return nil, cutErr
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	// Tiles in plan order.
	order := make([]int, len(outs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return idxs[order[a]] < idxs[order[b]] })
	sorted := make([]tileOut, len(outs))
	for i, j := range order {
		sorted[i] = outs[j]
	}
	return sorted, nil
}

// writeTile decodes a job's records and writes them as a tile.
func writeTile(cfg *config, dir string, job *tileJob) (out tileOut, err error) {
	feats := make([]tiles.Feature, len(job.recs))
	for i, rec := range job.recs {
		if feats[i], err = decodeRecord(rec, cfg.schema); err != nil {
			return out, err
		}
	}
	path := filepath.Join(dir, job.name+".parquet")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return out, fmt.Errorf("ingest: tile %s: %w", job.name, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("ingest: tile %s: %w", job.name, cerr)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	info, err := tiles.WriteTile(w, cfg.schema, feats, tiles.WriterOptions{})
	if err != nil {
		return out, fmt.Errorf("ingest: tile %s: %w", job.name, err)
	}
	if err := w.Flush(); err != nil {
		return out, fmt.Errorf("ingest: tile %s: %w", job.name, err)
	}
	return tileOut{name: job.name, path: path, info: info}, nil
}

// publish builds the manifest, uploads the tiles and the manifest unless
// the release already exists, and publishes it.
func publish(ctx context.Context, cfg *config, outs []tileOut) (*tiles.Manifest, bool, error) {
	def := cfg.Layer
	units := map[string]*string{}
	for k, v := range def.Units {
		units[k] = v
	}
	m := &tiles.Manifest{
		FormatVersion: tiles.ManifestFormatVersion,
		LayerID:       def.LayerID,
		SchemaVersion: def.SchemaVersion,
		FieldSchema:   cfg.schema,
		Units:         units,
		Sources:       def.Sources,
		Coverage:      def.Coverage,
		CreatedBy:     cfg.CreatedBy,
		IngestedAt:    cfg.Clock().UTC(),
		Tiles:         make([]tiles.TileEntry, len(outs)),
	}
	for i, o := range outs {
		m.Tiles[i] = tiles.NewTileEntry(o.name, o.info)
		m.FeatureCount += int64(o.info.Rows)
		b := tiles.BoundToBBox(o.info.BBox)
		if m.BBox == nil {
			m.BBox = &b
		} else {
			u := tiles.BoundToBBox(m.BBox.Bound().Union(o.info.BBox))
			m.BBox = &u
		}
	}
	// The release id covers the tiles' hashes, and the tile keys contain
	// the release id: compute it first, then set the keys.
	id, err := tiles.ReleaseID(m)
	if err != nil {
		return nil, false, err
	}
	m.ReleaseID = id
	for i, o := range outs {
		m.Tiles[i].Key = tiles.TileKey(def.LayerID, id, o.name)
	}

	if err := m.Validate(); err != nil { // before uploading anything
		return nil, false, fmt.Errorf("ingest: %w", err)
	}
	already := false
	if _, err := cfg.Store.Stat(ctx, tiles.ManifestKey(def.LayerID, id)); err == nil {
		already = true
	} else if !errors.Is(err, store.ErrNotExist) {
		return nil, false, fmt.Errorf("ingest: %w", err)
	}
	if !already {
		if err := uploadTiles(ctx, cfg.Store, m, outs); err != nil {
			return nil, false, err
		}
		err := tiles.WriteManifest(ctx, cfg.Store, m)
		switch {
		case errors.Is(err, store.ErrExists):
			already = true
		case err != nil:
			return nil, false, fmt.Errorf("ingest: %w", err)
		}
	}
	if already {
		// Publish what the store holds (its ingested_at is the first one).
		stored, err := tiles.ReadManifest(ctx, cfg.Store, def.LayerID, id)
		if err != nil {
			return nil, false, fmt.Errorf("ingest: release %s exists: %w", id, err)
		}
		m = stored
	}
	if cfg.Publisher != nil {
		if err := cfg.Publisher.Publish(ctx, def, m); err != nil {
			return nil, false, fmt.Errorf("ingest: publish %s: %w", id, err)
		}
	}
	return m, already, nil
}

// uploadConcurrency is how many tiles are uploaded at once.
const uploadConcurrency = 4

// uploadTiles puts every tile in the store. A tile that is already there
// is fine: its key holds the release id, which covers its content.
func uploadTiles(ctx context.Context, st store.Store, m *tiles.Manifest, outs []tileOut) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, uploadConcurrency)
	var wg sync.WaitGroup
	for i, o := range outs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := putFile(ctx, st, m.Tiles[i].Key, o.path, o.info.Bytes); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

func putFile(ctx context.Context, st store.Store, key, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("ingest: upload %s: %w", key, err)
	}
	defer f.Close()
	err = st.Put(ctx, key, bufio.NewReaderSize(f, 1<<20), size)
	if err != nil && !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("ingest: upload %s: %w", key, err)
	}
	return nil
}
