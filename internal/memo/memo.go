// Package memo keeps values parsed from immutable bytes, so that a hot
// path parses each distinct input once: a layer release's coverage polygon
// or its provenance, frozen into every query of that release as the same
// JSON (kilobytes of it), was parsed again by every query.
package memo

import (
	"bytes"
	"sync"
)

// Parsed maps a key to the value parsed from its bytes. A hit needs the
// same bytes as the entry's, so a key whose bytes differ (never, for an
// immutable release) is parsed afresh rather than served stale. Values are
// shared between callers, who must not change them.
type Parsed[K comparable, V any] struct {
	max int
	mu  sync.Mutex
	m   map[K]entry[V]
}

type entry[V any] struct {
	raw []byte
	v   V
}

// New is a Parsed of at most max entries; it is emptied when full (the
// keys are a catalogue's releases: a full map means a catalogue far larger
// than the bound, where evicting one by one buys nothing).
func New[K comparable, V any](max int) *Parsed[K, V] {
	return &Parsed[K, V]{max: max, m: make(map[K]entry[V])}
}

// Get is the value parsed from raw under k, parsing it (and keeping it)
// when k has no entry of these bytes. A parse error is returned and not
// kept.
func (p *Parsed[K, V]) Get(k K, raw []byte, parse func([]byte) (V, error)) (V, error) {
	p.mu.Lock()
	e, ok := p.m[k]
	p.mu.Unlock()
	if ok && bytes.Equal(e.raw, raw) {
		return e.v, nil
	}
	v, err := parse(raw)
	if err != nil {
		return v, err
	}
	p.mu.Lock()
	if len(p.m) >= p.max {
		clear(p.m)
	}
	p.m[k] = entry[V]{raw: bytes.Clone(raw), v: v}
	p.mu.Unlock()
	return v, nil
}

// Len is the number of entries (tests).
func (p *Parsed[K, V]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
