package faultsuite

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestMissingTile: one tile file of a published release is deleted from the
// file store. A query over that layer answers the layer as unavailable with
// reason source_unavailable (never a 5xx, never a silent no_data), and the
// server log has a WARN-or-above line naming the missing tile or its release
// so an operator can find it.
func TestMissingTile(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	e := env{dataDir: scratchDir(t), dsn: dsn}
	l := openLedger(t, dsn)
	cat := loadCatalogue(t, e, l)
	tn := newTenant(t, l, "Tile reader", tenantCredits)

	rel := cat.releases[freeLayer]
	tiles, err := filepath.Glob(filepath.Join(e.dataDir, "store", "releases", freeLayer, rel, "tiles", "*.parquet"))
	if err != nil || len(tiles) == 0 {
		t.Fatalf("no tiles of release %s in the file store: %v", rel, err)
	}
	// The layer's features all lie within 1.5 km of the site: whichever tile
	// is removed, the query needs it. Remove them all but report the first.
	for _, f := range tiles {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	tileName := strings.TrimSuffix(filepath.Base(tiles[0]), ".parquet")

	srv := startServer(t, e)
	c := newClient(t, func() string { return srv.addr })
	site := createSite(t, c, tn.key, 1, nil)
	r := c.do("POST", "/queries", tn.key, map[string]any{
		"site": map[string]any{"kind": "saved_site", "site_id": site}, "layer_ids": []string{freeLayer}, "radius_m": 2000,
	}, "Idempotency-Key", "tile-"+uuid.NewString(), "Prefer", "wait=3")
	if r.status != 200 && r.status != 202 {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	q := r.json(t)
	id := q["query_id"].(string)
	if !pollUntil(30*time.Second, 200*time.Millisecond, func() bool {
		if s := q["status"]; s != "queued" && s != "running" {
			return true
		}
		q = c.do("GET", "/queries/"+id, tn.key, nil).json(t)
		return false
	}) {
		t.Fatalf("query %s did not finish within 30s: %v", id, q)
	}
	layers, _ := q["layers"].([]any)
	if len(layers) != 1 {
		t.Fatalf("query result layers: %v", q)
	}
	y := layers[0].(map[string]any)
	if y["data_status"] != "unavailable" || y["reason"] != "source_unavailable" || y["matched_feature_count"] != nil {
		t.Errorf("layer over a missing tile: %v (want data_status unavailable, reason source_unavailable, count null)", y)
	}
	if q["status"] == "succeeded" {
		t.Errorf("a query whose only layer is unavailable reports status succeeded: %v", q["status"])
	}

	// The log names what is missing, at WARN or above.
	var hits []string
	lineRE := regexp.MustCompile(`level=(WARN|ERROR)`)
	// The line is written before the answer; the poll only covers the copy
	// from the process's stderr pipe into the buffer.
	pollUntil(5*time.Second, 100*time.Millisecond, func() bool {
		hits = hits[:0]
		for _, line := range strings.Split(srv.stderr.String(), "\n") {
			if lineRE.MatchString(line) && (strings.Contains(line, tileName) || strings.Contains(line, rel)) {
				hits = append(hits, line)
			}
		}
		return len(hits) > 0
	})
	if len(hits) == 0 {
		t.Errorf("no WARN or ERROR log line names the missing tile %s or release %s", tileName, rel)
	} else {
		t.Logf("log: %s", hits[0])
	}
}
