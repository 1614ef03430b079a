package tiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/paulmach/orb"
)

// TestChangeWriter: features written with change kinds across several row
// groups read back in order, equal, with the change kind as a property;
// an empty changes file is valid; a "change" field is refused.
func TestChangeWriter(t *testing.T) {
	schema := testSchema(t)
	feats := append(everyGeometry(), randomPoints(21, 3)...)
	var buf bytes.Buffer
	cw, err := NewChangeWriter(&buf, schema, WriterOptions{RowGroupRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"added", "removed", "changed"}
	for i, f := range feats {
		if err := cw.Write(kinds[i%3], f); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := cw.Close(); err != nil || n != len(feats) {
		t.Fatalf("Close %d %v", n, err)
	}
	ctx := context.Background()
	i := 0
	err = ReadGeoParquet(ctx, bytes.NewReader(buf.Bytes()), int64(buf.Len()), func(f Feature) error {
		w := feats[i]
		want, err := schema.Normalize(w.Properties)
		if err != nil {
			return err
		}
		want[ChangeColumn] = kinds[i%3]
		tg, _ := tileGeometry(w.Geometry)
		if f.ID != w.ID || !orb.Equal(f.Geometry, tg) || fmt.Sprint(f.Properties) != fmt.Sprint(want) {
			t.Errorf("row %d: %s %v %v, want %s %v %v", i, f.ID, f.Geometry, f.Properties, w.ID, tg, want)
		}
		i++
		return nil
	})
	if err != nil || i != len(feats) {
		t.Fatalf("read %d rows: %v", i, err)
	}

	buf.Reset()
	if cw, err = NewChangeWriter(&buf, schema, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := InspectGeoParquet(ctx, bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || info.Rows != 0 || info.Version != GeoParquetVersion {
		t.Fatalf("empty changes: %+v %v", info, err)
	}

	clash := append(FieldSchema{{Name: ChangeColumn, Type: TypeString}}, schema...)
	sort.Slice(clash, func(i, j int) bool { return clash[i].Name < clash[j].Name })
	if _, err := NewChangeWriter(&buf, clash, WriterOptions{}); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("a %q field: %v", ChangeColumn, err)
	}
}

// TestUnionSchema: fields of one schema only become nullable, shared ones
// keep their type, a type conflict is refused.
func TestUnionSchema(t *testing.T) {
	a := FieldSchema{{Name: "depth", Type: TypeNumber}, {Name: "old", Type: TypeString}}
	b := FieldSchema{{Name: "depth", Type: TypeNumber, Nullable: true}, {Name: "new", Type: TypeInteger}}
	u, err := UnionSchema(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(u); got != "[{depth number true    [] <nil> <nil>} {new integer true    [] <nil> <nil>} {old string true    [] <nil> <nil>}]" {
		t.Fatalf("union %s", got)
	}
	if _, err := UnionSchema(a, FieldSchema{{Name: "depth", Type: TypeString}}); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("conflict: %v", err)
	}
}
