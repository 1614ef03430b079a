package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// BenchmarkAdmitQueryBatch is POST /queries' admission alone, one round
// trip a query on the test cluster (fsync off: the admission's commit is
// relaxed in production too), with the key authenticated by the admission.
// Its three layers are frozen as bench api's releases are (about 13 KB of
// schema, provenance and coverage a query in its small mix). Two cases:
// an account's next query, its site registered before and found; and what
// bench api measures, each query the first of a new account and site (its
// rate window begun, its usage row and site inserted), admitted to run, and
// the same with its answer (answered: the query stored finished with a
// response of about 3 KB and its audit record, as POST /queries stores a
// small answer computed first), also for an account's next query on its
// site (the stored response renamed to the site found, as a client asking
// again about a site it has does); new_account_then_finish, a query
// admitted running and then its finish stored with the same response and
// audit record (ledger.FinishQueryCompleted, the second round trip of an
// answer computed after its admission, before its response is sent); and,
// the floor under them all, a round
// trip that does nothing (SELECT 1):
//
//	go test -run '^$' -bench AdmitQueryBatch -benchtime 2000x ./ledger/
func BenchmarkAdmitQueryBatch(b *testing.B) {
	b.Run("account_seen", func(b *testing.B) { benchAdmit(b, false, false, false, "") })
	b.Run("account_seen_answered", func(b *testing.B) { benchAdmit(b, false, true, false, "") })
	b.Run("new_account", func(b *testing.B) { benchAdmit(b, true, false, false, "") })
	b.Run("new_account_answered", func(b *testing.B) { benchAdmit(b, true, true, false, "") })
	b.Run("new_account_then_finish", func(b *testing.B) { benchAdmit(b, true, false, true, "") })
	b.Run("round_trip", func(b *testing.B) {
		ctx := context.Background()
		led := ledgertest.New(b, nil)
		for b.Loop() {
			if err := ledger.ExecForTest(ctx, led, `SELECT 1`); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAdmitAnsweredParts is account_seen_answered with the answered
// admission's function (as migration 0028 restated it) cut down, to show what its parts
// cost: each only_* case keeps the key's check, the site's read and that
// one write; reads_only keeps no write at all. The cases are cut from the
// migration's text and fail when it no longer holds what they cut.
//
//	go test -run '^$' -bench AdmitAnsweredParts -benchtime 3000x ./ledger/
func BenchmarkAdmitAnsweredParts(b *testing.B) {
	raw, err := os.ReadFile("migrations/0028_admit_answered_geometry.sql")
	if err != nil {
		b.Fatal(err)
	}
	fn := string(raw)
	// Each part is the text from its first string to its second, and what
	// takes its place.
	parts := []struct{ name, from, to, with string }{
		{"idempotency", "    INSERT INTO idempotency (", "    PERFORM 1 FROM accounts", ""},
		{"lock", "    PERFORM 1 FROM accounts", "    site_created := false;", ""},
		{"site", "    IF scopes @> ARRAY['sites:write'] THEN", "    SELECT s.site_id", ""},
		{"rate", "    rate := rate_count(", "    INSERT INTO queries (", "    rate := 1;\n"},
		{"query", "    INSERT INTO queries (", "    stored := p_status;", ""},
		{"activity", "    INSERT INTO activity (", "END $$;", ""},
	}
	only := func(keep string) string { // fn with every part but keep cut
		s := fn
		for _, p := range parts {
			if p.name != keep {
				s = cutSQL(b, "0028", s, p.from, p.to, p.with)
			}
		}
		return s
	}
	b.Run("whole", func(b *testing.B) { benchAdmit(b, false, true, false, "") })
	for _, p := range []string{"idempotency", "lock", "rate", "query", "activity"} {
		b.Run("only_"+p, func(b *testing.B) { benchAdmit(b, false, true, false, only(p)) })
	}
	b.Run("reads_only", func(b *testing.B) { benchAdmit(b, false, true, false, only("")) })
}

// cutSQL is text with its part from the first from to the to after it
// replaced by with; it fails b when migration's text no longer holds
// them, so a benchmark never measures an uncut function.
func cutSQL(b *testing.B, migration, text, from, to, with string) string {
	b.Helper()
	i := strings.Index(text, from)
	j := strings.Index(text[max(i, 0):], to)
	if i < 0 || j < 0 {
		b.Fatalf("migration %s no longer holds %q ... %q", migration, from, to)
	}
	return text[:i] + with + text[i+j:]
}

// benchAdmit admits queries in a loop: each on an account and site of its
// own (fresh) or all on one, answered or to run. fn, when not empty,
// replaces the answered admission's function after the first admission
// (which registers the site). finish admits each query running and stores
// its finish with its response (FinishQueryCompleted) after it.
func benchAdmit(b *testing.B, fresh, answered, finish bool, fn string) {
	ctx := context.Background()
	led := ledgertest.New(b, nil)
	const warm = 50
	n := 1
	if fresh {
		n = warm + b.N
	}
	keys := make([]string, n)
	for i := range keys {
		a, err := led.CreateAccount(ctx, "", 0)
		if err != nil {
			b.Fatal(err)
		}
		k, err := led.CreateKey(ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{"queries:run", "sites:write"}})
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = k.Secret
	}
	p, err := led.Authenticate(ctx, keys[0]) // for the catalogue's version
	if err != nil {
		b.Fatal(err)
	}
	layers, frozen := benchFrozen(3)
	admit := func(i int) {
		key, fp := keys[0], "fp"
		if fresh {
			key, fp = keys[warm+i], "fp"+strconv.Itoa(i)
		}
		site := ledger.Site{Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: fp,
			Bounds: [4]float64{151, -33.8, 151, -33.8}}
		ar := ledger.AdmitRequest{IdemKey: "k" + strconv.Itoa(i), Operation: "create_query",
			Fingerprint: []byte("f"), Site: site,
			Auth:  &ledger.AdmitAuth{KeyHash: ledger.HashKey(key), Scopes: []string{"queries:run"}, Datasets: layers, Catalogue: p.Catalogue},
			Query: ledger.Query{RadiusM: 100, LayerIDs: layers, Frozen: frozen},
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 1 << 30, MaxRetainedBytes: 1 << 50}, PerMinute: 1 << 30,
				RunNow: finish, MaxRunning: 1 << 30, Lease: time.Minute}}
		var then *ledger.AdmitAnswer
		if answered || finish {
			then = benchAnswer(b, led, &ar, -1)
		}
		if answered {
			ar.Answer = then
		}
		res, err := led.Admit(ctx, ar)
		if err != nil || (answered && !res.Answered) {
			b.Fatal(res, err)
		}
		if finish {
			f, err := led.PrepareFinish(res.Query, ledger.QuerySucceeded, then.Finish.Row.Outcome, "results/x/"+res.Query.ID.String()+".ndjson", 1500,
				then.Finish.Row.ResultCount, 24*time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			kept, err := led.FinishQueryCompleted(ctx, f, res.Principal.IntegrationID, ar.IdemKey, res.Token, then.Response, res.Principal.AccountID, then.Activity)
			if err != nil || !kept {
				b.Fatal(kept, err)
			}
		}
	}
	for i := range warm {
		admit(-1 - i)
		if i == 0 && fn != "" {
			if err := ledger.ExecForTest(ctx, led, fn); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		admit(i)
	}
}

// benchAnswer makes ar an answered admission: a new site, the query
// succeeded with two features in each layer, its response about 3 KB (one
// record 24 times), or with records >= 0 that many records of its own
// (benchRecords).
func benchAnswer(b *testing.B, led *ledger.Ledger, ar *ledger.AdmitRequest, records int) *ledger.AdmitAnswer {
	q := ar.Query
	q.ID, q.CreatedAt = uuid.New(), time.Now()
	ar.Site.ID, ar.Query = uuid.New(), q
	var outcome []ledger.LayerOutcome
	for _, id := range q.LayerIDs {
		n := int64(2)
		outcome = append(outcome, ledger.LayerOutcome{LayerID: id, DataStatus: "available", Coverage: "full", Count: &n})
	}
	n := int64(2 * len(q.LayerIDs))
	f, err := led.PrepareFinish(q, ledger.QuerySucceeded, outcome, "results/x/"+q.ID.String()+".ndjson", 1500, &n, 24*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	features := strings.Repeat(`{"feature_id":"bore-000123","layer_id":"layer-0","distance_m":12.5,"properties":{"name":"A bore","depth_m":42}},`, 24)
	if records >= 0 {
		features = benchRecords(records)
	}
	body := []byte(`{"query_id":"` + q.ID.String() + `","site_id":"` + ar.Site.ID.String() + `","features":[` + features + `{}]}`)
	return &ledger.AdmitAnswer{Finish: f, Response: ledger.IdemResponse{Status: 200, ContentType: "application/json", Body: body},
		Activity: ledger.Activity{Operation: "create_query", Outcome: "completed", RequestID: uuid.New(), HTTPStatus: 200}}
}

// benchRecords is n result records as a response lists them, each with its
// own id, distance and name: they compress as an answer's records do, not
// as one record repeated (about 125 bytes each).
func benchRecords(n int) string {
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"feature_id":"bore-%06d","layer_id":"layer-%d","distance_m":%.1f,"properties":{"name":"Bore %x","depth_m":%d}},`,
			rng.IntN(1_000_000), i%3, rng.Float64()*1000, rng.Uint64(), rng.IntN(300))
	}
	return b.String()
}

// benchFrozen is n layers frozen with a release's share of JSON: a field
// schema of 12 fields, two sources and a coverage polygon of 200 vertices.
func benchFrozen(n int) ([]string, []ledger.FrozenLayer) {
	var ids []string
	var out []ledger.FrozenLayer
	for i := range n {
		id := "layer-" + strconv.Itoa(i)
		var fields []map[string]string
		for f := range 12 {
			fields = append(fields, map[string]string{"name": "field_" + strconv.Itoa(f), "type": "string",
				"description": "A property of the feature as the publisher describes it."})
		}
		schema, _ := json.Marshal(map[string]any{"fields": fields})
		sources, _ := json.Marshal([]map[string]string{
			{"publisher": "NSW Department of Planning", "licence": "CC-BY-4.0", "url": "https://example.gov.au/data/" + id},
			{"publisher": "Geoscience Australia", "licence": "CC-BY-4.0", "url": "https://example.gov.au/ga/" + id}})
		ring := make([][2]float64, 0, 201)
		for v := range 200 {
			a := 2 * math.Pi * float64(v) / 200
			ring = append(ring, [2]float64{150 + 2*math.Cos(a), -33 + 2*math.Sin(a)})
		}
		ring = append(ring, ring[0])
		coverage, _ := json.Marshal(map[string]any{"type": "Polygon", "coordinates": [][][2]float64{ring}})
		rel := "release-" + id
		ids = append(ids, id)
		out = append(out, ledger.FrozenLayer{LayerID: id, SectionKey: "hazards", SchemaVersion: "1",
			FieldSchema: schema, Sources: sources, Coverage: coverage, ReleaseID: &rel})
	}
	return ids, out
}
