package api_test

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkDelivery20MiB downloads a 20 MiB artifact from the file store over
// loopback HTTP, full file per iteration. MB/s is the throughput (goal: over
// 500 MiB/s); B/op counts every allocation of server and client together, so
// a value far below 20 MiB shows the file is streamed, never held in memory.
func BenchmarkDelivery20MiB(b *testing.B) {
	const size = 20 << 20
	h := setupArtifacts(b, size)
	url := h.base + h.mint(h.k.Secret, h.art.ID)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size || resp.StatusCode != 200 {
			b.Fatalf("status %d, %d bytes, %v", resp.StatusCode, n, err)
		}
	}
	get() // warm the connection and the page cache
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		get()
	}
}
