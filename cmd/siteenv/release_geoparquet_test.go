package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"siteenv/tiles"
)

// pairChange is one changed feature of releasePair, as a row of the diff.
type pairChange struct {
	kind, id string
	lon      float64 // latitude is always -33.8
	depth    float64
	status   string
}

func (c pairChange) String() string {
	return fmt.Sprintf("%s %s POINT(%g -33.8) depth_m=%g status=%s", c.kind, c.id, c.lon, c.depth, c.status)
}

// pairChanges is the diff A -> B of releasePair, or B -> A when reverse.
func pairChanges(reverse bool) []string {
	lon := func(i int) float64 { return 151 + float64(i)/100 }
	added, removed := "added", "removed"
	if reverse {
		added, removed = removed, added
	}
	cs := []pairChange{
		{added, "b11", lon(11), 1, "new"}, {added, "b12", lon(12), 1, "new"}, {added, "b13", lon(13), 1, "new"},
		{removed, "b10", lon(10), 10, "active"},
	}
	if reverse { // the changed features as A has them
		cs = append(cs, pairChange{"changed", "b7", lon(7), 7, "active"}, pairChange{"changed", "b8", lon(8), 8, "active"}, pairChange{"changed", "b9", lon(9), 9, "active"})
	} else {
		cs = append(cs, pairChange{"changed", "b7", lon(7), 7, "capped"}, pairChange{"changed", "b8", lon(8), 8, "capped"}, pairChange{"changed", "b9", lon(9) + 0.001, 9, "active"})
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	sort.Strings(out)
	return out
}

// checkChangesGeoParquet reads a diff's GeoParquet with the project's reader
// and with parquet-go (an independent implementation) and checks both see
// exactly want (sorted pairChange strings), with GeoParquet 1.1 metadata
// and typed columns.
func checkChangesGeoParquet(t *testing.T, path string, want []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	asRow := func(kind, id string, g orb.Geometry, depth any, status any) string {
		p, ok := g.(orb.Point)
		if !ok {
			return fmt.Sprintf("%s %s geometry %T", kind, id, g)
		}
		return fmt.Sprintf("%s %s POINT(%g %g) depth_m=%v status=%v", kind, id, p[0], p[1], depth, status)
	}

	// 1. The project's reader.
	ctx := context.Background()
	info, err := tiles.InspectGeoParquet(ctx, bytes.NewReader(data), int64(len(data)))
	if err != nil || info.Version != "1.1.0" || info.CRS != "OGC:CRS84" || fmt.Sprint(info.GeometryTypes) != "[Point]" || info.Rows != int64(len(want)) {
		t.Fatalf("InspectGeoParquet %+v %v", info, err)
	}
	var got []string
	err = tiles.ReadGeoParquet(ctx, bytes.NewReader(data), int64(len(data)), func(f tiles.Feature) error {
		if len(f.Properties) != 3 {
			t.Errorf("%s: properties %v, want change, depth_m, status", f.ID, f.Properties)
		}
		if _, ok := f.Properties["depth_m"].(float64); !ok {
			t.Errorf("%s: depth_m %#v is not a number", f.ID, f.Properties["depth_m"])
		}
		got = append(got, asRow(fmt.Sprint(f.Properties["change"]), f.ID, f.Geometry, f.Properties["depth_m"], f.Properties["status"]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ReadGeoParquet rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// 2. parquet-go.
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet-go cannot open the changes: %v", err)
	}
	geo, ok := f.Lookup("geo")
	if !ok {
		t.Fatal("no geo metadata")
	}
	var meta struct {
		Version string `json:"version"`
		Primary string `json:"primary_column"`
		Columns map[string]struct {
			Encoding string              `json:"encoding"`
			Types    []string            `json:"geometry_types"`
			BBox     []float64           `json:"bbox"`
			Covering map[string]struct{} `json:"covering"`
		} `json:"columns"`
	}
	if err := json.Unmarshal([]byte(geo), &meta); err != nil {
		t.Fatal(err)
	}
	col := meta.Columns[meta.Primary]
	if meta.Version != "1.1.0" || meta.Primary != "geometry" || col.Encoding != "WKB" || len(col.BBox) != 4 || col.Covering == nil {
		t.Fatalf("geo metadata %s", geo)
	}
	kinds := map[string]parquet.Kind{"feature_id": parquet.ByteArray, "change": parquet.ByteArray, "geometry": parquet.ByteArray,
		"bbox.xmin": parquet.Double, "bbox.ymax": parquet.Double, "depth_m": parquet.Double, "status": parquet.ByteArray}
	for name, k := range kinds {
		lc, ok := f.Schema().Lookup(strings.Split(name, ".")...)
		if !ok || lc.Node.Type().Kind() != k {
			t.Errorf("column %s: %v %v, want %v", name, ok, lc.Node, k)
		}
	}
	columns := f.Schema().Columns()
	got = got[:0]
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 4)
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				v := map[string]parquet.Value{}
				for _, x := range row {
					v[strings.Join(columns[x.Column()], ".")] = x
				}
				g, gerr := wkb.Unmarshal(v["geometry"].ByteArray())
				if gerr != nil {
					t.Fatalf("geometry: %v", gerr)
				}
				if b := g.Bound(); v["bbox.xmin"].Double() != b.Min[0] || v["bbox.ymax"].Double() != b.Max[1] {
					t.Errorf("bbox %v %v, geometry %v", v["bbox.xmin"], v["bbox.ymax"], g)
				}
				var depth any
				if !v["depth_m"].IsNull() {
					depth = v["depth_m"].Double()
				}
				got = append(got, asRow(string(v["change"].ByteArray()), string(v["feature_id"].ByteArray()), g, depth, string(v["status"].ByteArray())))
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("parquet-go rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
