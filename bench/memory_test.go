package bench

import (
	"io"
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestBoundHeap(t *testing.T) {
	total := memTotal()
	if total < 1<<30 {
		t.Fatalf("memTotal %d: /proc/meminfo not read", total)
	}
	before := debug.SetMemoryLimit(-1)
	limit, restore := boundHeap(2_000_000, 1<<40, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if total >= 8<<30 && (limit <= 0 || limit >= total || debug.SetMemoryLimit(-1) != limit) {
		t.Fatalf("limit %d of %d bytes not applied", limit, total)
	}
	restore()
	// A budget smaller than the machine bounds the limit: budget plus headroom.
	limit, restore = boundHeap(2_000_000, 1<<30, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if total >= 8<<30 && limit != 1<<30+benchHeadroom {
		t.Fatalf("limit %d with a 1 GiB engine budget, want %d", limit, 1<<30+benchHeadroom)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit not restored: %d, was %d", got, before)
	}
	// A limit the caller set wins: GOMEMLIMIT (the CLI says so) ...
	if limit, _ := boundHeap(2_000_000, 1<<30, true, slog.New(slog.NewTextHandler(io.Discard, nil))); limit != 0 || debug.SetMemoryLimit(-1) != before {
		t.Fatalf("GOMEMLIMIT's limit was overridden: %d", limit)
	}
	// ... or one set in process.
	debug.SetMemoryLimit(1 << 30)
	defer debug.SetMemoryLimit(before)
	if limit, _ := boundHeap(2_000_000, 1<<30, false, slog.New(slog.NewTextHandler(io.Discard, nil))); limit != 0 {
		t.Fatalf("the caller's memory limit was overridden: %d", limit)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Fatalf("the caller's limit changed to %d", got)
	}
}

func TestCheckFits(t *testing.T) {
	if err := checkFits(10<<30, 0, 1); err != nil {
		t.Fatalf("no limit: %v", err)
	}
	if err := checkFits(8<<30, 10<<30, 1); err != nil {
		t.Fatalf("fits: %v", err)
	}
	if err := checkFits(19<<30, 20<<30, 20_000_000); err == nil {
		t.Fatal("an engine using 95% of the limit was accepted")
	}
}
