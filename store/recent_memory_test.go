package store_test

import (
	"fmt"
	"runtime"
	"testing"
)

// heapInUse is the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestRecentSmallObjectsHoldTheirBound: a store keeping recent objects
// holds about its bound in memory however many small objects (a query's
// results of a few KB, written one after another by a server) pass through
// it: the heap in use after 4N writes is the heap after N. Each object was
// once kept in a whole 1 MiB block while the bound counted its size, so a
// server's heap grew by a block per result until the bound's count of
// sizes filled (256 MiB of 3 KB results: 90,000 blocks).
func TestRecentSmallObjectsHoldTheirBound(t *testing.T) {
	const bound = 4 << 20
	s, _ := recentStore(t, bound)
	data := randomBytes(1, 3000)
	n := 0
	writeMore := func(k int) {
		for ; k > 0; k-- {
			write(t, s, fmt.Sprintf("results/%06d.ndjson", n), data, len(data))
			n++
		}
	}
	const N = 64
	writeMore(N)
	after := heapInUse()
	writeMore(3 * N)
	after4 := heapInUse()
	if grown := int64(after4) - int64(after); grown > 2*bound {
		t.Fatalf("heap in use grew by %d MiB from %d to %d writes of %d bytes (the cache's bound is %d MiB)",
			grown>>20, N, 4*N, len(data), bound>>20)
	}
	// The latest objects are still served.
	if got := readObject(t, s, fmt.Sprintf("results/%06d.ndjson", n-1)); string(got) != string(data) {
		t.Fatal("the last object read back wrong")
	}
}
