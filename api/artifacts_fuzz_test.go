package api_test

import (
	"errors"
	"strconv"
	"testing"

	"siteenv/api"
)

// FuzzParseRange: any Range and If-Range header yields either a range inside
// the file or a Problem of the right code, never a panic.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=-5", "bytes=5-", "bytes=0-1,2-3", "bytes=9-2", "bytes=", "bytes=-", "items=1-2",
		"bytes=99999999999999999999-", "bytes=-99999999999999999999", "BYTES = 1-2", "bytes=1-2-3", "=", ""} {
		f.Add(s, "", int64(100))
		f.Add(s, `"etag"`, int64(0))
	}
	f.Fuzz(func(t *testing.T, rng, ifRange string, size int64) {
		if size < 0 {
			size = -(size + 1)
		}
		off, length, partial, err := api.ParseRange(rng, ifRange, `"etag"`, size)
		if err != nil {
			var p *api.Problem
			if !errors.As(err, &p) {
				t.Fatalf("error %v is not a Problem", err)
			}
			switch p.Code {
			case api.CodeInvalidRequest:
			case api.CodeRangeNotSatisfiable:
				if p.ContentRange != "bytes */"+strconv.FormatInt(size, 10) {
					t.Fatalf("Content-Range %q", p.ContentRange)
				}
			default:
				t.Fatalf("code %s", p.Code)
			}
			return
		}
		if off < 0 || length < 0 || off > size || length > size-off {
			t.Fatalf("range %d+%d outside %d", off, length, size)
		}
		if partial && length == 0 {
			t.Fatal("an empty partial answer")
		}
		if !partial && (off != 0 || length != size) {
			t.Fatalf("full answer %d+%d of %d", off, length, size)
		}
	})
}
