package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/tiles"
)

// The read stage is a pipeline: one goroutine reads the sources and cuts
// them into batches of rows; workers parse, validate, reproject and encode
// the rows of a batch in parallel; the collector takes batches back in
// input order, so duplicate ids, rejects and row numbers are deterministic,
// and hands the records to the sorter.

// source is one input (a file, or a File name of RunRows).
type source struct {
	name  string // as given: the file column of the rejects
	base  string // base name, for default ids
	crs   geo.CRS
	csv   *csvLayout
	clone bool // geometries belong to the caller: copy before reprojecting
}

type itemKind uint8

const (
	kindJSON    itemKind = iota // raw GeoJSON feature
	kindCSV                     // CSV record
	kindFeature                 // decoded feature (GeoParquet, RunRows)
	kindReject                  // already rejected by the reader
)

type item struct {
	src    *source
	row    int64
	kind   itemKind
	raw    []byte   // kindJSON: into the batch arena
	fields []string // kindCSV
	feat   tiles.Feature
	reason string // kindReject
}

type result struct {
	reason     string // non-empty: rejected
	id         string
	repaired   bool // the geometry was made valid (Options.Repair)
	start, end int  // record in batch.out
}

type batch struct {
	items []item
	arena []byte
	res   []result
	out   []byte
	done  chan struct{}
}

const (
	batchItems = 512
	batchArena = 1 << 20
)

// errStopped ends reading early, after too many rejects.
var errStopped = errors.New("ingest: stopped")

// feeder collects rows into batches and sends them down the pipeline.
type feeder struct {
	ctx   context.Context
	work  chan<- *batch
	order chan<- *batch
	free  chan *batch
	cur   *batch
	read  *atomic.Int64 // bytes of input read, for progress
}

func (f *feeder) newBatch() *batch {
	select {
	case b := <-f.free:
		return b
	default:
		return &batch{items: make([]item, 0, batchItems), arena: make([]byte, 0, batchArena)}
	}
}

// add queues it; a raw JSON feature is copied.
func (f *feeder) add(it item) error {
	if f.cur == nil {
		f.cur = f.newBatch()
	}
	if it.kind == kindJSON {
		b := f.cur
		if len(b.arena)+len(it.raw) > cap(b.arena) {
			if len(b.items) > 0 {
				if err := f.flush(); err != nil {
					return err
				}
				b = f.newBatch()
				f.cur = b
			}
		}
		if len(b.arena)+len(it.raw) > cap(b.arena) {
			it.raw = append([]byte(nil), it.raw...)
		} else {
			n := len(b.arena)
			b.arena = append(b.arena, it.raw...)
			it.raw = b.arena[n:len(b.arena):len(b.arena)]
		}
	}
	f.cur.items = append(f.cur.items, it)
	if len(f.cur.items) == batchItems {
		return f.flush()
	}
	return nil
}

func (f *feeder) flush() error {
	b := f.cur
	if b == nil || len(b.items) == 0 {
		return nil
	}
	f.cur = nil
	b.done = make(chan struct{})
	select {
	case f.work <- b:
	case <-f.ctx.Done():
		return f.ctx.Err()
	}
	select {
	case f.order <- b:
	case <-f.ctx.Done():
		return f.ctx.Err()
	}
	return nil
}

// read runs the read stage and returns the number of features accepted and
// rows rejected; repaired counts the accepted features whose geometry was
// made valid.
func read(ctx context.Context, cfg *config, srt *sorter, rejects *rejectLog, prog *progress,
	src func(context.Context, *feeder) error, repaired *int64) (features, rejected int64, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	work := make(chan *batch, cfg.workers)
	order := make(chan *batch, 2*cfg.workers+2)
	free := make(chan *batch, 2*cfg.workers+4)

	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorker(cfg)
			for b := range work {
				w.processBatch(b)
				close(b.done)
			}
		}()
	}

	// Collector.
	type outcome struct {
		features, rejected, repaired int64
		err                          error
	}
	collected := make(chan outcome, 1)
	go func() {
		var o outcome
		seen := make(map[uint64]struct{}, 1<<16)
		stopAt := cfg.MaxRejects + rejectTail
		reject := func(it *item, reason string) error {
			o.rejected++
			prog.rejected.Add(1)
			if err := rejects.add(it.src.name, it.row, reason); err != nil {
				return err
			}
			if o.rejected > stopAt {
				return errStopped
			}
			return nil
		}
		for b := range order {
			select {
			case <-b.done:
			case <-ctx.Done():
				continue // drain
			}
			if o.err != nil {
				continue
			}
			for i := range b.res {
				r := &b.res[i]
				it := &b.items[i]
				if r.reason != "" {
					if o.err = reject(it, r.reason); o.err != nil {
						break
					}
					continue
				}
				h := hashID(r.id)
				if _, dup := seen[h]; dup {
					if o.err = reject(it, fmt.Sprintf("duplicate feature id %q", truncate(r.id, 200))); o.err != nil {
						break
					}
					continue
				}
				seen[h] = struct{}{}
				o.features++
				if r.repaired {
					o.repaired++
				}
				prog.features.Add(1)
				if o.rejected > cfg.MaxRejects {
					continue // failing anyway: only look for more rejects
				}
				if o.err = srt.add(b.out[r.start:r.end]); o.err != nil {
					break
				}
			}
			if o.err != nil {
				cancel(o.err)
			}
			recycle(b)
			select {
			case free <- b:
			default:
			}
		}
		collected <- o
	}()

	f := &feeder{ctx: ctx, work: work, order: order, free: free, read: &prog.bytes}
	srcErr := src(ctx, f)
	if srcErr == nil {
		srcErr = f.flush()
	}
	close(work)
	close(order)
	wg.Wait()
	o := <-collected
	*repaired = o.repaired
	switch {
	case o.err != nil && !errors.Is(o.err, errStopped):
		return o.features, o.rejected, o.err
	case o.err != nil: // stopped after too many rejects: report those
		return o.features, o.rejected, nil
	case srcErr != nil:
		if cause := context.Cause(ctx); cause != nil && errors.Is(srcErr, context.Canceled) && !errors.Is(cause, context.Canceled) {
			srcErr = cause
		}
		return o.features, o.rejected, srcErr
	}
	return o.features, o.rejected, nil
}

