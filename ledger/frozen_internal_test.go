package ledger

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestFrozenDigestCoversEveryField: changing any field of a frozen layer,
// or a nil value to an empty one, changes its digest, so no two different
// entries share one; a field added to FrozenLayer must be added to
// frozenDigest (and to this test) first.
func TestFrozenDigestCoversEveryField(t *testing.T) {
	if n := reflect.TypeOf(FrozenLayer{}).NumField(); n != 7 {
		t.Fatalf("FrozenLayer has %d fields; frozenDigest hashes 7: add the new one to it", n)
	}
	rel, other := "r1", "r2"
	empty := ""
	base := FrozenLayer{LayerID: "flood", ReleaseID: &rel, SectionKey: "hazards", SchemaVersion: "1",
		FieldSchema: json.RawMessage(`{}`), Sources: json.RawMessage(`[]`), Coverage: json.RawMessage(`null`)}
	variants := map[string]func(*FrozenLayer){
		"layer":              func(f *FrozenLayer) { f.LayerID = "flood2" },
		"release":            func(f *FrozenLayer) { f.ReleaseID = &other },
		"no release":         func(f *FrozenLayer) { f.ReleaseID = nil },
		"empty release":      func(f *FrozenLayer) { f.ReleaseID = &empty },
		"section":            func(f *FrozenLayer) { f.SectionKey = "hazard" },
		"schema version":     func(f *FrozenLayer) { f.SchemaVersion = "2" },
		"field schema":       func(f *FrozenLayer) { f.FieldSchema = json.RawMessage(`{"a":1}`) },
		"no field schema":    func(f *FrozenLayer) { f.FieldSchema = nil },
		"sources":            func(f *FrozenLayer) { f.Sources = json.RawMessage(`[1]`) },
		"coverage":           func(f *FrozenLayer) { f.Coverage = json.RawMessage(`{}`) },
		"no coverage":        func(f *FrozenLayer) { f.Coverage = nil },
		"bytes moved across": func(f *FrozenLayer) { f.LayerID, f.SectionKey = "floodh", "azards" },
	}
	seen := map[[32]byte]string{frozenDigest(base): "base"}
	for name, change := range variants {
		f := base
		change(&f)
		d := frozenDigest(f)
		if prev, ok := seen[d]; ok {
			t.Errorf("%s has the digest of %s", name, prev)
		}
		seen[d] = name
	}
	if frozenDigest(base) != frozenDigest(base) {
		t.Fatal("digest not deterministic")
	}
}
