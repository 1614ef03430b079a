package api_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"siteenv/api"
	"siteenv/engine"
	"siteenv/jobs"
)

// TestQueryPagesAfterTheResultFileIsLost: a query answered in its request
// has its result file written behind the answer. Were the replica to die
// before that write (here: the file deleted, a new runner with nothing in
// memory), the query's next page recomputes the result from the frozen
// row: the cursor the answer gave continues it, with the same features,
// and the result is stored again.
func TestQueryPagesAfterTheResultFileIsLost(t *testing.T) {
	qh := setupQueries(t, true)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b100": east(100), "b900": east(900), "b3000": east(3000)})
	k := qh.key(qh.account(0), nil, "queries:run", "sites:read", "sites:write")
	r := qh.query(k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]},
		"layer_ids": []string{"nsw.bores"}, "radius_m": 1000, "page_size": 1}, "Prefer", "wait=3")
	if r.status != 200 {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	m := r.json(t)
	if got := fmt.Sprint(featureIDs(m)); m["status"] != "succeeded" || got != "[b100]" {
		t.Fatalf("answer %s", r.body)
	}
	qid := m["query_id"].(string)
	next := m["page"].(map[string]any)["next_cursor"].(string)

	// The replica dies: its runner stops (the write behind finishes), the
	// file is lost, and a new runner starts with nothing in memory.
	if err := qh.runner.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	infos, err := qh.store.List(qh.ctx, "results/")
	if err != nil || len(infos) != 1 || !strings.Contains(infos[0].Key, qid) {
		t.Fatalf("stored results %v, %v; want the query's file", infos, err)
	}
	if err := qh.store.Delete(qh.ctx, infos[0].Key); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(qh.store, engine.Options{MemoryBudget: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := jobs.New(jobs.Config{Workers: 1, Poll: 20 * time.Millisecond, TempDir: t.TempDir()}, qh.led, eng, qh.store)
	if err != nil {
		t.Fatal(err)
	}
	api.SetQueryBackend(qh.srv, qh.store, fresh)

	p2 := qh.do("GET", "/queries/"+qid+"/results?limit=1&cursor="+url.QueryEscape(next), k.Secret, nil).json(t)
	if got := fmt.Sprint(featureIDs(p2)); got != "[b900]" || p2["page"].(map[string]any)["has_more"] != false {
		t.Fatalf("the page after the lost file: %v", p2)
	}
	all := qh.do("GET", "/queries/"+qid+"/results?limit=10", k.Secret, nil).json(t)
	if got := fmt.Sprint(featureIDs(all)); got != "[b100 b900]" {
		t.Fatalf("the whole result after the lost file: %v", got)
	}
	qh.waitStored(t, infos[0].Key)
}

// waitStored waits (bounded) until key is stored again.
func (qh *queryHarness) waitStored(t *testing.T, key string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := qh.store.Stat(qh.ctx, key); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not stored again", key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
