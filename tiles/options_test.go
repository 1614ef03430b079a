package tiles

import (
	"bytes"
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

// TestWriterOptionsWithDefaults: every zero field takes its documented
// default, a set field is kept, and WriteTile and NewChangeWriter refuse
// what validate refuses with an error naming it (not a panic).
func TestWriterOptionsWithDefaults(t *testing.T) {
	d := WriterOptions{}.WithDefaults()
	if d != (WriterOptions{RowGroupRows: DefaultRowGroupRows, Compression: CompressionZstd, GeometryCompression: CompressionUncompressed}) {
		t.Fatalf("defaults: %+v", d)
	}
	if d.validate() != nil {
		t.Fatal("the defaults are refused")
	}
	set := WriterOptions{RowGroupRows: 10, Compression: CompressionSnappy}.WithDefaults()
	if set.RowGroupRows != 10 || set.Compression != CompressionSnappy || set.GeometryCompression != CompressionUncompressed {
		t.Fatalf("set fields not kept: %+v", set)
	}
	feats := []Feature{{ID: "a", Geometry: orb.Point{1, 2}}}
	for _, tc := range []struct {
		opt  WriterOptions
		want string
	}{
		{WriterOptions{RowGroupRows: -1}, "RowGroupRows"},
		{WriterOptions{GeometryCompression: "lzma"}, "lzma"},
	} {
		if _, err := WriteTile(&bytes.Buffer{}, nil, feats, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteTile %+v: %v, want an error naming %s", tc.opt, err, tc.want)
		}
		if _, err := NewChangeWriter(&bytes.Buffer{}, nil, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewChangeWriter %+v: %v, want an error naming %s", tc.opt, err, tc.want)
		}
	}
}
