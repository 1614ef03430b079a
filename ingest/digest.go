package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"siteenv/store"
	"siteenv/tiles"
)

// Re-ingesting the same files is a no-op that costs a read of their bytes,
// not a parse: before parsing, Run digests the inputs (every file's bytes
// and name, a Shapefile's companions) with everything else that decides
// the release (the layer definition, the options that change rows), and
// looks the digest up under ingest-digests/ in the store. A hit names a
// release whose manifest is in the store: Run publishes it again (the
// ledger side is idempotent) and reports it without reading a row. A run
// with rejected rows records no digest, so its rejects file is written
// again next time.

// digestRecord is what a digest object holds: the summary to replay.
type digestRecord struct {
	ReleaseID     string            `json:"release_id"`
	Repaired      int64             `json:"repaired"`
	DroppedFields []string          `json:"dropped_fields,omitempty"`
	RenamedFields map[string]string `json:"renamed_fields,omitempty"`
	KeptFields    []string          `json:"kept_fields,omitempty"`
}

func digestKey(layerID, digest string) string {
	return "ingest-digests/" + layerID + "/" + digest + ".json"
}

// inputDigest returns the SHA-256 of files and the options that decide
// their release.
func inputDigest(cfg *config, files []string) (string, error) {
	h := sha256.New()
	def, err := json.Marshal(cfg.Layer)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "siteenv ingest digest v1\x00%s\x00%s\x00%s\x00%s\x00%t\x00%t\x00%d\x00%d\x00%d\x00",
		def, cfg.SourceCRS, cfg.Table, cfg.IDProperty, cfg.Repair, cfg.DropUnknownFields, cfg.MaxRejects, cfg.MaxVertices, cfg.TileRows)
	if cfg.KeepUnknownFields { // only then: earlier runs' digests stay valid
		fmt.Fprint(h, "keep-unknown-fields\x00")
	}
	for _, name := range files {
		for _, f := range withCompanions(name) {
			r, err := os.Open(f)
			if errors.Is(err, os.ErrNotExist) && f != name {
				continue
			}
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s\x00", filepath.Base(f))
			n, err := io.Copy(h, r)
			r.Close()
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "\x00%d\x00", n)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// withCompanions lists name and, for a .shp, the files read beside it.
func withCompanions(name string) []string {
	ext := filepath.Ext(name)
	if !strings.EqualFold(ext, ".shp") {
		return []string{name}
	}
	base := strings.TrimSuffix(name, ext)
	out := []string{name}
	for _, e := range []string{".shx", ".dbf", ".prj", ".cpg", ".SHX", ".DBF", ".PRJ", ".CPG"} {
		out = append(out, base+e)
	}
	return out
}

// replayDigest returns the summary of an earlier run with the same digest,
// published again, or ok false.
func replayDigest(ctx context.Context, cfg *config, digest string) (sum Summary, ok bool, err error) {
	obj, err := cfg.Store.Open(ctx, digestKey(cfg.Layer.LayerID, digest))
	if errors.Is(err, store.ErrNotExist) {
		return sum, false, nil
	}
	if err != nil {
		return sum, false, err
	}
	b, err := io.ReadAll(io.NewSectionReader(obj, 0, obj.Size()))
	obj.Close()
	if err != nil {
		return sum, false, err
	}
	var rec digestRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.ReleaseID == "" {
		return sum, false, nil // unreadable: ingest as if new
	}
	m, err := tiles.ReadManifest(ctx, cfg.Store, cfg.Layer.LayerID, rec.ReleaseID)
	if err != nil {
		return sum, false, nil
	}
	def := cfg.Layer
	if len(rec.KeptFields) > 0 { // the release's schema has the kept columns
		if def, err = keptLayer(def, rec.KeptFields); err != nil {
			return sum, false, nil
		}
	}
	if cfg.Publisher != nil {
		if err := cfg.Publisher.Publish(ctx, def, m); err != nil {
			return sum, false, fmt.Errorf("ingest: publish %s: %w", m.ReleaseID, err)
		}
	}
	sum = Summary{LayerID: cfg.Layer.LayerID, ReleaseID: m.ReleaseID, Features: m.FeatureCount, Tiles: len(m.Tiles),
		AlreadyPublished: true, SameInput: true, Repaired: rec.Repaired, DroppedFields: rec.DroppedFields, RenamedFields: rec.RenamedFields, KeptFields: rec.KeptFields}
	for _, t := range m.Tiles {
		sum.Bytes += t.Bytes
	}
	return sum, true, nil
}

// recordDigest remembers that digest made sum's release.
func recordDigest(ctx context.Context, cfg *config, digest string, sum Summary) error {
	b, err := json.Marshal(digestRecord{ReleaseID: sum.ReleaseID, Repaired: sum.Repaired, DroppedFields: sum.DroppedFields, RenamedFields: sum.RenamedFields, KeptFields: sum.KeptFields})
	if err != nil {
		return err
	}
	err = cfg.Store.Put(ctx, digestKey(cfg.Layer.LayerID, digest), bytes.NewReader(b), int64(len(b)))
	if errors.Is(err, store.ErrExists) {
		return nil
	}
	return err
}
