package api_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
)

// A query answered whole in its POST has its finish stored behind the
// answer (queries/finishbehind.go). Its client reads its own answer at once on the
// replica: GET of the query and of its results (which wait for the key's
// pending finishes) see it succeeded with the same features, a retry with
// the same Idempotency-Key replays the answer byte for byte, and once
// stored the ledger holds the query succeeded. A query whose answer spans
// pages stores its finish before the answer, as before.
func TestFinishStoredBehindTheAnswer(t *testing.T) {
	t.Parallel()
	qh := setupQueries(t, true)
	qh.points("nsw.bores", "water", 0, 5000, nil, map[string]orb.Point{"b10": east(10), "b50": east(50), "b900": east(900)})
	acct := qh.account(0)
	k := qh.key(acct, nil, "queries:run", "sites:read", "sites:write")
	for i := range 20 {
		idem := uuid.NewString()
		body := map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0] + float64(i)*0.00001, "latitude": origin[1]},
			"layer_ids": []string{"nsw.bores"}, "radius_m": 100}
		r := qh.do("POST", "/queries", k.Secret, body, "Idempotency-Key", idem, "Prefer", "wait=3")
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		m := r.json(t)
		qid := m["query_id"].(string)
		want := fmt.Sprint(featureIDs(m))
		if m["status"] != "succeeded" || m["page"].(map[string]any)["has_more"] != false {
			t.Fatalf("answer %s", r.body)
		}
		g := qh.do("GET", "/queries/"+qid, k.Secret, nil).json(t)
		if g["status"] != "succeeded" {
			t.Fatalf("GET right after the answer: %v", g)
		}
		if got := fmt.Sprint(featureIDs(qh.do("GET", "/queries/"+qid+"/results?limit=10", k.Secret, nil).json(t))); got != want {
			t.Fatalf("results right after the answer: %s, want %s", got, want)
		}
		again := qh.do("POST", "/queries", k.Secret, body, "Idempotency-Key", idem, "Prefer", "wait=3")
		if again.status != 200 || !bytes.Equal(again.body, r.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s %v", again.status, again.body, again.header)
		}
		qh.srv.WaitFinishesBehind()
		id, _ := uuid.Parse(qid)
		q, err := qh.led.Query(qh.ctx, acct, id)
		if err != nil || q.Status != "succeeded" {
			t.Fatalf("stored %+v, %v", q, err)
		}
	}
	// Spanning pages: stored before the answer.
	r := qh.query(k.Secret, map[string]any{"site": map[string]any{"kind": "point", "longitude": origin[0], "latitude": origin[1]},
		"layer_ids": []string{"nsw.bores"}, "radius_m": 1000, "page_size": 1}, "Prefer", "wait=3")
	m := r.json(t)
	if r.status != 200 || m["page"].(map[string]any)["has_more"] != true {
		t.Fatalf("paged answer %d %s", r.status, r.body)
	}
	id, _ := uuid.Parse(m["query_id"].(string))
	if q, err := qh.led.Query(qh.ctx, acct, id); err != nil || q.Status != "succeeded" {
		t.Fatalf("a paged answer's query %+v, %v: want it stored before the answer", q, err)
	}
}
