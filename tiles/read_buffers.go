package tiles

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Reading a tile goes through large transient buffers: the file itself and
// the Parquet readers' page buffers. Allocated fresh they were most of a
// load's garbage, and so most of its GC work; they are recycled here.

// bytePool recycles byte slices by power-of-two capacity. It is safe for
// concurrent use; like any sync.Pool it lets the GC drop what is idle.
type bytePool struct {
	classes [maxPoolClass + 1]sync.Pool // of *[]byte
}

const (
	minPoolClass = 12 // 4 KiB: smaller requests get this much
	maxPoolClass = 28 // 256 MiB: larger ones are not pooled
)

var readBuffers bytePool

// get returns a slice of length n; reused reports that it is recycled
// (not zeroed).
func (p *bytePool) get(n int) (b []byte, reused bool) {
	c := max(bits.Len(uint(max(n, 1)-1)), minPoolClass)
	if c > maxPoolClass {
		return make([]byte, n), false
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return (*b)[:n], true
	}
	return make([]byte, n, 1<<c), false
}

// put recycles b, which must no longer be used. Slices get did not return
// (whose capacity is not a pooled class) are left to the GC.
func (p *bytePool) put(b []byte) {
	c := bits.Len(uint(cap(b))) - 1
	if c < minPoolClass || c > maxPoolClass || cap(b) != 1<<c {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}

// pooledAllocator is a memory.Allocator over readBuffers for the Parquet
// readers, which Free their page buffers when a column chunk reader is
// closed. It keeps memory.GoAllocator's semantics: memory comes zeroed
// (beyond what the caller wrote) and 64-byte aligned (pooled classes are at least 4 KiB, so Go aligns them to
// their size).
type pooledAllocator struct{}

var _ memory.Allocator = pooledAllocator{}

func (pooledAllocator) Allocate(size int) []byte {
	b, reused := readBuffers.get(size)
	if reused {
		clear(b)
	}
	return b
}

func (a pooledAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		// What lies past len(b) may be a previous user's.
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (pooledAllocator) Free(b []byte) { readBuffers.put(b) }
