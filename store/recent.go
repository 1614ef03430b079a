package store

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"
)

// A FileStore that keeps recent objects (KeepRecent) writes each new
// object straight to disk (O_DIRECT: no page cache) from 1 MiB blocks and
// keeps those blocks as the object's bytes in memory, so the reads that
// follow a write (a query's result pages, right after it ran) are served
// without touching the file. Both halves matter on a VM whose fresh memory
// is slow: filling new page-cache pages cost a large result 2-3 ms per MiB
// in bench api, a direct write about 0.7, and the blocks are recycled
// rather than allocated. The cache is bounded by the bytes its blocks
// hold (not the objects' sizes), oldest out first.

// blockSize is a write block: a direct write's unit (a multiple of
// dioAlign) and the cache's.
const blockSize = 1 << 20

// dioAlign is what O_DIRECT needs of a buffer's address, a write's offset
// and its length: the logical block size, at most 4 KiB on the disks in use.
const dioAlign = 4096

// blockPool recycles blocks, so their pages stay mapped and warm.
type blockPool struct {
	mu   sync.Mutex
	free [][]byte
	max  int // blocks kept free at most
}

func (p *blockPool) get() []byte {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	raw := make([]byte, blockSize+dioAlign)
	off := (dioAlign - int(uintptr(unsafe.Pointer(&raw[0]))%dioAlign)) % dioAlign
	return raw[off : off : off+blockSize]
}

func (p *blockPool) put(b []byte) {
	if cap(b) != blockSize {
		return // a small object's own copy, not a block
	}
	p.mu.Lock()
	if len(p.free) < p.max {
		p.free = append(p.free, b[:0])
	}
	p.mu.Unlock()
}

// recentObjects is the cache of a FileStore's recently written objects.
type recentObjects struct {
	pool  blockPool
	max   int64 // bytes kept at most
	mu    sync.Mutex
	bytes int64
	m     map[string]*recentObject
	order []string // keys, oldest first (some may have left m)
}

// recentObject is one cached object. refs counts the cache's own hold
// (while the object is in the cache) and each open reader; the blocks go
// back to the pool when the last one lets go.
type recentObject struct {
	blocks [][]byte
	size   int64
	held   int64 // the blocks' capacity: what the cache's bound counts
	refs   atomic.Int32
}

// newRecentObjects makes a cache of max bytes whose pool keeps up to a
// quarter as many free blocks (evicted ones, for the next writes).
func newRecentObjects(max int64) *recentObjects {
	return &recentObjects{max: max, m: map[string]*recentObject{}, pool: blockPool{max: int(max / blockSize / 4)}}
}

// cacheable reports whether an object of size bytes may be kept.
func (c *recentObjects) cacheable(size int64) bool { return size <= c.max/4 }

// add keeps blocks as key's bytes, evicting the oldest objects to make room.
func (c *recentObjects) add(key string, blocks [][]byte, size int64) {
	o := &recentObject{blocks: blocks, size: size}
	for _, b := range blocks {
		o.held += int64(cap(b))
	}
	o.refs.Store(1)
	var evicted []*recentObject
	c.mu.Lock()
	if old, ok := c.m[key]; ok { // not expected: keys are never replaced
		c.bytes -= old.held
		evicted = append(evicted, old)
	}
	c.m[key] = o
	if len(c.order) > 2*len(c.m)+64 { // keys removed meanwhile: drop them
		kept := c.order[:0]
		for _, k := range c.order {
			if _, ok := c.m[k]; ok && k != key {
				kept = append(kept, k)
			}
		}
		clear(c.order[len(kept):])
		c.order = kept
	}
	c.order = append(c.order, key)
	c.bytes += o.held
	for c.bytes > c.max && len(c.order) > 0 {
		k := c.order[0]
		c.order = c.order[1:]
		if e, ok := c.m[k]; ok && e != o {
			delete(c.m, k)
			c.bytes -= e.held
			evicted = append(evicted, e)
		}
	}
	c.mu.Unlock()
	for _, e := range evicted {
		c.release(e)
	}
}

// acquire returns key's object with a reader's hold on it, or nil.
func (c *recentObjects) acquire(key string) *recentObject {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.m[key]
	if o != nil {
		o.refs.Add(1)
	}
	return o
}

// remove drops key from the cache (its readers keep their hold).
func (c *recentObjects) remove(key string) {
	c.mu.Lock()
	o, ok := c.m[key]
	if ok {
		delete(c.m, key)
		c.bytes -= o.held
	}
	c.mu.Unlock()
	if ok {
		c.release(o)
	}
}

func (c *recentObjects) release(o *recentObject) {
	if o.refs.Add(-1) == 0 {
		for _, b := range o.blocks {
			c.pool.put(b)
		}
		o.blocks = nil
	}
}

// memObject is an Object over a cached object's blocks.
type memObject struct {
	ctx    context.Context
	c      *recentObjects
	o      *recentObject
	closed atomic.Bool
}

func (m *memObject) Size() int64 { return m.o.size }

func (m *memObject) Close() error {
	if m.closed.CompareAndSwap(false, true) {
		m.c.release(m.o)
	}
	return nil
}

func (m *memObject) ReadAt(p []byte, off int64) (int, error) {
	if err := m.ctx.Err(); err != nil {
		return 0, err
	}
	n, short, err := readAtBounds(m.o.size, p, off)
	if err != nil || n == 0 {
		return 0, err
	}
	done := 0
	for done < n {
		at := off + int64(done)
		b := m.o.blocks[at/blockSize]
		done += copy(p[done:n], b[at%blockSize:])
	}
	if short {
		return n, io.EOF
	}
	return n, nil
}
