package api

import (
	"bytes"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestBodyReadTimeout: the body phase is bounded by 5 s unless configured,
// and a negative bound is a configuration error.
func TestBodyReadTimeout(t *testing.T) {
	secret := bytes.Repeat([]byte("s"), 32)
	for _, c := range []struct{ set, want time.Duration }{{0, 5 * time.Second}, {time.Second, time.Second}} {
		s, err := New(Config{Secret: secret, BodyReadTimeout: c.set}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.HTTPServer().HeaderReceived(&fasthttp.RequestHeader{}).ReadTimeout; got != c.want {
			t.Errorf("BodyReadTimeout %v: body read deadline %v, want %v", c.set, got, c.want)
		}
	}
	if _, err := New(Config{Secret: secret, BodyReadTimeout: -time.Second}, nil); err == nil {
		t.Error("negative BodyReadTimeout accepted")
	}
}
