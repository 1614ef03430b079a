package api_test

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"

	"siteenv/api"
)

func TestIdempotencyReplayAndConflict(t *testing.T) {
	t.Parallel()
	var count atomic.Int64
	h := setup(t, func(s *api.Server) { api.InstallEcho(s, &count, nil) })
	k := h.key(h.account(0), nil, "sites:read", "sites:write")

	first := h.do("POST", "/sites", k.Secret, map[string]any{"name": "a", "n": 1, "page_size": 10}, "Idempotency-Key", "key-1")
	if first.status != 200 {
		t.Fatalf("%d %s", first.status, first.body)
	}
	// The same logical request (page size is not part of it) replays byte for byte.
	again := h.do("POST", "/sites", k.Secret, map[string]any{"name": "a", "n": 1, "page_size": 50}, "Idempotency-Key", "key-1")
	if !bytes.Equal(first.body, again.body) || again.status != first.status || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("not replayed: %s vs %s", first.body, again.body)
	}
	if count.Load() != 1 {
		t.Fatalf("executed %d times", count.Load())
	}
	r := h.do("POST", "/sites", k.Secret, map[string]any{"name": "a", "n": 2}, "Idempotency-Key", "key-1")
	r.problem(t, "idempotency_conflict", 409)
	assertProblemShape(t, r)
	if r.header.Get("Retry-After") != "" {
		t.Fatal("a changed request is not retryable")
	}
	// Errors that are not retryable are replayed too.
	e1 := h.do("POST", "/sites", k.Secret, map[string]any{"name": "fail"}, "Idempotency-Key", "key-2")
	e2 := h.do("POST", "/sites", k.Secret, map[string]any{"name": "fail"}, "Idempotency-Key", "key-2")
	if e1.status != 400 || !bytes.Equal(e1.body, e2.body) {
		t.Fatalf("error not replayed: %s / %s", e1.body, e2.body)
	}
	// Keys are per integration: another integration's same key is independent.
	k2 := h.key(h.account(0), nil, "sites:read", "sites:write")
	if r := h.do("POST", "/sites", k2.Secret, map[string]any{"name": "b"}, "Idempotency-Key", "key-1"); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
}

func TestIdempotencyConcurrentDuplicatesExecuteOnce(t *testing.T) {
	t.Parallel()
	var count atomic.Int64
	gate := make(chan struct{})
	h := setup(t, func(s *api.Server) { api.InstallEcho(s, &count, gate) })
	k := h.key(h.account(0), nil, "sites:read", "sites:write")

	const n = 50
	var wg sync.WaitGroup
	bodies := make([][]byte, n)
	statuses := make([]int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := h.do("POST", "/sites", k.Secret, map[string]any{"name": "same", "n": 7}, "Idempotency-Key", "concurrent")
			bodies[i], statuses[i] = r.body, r.status
		}(i)
	}
	// Let the first execution finish only once it is running; the others wait.
	for count.Load() == 0 {
		runtimeGosched()
	}
	close(gate)
	wg.Wait()
	if count.Load() != 1 {
		t.Fatalf("executed %d times, want once", count.Load())
	}
	for i := range bodies {
		if statuses[i] != 200 || !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("response %d: %d %s", i, statuses[i], bodies[i])
		}
	}
}