// rejectTail is how many rejects past MaxRejects are still collected, so
// the rejects file shows more than the first problem, before reading stops.
const rejectTail = 1000

func recycle(b *batch) {
	clear(b.items)
	b.items = b.items[:0]
	b.arena = b.arena[:0]
	clear(b.res)
	b.res = b.res[:0]
	b.out = b.out[:0]
	b.done = nil
}

// hashID is FNV-1a 64 of id. Duplicate detection keeps only these hashes
// (8 bytes per feature); two distinct ids share one with probability about
// n²/2^65 (1e-7 for 2 million features).
func hashID(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// worker turns rows into records. One per goroutine.
type worker struct {
	cfg      *config
	intern   map[string]string
	repaired bool // set by finish: the last row's geometry was repaired
}

func newWorker(cfg *config) *worker { return &worker{cfg: cfg, intern: map[string]string{}} }

func (w *worker) processBatch(b *batch) {
	for i := range b.items {
		start := len(b.out)
		var r result
		w.repaired = false
		r.id, b.out, r.reason = w.process(&b.items[i], b.out)
		r.repaired = w.repaired
		if r.reason != "" {
			b.out = b.out[:start]
		}
		r.start, r.end = start, len(b.out)
		b.res = append(b.res, r)
	}
}

// process validates one row and appends its record to out. It returns the
// feature id, out, and a reason when the row is rejected.
func (w *worker) process(it *item, out []byte) (string, []byte, string) {
	var (
		id    string
		hasID bool
		g     orb.Geometry
		props map[string]any
	)
	switch it.kind {
	case kindReject:
		return "", out, it.reason
	case kindJSON:
		f, err := parseFeature(it.raw, w.cfg.MaxVertices, w.intern)
		if err != nil {
			return "", out, err.Error()
		}
		id, hasID, g, props = f.id, f.hasID, f.geom, f.props
	case kindCSV:
		var err error
		g, props, err = it.src.csv.row(it.fields, w.cfg.MaxVertices)
		if err != nil {
			return "", out, err.Error()
		}
	case kindFeature:
		id, hasID, g, props = it.feat.ID, it.feat.ID != "", it.feat.Geometry, it.feat.Properties
		if n := countPositions(g); n > w.cfg.MaxVertices {
			return "", out, tooManyPositions(w.cfg.MaxVertices).Error()
		}
	}
	return w.finish(it, id, hasID, g, props, out)
}

func (w *worker) finish(it *item, id string, hasID bool, g orb.Geometry, props map[string]any, out []byte) (string, []byte, string) {
	cfg := w.cfg
	if cfg.IDProperty != "" {
		v, ok := props[cfg.IDProperty]
		if !ok || v == nil {
			return "", out, fmt.Sprintf("id property %q is missing or null", cfg.IDProperty)
		}
		s, ok := idString(v)
		if !ok {
			return "", out, fmt.Sprintf("id property %q must be a string or an integer", cfg.IDProperty)
		}
		id = s
		if !cfg.idInSchema {
			cp := make(map[string]any, len(props))
			for k, v := range props {
				if k != cfg.IDProperty {
					cp[k] = v
				}
			}
			props = cp
		}
	} else if !hasID {
		id = it.src.base + ":" + strconv.FormatInt(it.row, 10)
	}
	switch {
	case id == "":
		return "", out, "feature id is empty"
	case len(id) > maxIDBytes:
		return "", out, fmt.Sprintf("feature id is longer than %d bytes", maxIDBytes)
	case !utf8.ValidString(id):
		return "", out, "feature id is not valid UTF-8"
	}
	if gerr := checkStructure(g, cfg.allowed); gerr != nil {
		return id, out, gerr.Error()
	}
	if !it.src.crs.IsGeographic() {
		if it.src.clone {
			g = orb.Clone(g)
		}
		var gerr *geomError
		if g, gerr = reproject(it.src.crs, g); gerr != nil {
			return id, out, gerr.Error()
		}
	}
	if gerr := checkRange(g); gerr != nil {
		return id, out, gerr.Error()
	}
	g, reason := w.checkTopology(g)
	if reason != "" {
		return id, out, reason
	}
	props, err := cfg.fields.apply(props)
	if err != nil {
		return id, out, "properties: " + err.Error()
	}
	norm, err := cfg.schema.Normalize(props)
	if err != nil {
		return id, out, "properties: " + err.Error()
	}
	out, err = appendRecord(out, spatialKey(g.Bound()), id, g, norm, cfg.schema)
	if err != nil {
		return id, out, err.Error()
	}
	return id, out, ""
}

// maxIDBytes is the longest feature id a tile takes.
const maxIDBytes = 512

// idString converts an id value: strings as they are, integers (and whole
// JSON numbers) in decimal.
func idString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return string(x), true
		}
		return "", false
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10), true
		}
	}
	return "", false
}
