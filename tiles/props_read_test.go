package tiles

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
)

// A tile read with SkipProperties gives, row group by row group, the same
// properties as a whole read, with one ranged read per row group.
func TestReadProperties(t *testing.T) {
	feats := append(everyGeometry(), randomPoints(700, 5)...)
	for _, rows := range []int{64, 2048} {
		data, _ := writeTile(t, testSchema(t), feats, WriterOptions{RowGroupRows: rows})
		whole := mustRead(t, data)
		cr := &countingReaderAt{r: bytes.NewReader(data)}
		lazy, err := ReadTileWith(context.Background(), cr, int64(len(data)), ReadTileOptions{SkipProperties: true})
		if err != nil {
			t.Fatal(err)
		}
		if !lazy.LazyProperties() || whole.LazyProperties() {
			t.Fatal("LazyProperties: wrong")
		}
		if lazy.Bytes() >= whole.Bytes() {
			t.Errorf("rows %d: a tile without properties holds %d bytes, with %d", rows, lazy.Bytes(), whole.Bytes())
		}
		if want := (len(feats) + rows - 1) / rows; lazy.RowGroups() != want {
			t.Fatalf("rows %d: %d row groups, want %d", rows, lazy.RowGroups(), want)
		}
		loaded := cr.n.Load()
		for rg := range lazy.RowGroups() {
			before := cr.n.Load()
			b, err := lazy.ReadProperties(context.Background(), cr, rg)
			if err != nil {
				t.Fatalf("row group %d: %v", rg, err)
			}
			if read := cr.n.Load() - before; read <= 0 || read >= int64(len(data)) {
				t.Errorf("row group %d: read %d of %d bytes", rg, read, len(data))
			}
			if b.Row0() != rg*rows || b.Rows() != min(rows, len(feats)-rg*rows) {
				t.Fatalf("row group %d: rows [%d, +%d)", rg, b.Row0(), b.Rows())
			}
			for i := b.Row0(); i < b.Row0()+b.Rows(); i++ {
				if got, r0 := lazy.RowGroupOf(i); got != rg || r0 != b.Row0() {
					t.Fatalf("RowGroupOf(%d) = %d, %d; want %d, %d", i, got, r0, rg, b.Row0())
				}
				want := whole.Properties(i)
				if got := b.Properties(i); !reflect.DeepEqual(got, want) {
					t.Fatalf("row %d: %v, want %v", i, got, want)
				}
				m := mapVisitor{}
				b.VisitProperties(i, m)
				if !reflect.DeepEqual(map[string]any(m), want) {
					t.Fatalf("row %d: visited %v, want %v", i, m, want)
				}
			}
		}
		if loaded >= int64(len(data)) && rows == 64 {
			t.Logf("load read %d of %d bytes", loaded, len(data))
		}
		if _, err := lazy.ReadProperties(context.Background(), cr, lazy.RowGroups()); !errors.Is(err, ErrPropertiesRead) {
			t.Fatalf("row group out of range: %v", err)
		}
		if _, err := whole.ReadProperties(context.Background(), cr, 0); !errors.Is(err, ErrPropertiesRead) {
			t.Fatalf("a whole tile: %v", err)
		}
	}
}

// A file that changed under the tile (truncated) fails the read as an
// invalid tile; a cancelled context ends it.
func TestReadPropertiesErrors(t *testing.T) {
	data, _ := writeTile(t, testSchema(t), randomPoints(300, 6), WriterOptions{RowGroupRows: 100})
	lazy, err := ReadTileWith(context.Background(), bytes.NewReader(data), int64(len(data)), ReadTileOptions{SkipProperties: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lazy.ReadProperties(context.Background(), bytes.NewReader(data[:len(data)/2]), 2); !errors.Is(err, ErrInvalidTile) {
		t.Fatalf("truncated: %v", err)
	}
	garbage := bytes.Repeat([]byte{0xff}, len(data))
	if _, err := lazy.ReadProperties(context.Background(), bytes.NewReader(garbage), 1); !errors.Is(err, ErrInvalidTile) {
		t.Fatalf("garbage: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lazy.ReadProperties(ctx, bytes.NewReader(data), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
