package memo

import (
	"errors"
	"strconv"
	"testing"
)

func TestParsedParsesEachInputOnce(t *testing.T) {
	p := New[string, int](2)
	calls := 0
	parse := func(b []byte) (int, error) {
		calls++
		return strconv.Atoi(string(b))
	}
	get := func(k, raw string) int {
		t.Helper()
		v, err := p.Get(k, []byte(raw), parse)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if get("a", "1") != 1 || get("a", "1") != 1 || calls != 1 {
		t.Fatalf("the same bytes parsed %d times, want 1", calls)
	}
	// Other bytes under the same key are parsed, not served stale.
	if v := get("a", "2"); v != 2 || calls != 2 {
		t.Fatalf("got %d after %d parses, want 2 after 2", v, calls)
	}
	// The caller's buffer is not kept: changing it changes nothing.
	raw := []byte("3")
	if v, _ := p.Get("b", raw, parse); v != 3 {
		t.Fatalf("got %d", v)
	}
	raw[0] = '4'
	if v := get("b", "3"); v != 3 || calls != 3 {
		t.Fatalf("got %d after %d parses, want 3 after 3", v, calls)
	}
	// Full: emptied, then filled again.
	get("c", "5")
	if n := p.Len(); n != 1 {
		t.Fatalf("%d entries after filling past the bound, want 1", n)
	}
	// Errors are returned and not kept.
	if _, err := p.Get("d", []byte("x"), parse); err == nil {
		t.Fatal("a parse error was not returned")
	}
	bad := errors.New("bad")
	if _, err := p.Get("d", []byte("x"), func([]byte) (int, error) { return 0, bad }); !errors.Is(err, bad) {
		t.Fatalf("got %v, want the parse's error", err)
	}
}
