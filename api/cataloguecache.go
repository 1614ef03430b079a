package api

import (
	"strconv"
	"strings"
	"sync"

	"siteenv/ledger"
)

// catalogueCache keeps catalogue reads (GET /layers pages, the layers and
// releases POST /queries freezes) of the newest catalogue version this
// replica has seen. The version comes from the request's own
// authentication statement (ledger.Principal.Catalogue), and every change
// to a section, layer or release moves it (migration 0011), so a cached
// answer is used only while nothing in the catalogue has changed: the
// first request after a change, on any replica, reads afresh. An answer
// read after the version was taken can only be newer than it, never older.
type catalogueCache struct {
	mu      sync.Mutex
	version int64
	m       map[string]any
	bytes   int
}

// maxCatalogueEntries and maxCatalogueBytes bound one version's answers
// (filters and cursors make keys; coverage polygons make bytes): the map is
// cleared when either is reached, and an answer larger than an eighth of
// the bytes is not kept.
const (
	maxCatalogueEntries = 1024
	maxCatalogueBytes   = 64 << 20
)

// current is the newest catalogue version seen (0: none yet).
func (c *catalogueCache) current() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

func (c *catalogueCache) get(version int64, key string) (any, bool) {
	if version == 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		return nil, false
	}
	v, ok := c.m[key]
	return v, ok
}

func (c *catalogueCache) put(version int64, key string, v any, size int) {
	if version == 0 || size > maxCatalogueBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case version < c.version:
		return // a request that began before a newer one
	case version > c.version || len(c.m) >= maxCatalogueEntries || c.bytes+size > maxCatalogueBytes:
		c.version, c.m, c.bytes = version, make(map[string]any), 0
	}
	if _, ok := c.m[key]; !ok {
		c.bytes += size
	}
	c.m[key] = v
}

// layerBytes approximates the memory a catalogue row holds.
func layerBytes(y ledger.Layer) int {
	return jsonBytes(y.FieldSchema, y.Units, y.Sources, y.Coverage)
}

// jsonBytes approximates a row holding the JSON values js.
func jsonBytes(js ...[]byte) int {
	n := 256
	for _, j := range js {
		n += len(j)
	}
	return n
}

// layersKey identifies a ListLayers filter.
func layersKey(f ledger.LayerFilter) string {
	var b strings.Builder
	b.WriteString("layers")
	for _, s := range []string{f.Search, f.SectionKey, f.Jurisdiction, f.AfterID} {
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	b.WriteByte(0)
	switch {
	case f.DatasetIDs == nil:
		b.WriteString("all")
	default:
		b.WriteString("only")
		for _, id := range f.DatasetIDs {
			b.WriteByte(0)
			b.WriteString(id)
		}
	}
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(f.Limit))
	b.WriteString(strconv.FormatBool(f.WithoutCoverage))
	return b.String()
}

// listLayersCached is ledger.ListLayers through the cache.
func (s *Server) listLayersCached(r *request, f ledger.LayerFilter) ([]ledger.Layer, error) {
	v, key := r.principal.Catalogue, layersKey(f)
	if rows, ok := s.catalogue.get(v, key); ok {
		return rows.([]ledger.Layer), nil
	}
	rows, err := s.led.ListLayers(r.ctx, f)
	if err != nil {
		return nil, err
	}
	size := len(key)
	for _, y := range rows {
		size += layerBytes(y)
	}
	s.catalogue.put(v, key, rows, size)
	return rows, nil
}

// layersForQuery is ledger.LayersForQuery through the cache, a layer at a
// time: the queries of a mix name many combinations of a few layers, and
// a combination's first query reads only the layers not yet kept. A
// layer missing from the catalogue is kept as missing (noLayer) too: its
// creation moves the version.
func (s *Server) layersForQuery(r *request, ids []string) (map[string]ledger.LayerRelease, error) {
	v := r.principal.Catalogue
	m := make(map[string]ledger.LayerRelease, len(ids))
	var read []string
	for _, id := range ids {
		e, ok := s.catalogue.get(v, queryLayerKey(id))
		if !ok {
			read = append(read, id)
		} else if lr, found := e.(ledger.LayerRelease); found {
			m[id] = lr
		}
	}
	if len(read) == 0 {
		return m, nil
	}
	got, err := s.led.LayersForQuery(r.ctx, read)
	if err != nil {
		return nil, err
	}
	for _, id := range read {
		key := queryLayerKey(id)
		lr, ok := got[id]
		if !ok {
			s.catalogue.put(v, key, noLayer{}, len(key))
			continue
		}
		m[id] = lr
		size := len(key) + layerBytes(lr.Layer)
		if rel := lr.Release; rel != nil {
			size += jsonBytes(rel.FieldSchema, rel.Units, rel.Sources, rel.Coverage)
		}
		s.catalogue.put(v, key, lr, size)
	}
	return m, nil
}

// noLayer is a layer id the catalogue does not hold, as kept by
// layersForQuery.
type noLayer struct{}

func queryLayerKey(id string) string { return "query-layer\x00" + id }

// reportLayersCached is ledger.ReportLayers through the cache.
func (s *Server) reportLayersCached(r *request) ([]string, error) {
	const key = "report-layers"
	v := r.principal.Catalogue
	if ids, ok := s.catalogue.get(v, key); ok {
		return ids.([]string), nil
	}
	ids, err := s.led.ReportLayers(r.ctx)
	if err != nil {
		return nil, err
	}
	size := len(key)
	for _, id := range ids {
		size += 16 + len(id)
	}
	s.catalogue.put(v, key, ids, size)
	return ids, nil
}
