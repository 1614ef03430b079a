package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"

	"siteenv/engine"
	"siteenv/geo"
	"siteenv/tiles"
)

// recordEncoder writes result records, one JSON line per feature, byte for
// byte as a json.Encoder (HTML escaping off) writes FeatureRecord, without
// building a properties map or reflecting over it: that map and its
// encoding were most of a large result's write. A feature without a tile
// behind it (tests) goes through encoding/json itself.
type recordEncoder struct {
	buf     []byte
	props   []propEntry
	scratch []byte // the properties' encoded values, in schema order
	err     error
	// names are the property names of the last record, in visit order;
	// order lists them as encoding/json writes a map's members (sorted),
	// and keys holds each one's `"name":` (with its comma after the
	// first). A tile visits the same names in the same order for every
	// row, so a run of records sorts and quotes them once.
	names []string
	order []int
	keys  [][]byte
}

// propEntry is one property: its name and where its encoded value lies in
// scratch.
type propEntry struct {
	name       string
	start, end int
}

// properties are a feature's properties: visited without a map when it
// can (engine.Feature over a tile), or as a map.
type properties interface {
	VisitProperties(v tiles.PropertyVisitor) bool
	Properties() map[string]any
}

// appendRecord appends feat's record and a newline to e.buf.
func (e *recordEncoder) appendRecord(layerID string, feat *engine.Feature, includeGeometry bool) error {
	var g orb.Geometry
	if includeGeometry {
		g = feat.Geometry
	}
	return e.append(layerID, feat.ID, feat.DistanceM, g, feat)
}

// append appends the record of a feature with geometry g (nil: null).
func (e *recordEncoder) append(layerID, featureID string, distanceM float64, g orb.Geometry, props properties) error {
	e.props, e.scratch, e.err = e.props[:0], e.scratch[:0], nil
	if !props.VisitProperties(e) {
		return e.appendSlow(layerID, featureID, distanceM, g, props.Properties())
	}
	if e.err != nil {
		return e.err
	}
	b := append(e.buf, `{"layer_id":`...)
	b = appendJSONString(b, layerID)
	b = append(b, `,"feature_id":`...)
	b = appendJSONString(b, featureID)
	b = append(b, `,"distance_m":`...)
	var err error
	if b, err = appendJSONFloat(b, distanceM); err != nil {
		return err
	}
	b = append(b, `,"properties":{`...)
	e.sortKeys()
	for k, j := range e.order {
		p := e.props[j]
		b = append(b, e.keys[k]...)
		b = append(b, e.scratch[p.start:p.end]...)
	}
	b = append(b, `},"geometry":`...)
	if g != nil {
		// json.Marshal's bytes, written directly (geo.AppendGeoJSON).
		if b, err = geo.AppendGeoJSON(b, g); err != nil {
			return err
		}
	} else {
		b = append(b, "null"...)
	}
	e.buf = append(b, "}\n"...)
	return nil
}

// sortKeys makes order and keys those of e.props' names, unless they are
// the last record's.
func (e *recordEncoder) sortKeys() {
	if len(e.names) == len(e.props) {
		same := true
		for i, p := range e.props {
			if p.name != e.names[i] {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	e.names, e.order, e.keys = e.names[:0], e.order[:0], e.keys[:0]
	for i, p := range e.props {
		e.names = append(e.names, p.name)
		e.order = append(e.order, i)
	}
	// encoding/json writes a map's members sorted by key.
	slices.SortFunc(e.order, func(x, y int) int { return strings.Compare(e.names[x], e.names[y]) })
	for k, j := range e.order {
		var key []byte
		if k > 0 {
			key = append(key, ',')
		}
		key = appendJSONString(key, e.names[j])
		e.keys = append(e.keys, append(key, ':'))
	}
}

// appendSlow is appendRecord through encoding/json.
func (e *recordEncoder) appendSlow(layerID, featureID string, distanceM float64, g orb.Geometry, props map[string]any) error {
	rec := FeatureRecord{LayerID: layerID, FeatureID: featureID, DistanceM: distanceM, Properties: props}
	if g != nil {
		rec.Geometry = geojson.NewGeometry(g)
	}
	w := bytes.NewBuffer(e.buf)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return err
	}
	e.buf = w.Bytes()
	return nil
}

// mark notes where the next property's value starts; done records it.
func (e *recordEncoder) mark() int { return len(e.scratch) }

func (e *recordEncoder) done(name string, start int) {
	e.props = append(e.props, propEntry{name: name, start: start, end: len(e.scratch)})
}

// Null, String, Int, Float and Bool implement tiles.PropertyVisitor.
func (e *recordEncoder) Null(name string) {
	m := e.mark()
	e.scratch = append(e.scratch, "null"...)
	e.done(name, m)
}

func (e *recordEncoder) String(name string, v []byte) {
	m := e.mark()
	e.scratch = appendJSONString(e.scratch, v)
	e.done(name, m)
}

func (e *recordEncoder) Int(name string, v int64) {
	m := e.mark()
	e.scratch = strconv.AppendInt(e.scratch, v, 10)
	e.done(name, m)
}

func (e *recordEncoder) Float(name string, v float64) {
	m := e.mark()
	var err error
	if e.scratch, err = appendJSONFloat(e.scratch, v); err != nil && e.err == nil {
		e.err = fmt.Errorf("jobs: property %s: %w", name, err)
	}
	e.done(name, m)
}

func (e *recordEncoder) Bool(name string, v bool) {
	m := e.mark()
	e.scratch = strconv.AppendBool(e.scratch, v)
	e.done(name, m)
}

// appendJSONFloat is encoding/json's float64 encoding (ES6 number
// formatting); NaN and infinities are refused, as encoding/json refuses them.
func appendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json writes it.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendJSONString is encoding/json's string encoding with HTML escaping
// off. Printable ASCII without a quote or backslash (nearly every id and
// property) is copied as it is; anything else goes through encoding/json,
// so escapes, invalid UTF-8 and U+2028/U+2029 come out exactly as it writes
// them.
func appendJSONString[T string | []byte](b []byte, s T) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	w := bytes.NewBuffer(b)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(s)) // a string always encodes
	out := w.Bytes()
	return out[:len(out)-1] // the Encoder's newline
}

