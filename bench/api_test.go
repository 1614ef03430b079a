package bench

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"siteenv/ingest/synth"
	"siteenv/ledger/pgembed"
)

// TestAPIAgreesWithPostGIS runs `bench api` on a small slice of the
// synthetic data (every layer's first 500 features, the mix's first 40
// queries, 1 and 2 clients, 200 reads). It proves the harness drives the
// real server end to end (idempotent POST /queries with Prefer: wait, every
// result page), that the API's answers equal PostGIS's set by set, that no
// request was throttled, that the phase timers saw every phase of the
// request path, and that the report ends with the ratio line and the CDF
// plot exists. It needs PostGIS: it fails (never skips) without it.
func TestAPIAgreesWithPostGIS(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	dir := traversableTempDir(t)
	r, err := RunAPI(ctx, APIOptions{
		WorkDir: dir, Scale: synth.Small, Seed: 7, Queries: 40, Clients: []int{1, 2}, Reads: 200, SmallQueries: 20, FreshQueries: 30,
		MaxFeaturesPerLayer: 500, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		LedgerStatements: true,
	})
	if errors.Is(err, ErrNoPostGIS) {
		t.Fatalf("%v (the test needs PostGIS; run scripts/install-bench-tools.sh)", err)
	}
	if err != nil {
		t.Fatalf("RunAPI: %v\nlogs:\n%s", err, logs.String())
	}
	var out strings.Builder
	r.Print(&out)
	t.Log("\n" + out.String())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	c := r.Comparison
	if c.Compared == 0 || c.Matched == 0 {
		t.Fatalf("nothing compared: %+v", c)
	}
	if r.Throttled != 0 {
		t.Errorf("%d requests throttled", r.Throttled)
	}
	if r.Pages < int64(r.Queries) {
		t.Errorf("%d pages for %d queries", r.Pages, r.Queries)
	}
	if d := r.Decode; d.Features == 0 || d.Fast <= 0 || d.Std <= 0 || !strings.Contains(out.String(), "client JSON decoding of the largest page") {
		t.Errorf("decoders not compared: %+v", d)
	}
	// --ledger-statements: every small and fresh pass names the admission
	// among the ledger's statements, with its calls and CPU.
	for _, p := range append(slices.Clip(r.SmallPasses), r.FreshPasses...) {
		i := slices.IndexFunc(p.Statements, func(s statementCPU) bool {
			return strings.HasPrefix(s.SQL, "SELECT * FROM siteenv_admit_answered(")
		})
		if i < 0 || p.Statements[i].Calls == 0 || p.Statements[i].CPU <= 0 {
			t.Errorf("%d clients: the ledger's statements lack the admission: %+v", p.Clients, p.Statements)
		}
	}
	if !strings.Contains(out.String(), "ledger CPU by statement") {
		t.Error("the report lacks the ledger's CPU by statement")
	}
	if !strings.Contains(out.String(), "fsync=on synchronous_commit=on full_page_writes=on GLIBC_TUNABLES="+pgembed.ServerTunables()+"\n") {
		t.Errorf("the report does not state the ledger server's settings:\n%s", out.String())
	}
	for _, s := range r.Passes[0].Phases {
		switch s.Phase.String() {
		case "runner claim", "runner finish":
			// A query run in its request is not claimed, and its answer
			// stores its finish.
			continue
		}
		if s.Count == 0 {
			// Every other phase of POST /queries runs at least once per query.
			t.Errorf("phase %s never timed", s.Phase)
		}
	}
	for i, p := range append(slices.Clip(r.Passes), r.SmallPasses...) {
		n := int64(r.Queries)
		if i >= len(r.Passes) {
			n = int64(r.SmallQueries)
		}
		// Every key made a read before its pass: its answers are begun
		// during their admission.
		if p.Precomputed == 0 {
			t.Errorf("the pass with %d clients: no answer computed during its admission", p.Clients)
		}
		// At least the admission per query (an answer stored with it is
		// one statement; the key's check is in it).
		if p.Ledger.Trips < n || p.Ledger.Statements < p.Ledger.Trips || p.CreateServer.P50 <= 0 {
			t.Errorf("the pass with %d clients: ledger %+v, POST in the server %+v", p.Clients, p.Ledger, p.CreateServer)
		}
	}
	if sc := r.SmallComparison; r.SmallQueries != 20 || len(r.SmallPasses) != 2 || sc.Compared == 0 ||
		!strings.Contains(out.String(), "small mix p50, 1 client") {
		t.Errorf("small-query mix: %d queries, %d passes, %+v", r.SmallQueries, len(r.SmallPasses), sc)
	}
	// The fresh mix: each pass's queries sorted into every answer-size
	// bucket, the server's heap read around it, and the markdown table.
	if fc := r.FreshComparison; r.FreshQueries != 30 || len(r.FreshPasses) != 2 || fc.Compared == 0 {
		t.Errorf("fresh mix: %d queries, %d passes, %+v", r.FreshQueries, len(r.FreshPasses), fc)
	}
	for _, p := range r.FreshPasses {
		n := 0
		for _, b := range p.Buckets {
			n += b.Queries
		}
		if len(p.Buckets) != len(sizeBuckets) || n != r.FreshQueries || p.HeapBefore == 0 || p.HeapAfter == 0 || p.Precomputed == 0 {
			t.Errorf("fresh pass with %d clients: %d bucketed, %+v", p.Clients, n, p)
		}
	}
	if rows := bytes.Count(r.freshTSV, []byte("\n")); rows != r.FreshQueries+1 {
		t.Errorf("the fresh mix's per-query table has %d lines for %d queries", rows, r.FreshQueries)
	}
	if !strings.Contains(out.String(), "read limit is raised from the contract's 120 to 1,000,000 a minute") {
		t.Errorf("the report does not say the server's read limit was raised:\n%s", out.String())
	}
	var md strings.Builder
	r.Markdown(&md, "bench api test")
	if !strings.Contains(md.String(), "| 1-9 |") || !strings.Contains(md.String(), "| whole mix p50 |") {
		t.Errorf("markdown table:\n%s", md.String())
	}
	t.Log("\n" + md.String())
	if r.ContextServer1.P50 <= 0 || r.LayersServer1.P50 <= 0 || r.SequentialReads != 200 {
		t.Errorf("sequential reads not measured: %d, %+v %+v", r.SequentialReads, r.ContextServer1, r.LayersServer1)
	}
	if r.ContextServer.P50 <= 0 || r.Reads.QPS <= 0 {
		t.Errorf("read pass not measured: %+v %+v", r.ContextServer, r.Reads)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "api/postgis p50 ratio: ") {
		t.Errorf("last line %q", last)
	}
	svg, err := os.ReadFile(r.PlotPath)
	if err != nil || !bytes.Contains(svg, []byte("<polyline")) {
		t.Errorf("plot %s: %v", r.PlotPath, err)
	}
	if _, err := os.Stat(r.ReportPath); err != nil {
		t.Error(err)
	}
}