// recordChunk is a run of one layer's features, encoded as one unit.
type recordChunk struct {
	layerID string
	feats   []engine.Feature
}

// chunkRecords is how many records one encoding goroutine takes at a time
// (about half a megabyte of records without geometry): small enough that
// the writer starts early and the encoders share a result's layers evenly.
const chunkRecords = 1024

// appendChunks splits a layer's features into chunks.
func appendChunks(chunks []recordChunk, layerID string, feats []engine.Feature) []recordChunk {
	for len(feats) > 0 {
		n := min(len(feats), chunkRecords)
		chunks = append(chunks, recordChunk{layerID: layerID, feats: feats[:n]})
		feats = feats[n:]
	}
	return chunks
}

// writeError is a failure to write the result (not to encode it).
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// chunkBufs recycles encoded chunks' buffers between results: a fresh
// buffer's pages cost a fault each (on a VM, one the host serves too).
var chunkBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf keeps an outsized chunk's buffer (geometries) out of the pool.
const maxPooledBuf = 4 << 20

func putChunkBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		chunkBufs.Put(b)
	}
}

// encodeChunk appends c's records to e.buf.
func (e *recordEncoder) encodeChunk(c recordChunk, includeGeometry bool) error {
	for i := range c.feats {
		if err := e.appendRecord(c.layerID, &c.feats[i], includeGeometry); err != nil {
			return err
		}
	}
	return nil
}

// encodedChunk is one chunk's records, handed from an encoder to the
// writer; done is closed when buf and err are set.
type encodedChunk struct {
	buf  *[]byte
	err  error
	done chan struct{}
}

// writeRecords encodes the chunks' records to w in order and returns the
// bytes written. Up to workers goroutines encode chunks ahead (at most
// 2*workers chunks waiting) while this one writes the finished ones in
// order: a large result's write (its copy into the store) overlaps
// its encoding instead of following it, and the encoders share its chunks
// however unevenly its layers are sized.
func writeRecords(w io.Writer, chunks []recordChunk, includeGeometry bool, workers int) (int64, error) {
	workers = max(1, min(workers, len(chunks)))
	if workers == 1 {
		return writeRecordsSerial(w, chunks, includeGeometry)
	}
	out := make([]encodedChunk, len(chunks))
	for i := range out {
		out[i].done = make(chan struct{})
	}
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		ahead = make(chan struct{}, 2*workers) // a token per chunk taken and not yet written
		stop  = make(chan struct{})
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var e recordEncoder
			for {
				select {
				case ahead <- struct{}{}:
				case <-stop:
					return
				}
				select {
				case <-stop:
					return
				default:
				}
				i := int(next.Add(1)) - 1
				if i >= len(chunks) {
					return
				}
				b := chunkBufs.Get().(*[]byte)
				e.buf = (*b)[:0]
				out[i].err = e.encodeChunk(chunks[i], includeGeometry)
				*b, e.buf = e.buf, nil
				out[i].buf = b
				close(out[i].done)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		// Chunks encoded past a failure go back to the pool too.
		for i := range out {
			select {
			case <-out[i].done:
				if out[i].buf != nil {
					putChunkBuf(out[i].buf)
				}
			default:
			}
		}
	}()
	var size int64
	for i := range out {
		<-out[i].done
		if out[i].err != nil {
			return size, out[i].err
		}
		n, err := w.Write(*out[i].buf)
		size += int64(n)
		putChunkBuf(out[i].buf)
		out[i].buf = nil
		if err != nil {
			return size, &writeError{err}
		}
		<-ahead
	}
	return size, nil
}

// writeRecordsSerial is writeRecords on one goroutine.
func writeRecordsSerial(w io.Writer, chunks []recordChunk, includeGeometry bool) (int64, error) {
	b := chunkBufs.Get().(*[]byte)
	defer putChunkBuf(b)
	e := recordEncoder{}
	var size int64
	for _, c := range chunks {
		e.buf = (*b)[:0]
		err := e.encodeChunk(c, includeGeometry)
		*b = e.buf
		if err != nil {
			return size, err
		}
		n, err := w.Write(*b)
		size += int64(n)
		if err != nil {
			return size, &writeError{err}
		}
	}
	return size, nil
}
