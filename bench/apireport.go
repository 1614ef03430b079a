package bench

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"siteenv/ingest/synth"
	"siteenv/internal/phase"
)

// apiPassReport is one client count's API and PostGIS figures, with the
// server-side phase sums of the API pass.
type apiPassReport struct {
	Clients      int
	API, PostGIS latency
	Phases       []phase.Sum
	// Ledger is what the pass cost the ledger's PostgreSQL (ledgerCost).
	Ledger ledgerCost
	// Statements are the ledger's CPU by statement during the API pass
	// (APIOptions.LedgerStatements; nil without).
	Statements []statementCPU
	// CreateServer is POST /queries' time inside the server.
	CreateServer latency
	// Precomputed counts the queries whose answer was computed during
	// their admission (api/precompute.go); AnsweredFirst those of them
	// stored with their answer in the admission's round trip
	// (api.answerFirst).
	Precomputed, AnsweredFirst int64
	// Buckets are the pass's p50s by answer size (the fresh mix's).
	Buckets []bucketFigures
	// HeapBefore and HeapAfter are the bench process's Go heap in use
	// (server, engine, clients) after a collection, before and after the
	// API pass: a server that keeps something per request grows it.
	HeapBefore, HeapAfter uint64
	// APICPU and PostGISCPU are the CPU the API pass and the PostGIS pass
	// used (cpu.go): the bench process (server and clients, or PostGIS's
	// clients), the ledger's cluster and PostGIS's. Set for the small and
	// fresh mixes.
	APICPU, PostGISCPU cpuTimes
}

// APIReport is what RunAPI measured.
type APIReport struct {
	Scale          synth.Scale
	Seed           int64
	CPUs           int
	Queries        int
	LineQueries    int // of the mix, left out: the contract has no line sites
	Layers         int
	Features       int64
	Accounts       int // accounts created (each with one all-scopes key)
	QueryAccounts  int // of which run the mix: the warm-up and each pass have their own
	PassCount      int // passes of the mix (client counts)
	Workers        int // the runner's query workers
	LedgerSettings [][2]string
	PostGISVersion string
	Load           string // load average at the start and the end
	LoadAfter      string

	Passes []apiPassReport
	// SmallQueries, SmallPasses and SmallComparison are the small-query
	// mix's (smallmix.go): its size, its passes, its check.
	SmallQueries    int
	SmallPasses     []apiPassReport
	SmallComparison comparison
	// FreshQueries, FreshPasses and FreshComparison are the fresh mix's
	// (freshmix.go).
	FreshQueries                      int
	FreshPasses                       []apiPassReport
	FreshComparison                   comparison
	Requests, Pages, Polls, Throttled int64
	RateLimited                       int64 // of Throttled, answered 429
	// Waited is the time clients slept on Retry-After, left out of the
	// latencies; WaitedQueries the queries that slept.
	Waited                      time.Duration
	WaitedQueries               int64
	QueriesPath                 string // the per-query table of the first pass
	FreshQueriesPath            string // the fresh mix's, of its first pass (none without it)
	Decode                      decodeFigures
	Comparison                  comparison
	ReadCount                   int
	Reads                       latency // client side, readClients clients
	ContextServer, LayersServer latency // inside the server
	// SequentialReads follow with one client: in-server time without
	// queueing.
	SequentialReads               int
	ContextServer1, LayersServer1 latency
	ReadPhases                    []phase.Sum
	ReportPath, PlotPath          string
	apiLat, pgLat                 []time.Duration
	// Subdivided: the heavy scale's second baseline, one client (nil
	// otherwise).
	Subdivided           *subdividedReport
	queriesTSV, freshTSV []byte

	EngineBudget, EngineNeed int64       // the engine's budget, and the bytes of all its shards
	Budget                   budgetStats // shard traffic of the API passes
	Memory                   memFigures  // peak resident memory of the bench and its PostgreSQL clusters
}

// Err is ErrMismatch when the API's answers differ from PostGIS's beyond
// boundary cases.
func (r *APIReport) Err() error {
	c := r.Comparison
	for _, sc := range []comparison{r.SmallComparison, r.FreshComparison} {
		c.EngineWrong, c.CoverageWrong, c.Unexplained, c.Differing = c.EngineWrong+sc.EngineWrong, c.CoverageWrong+sc.CoverageWrong,
			c.Unexplained+sc.Unexplained, c.Differing+sc.Differing
	}
	if c.EngineWrong+c.CoverageWrong == 0 && c.Unexplained == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d features the API got wrong, %d wrong outside_coverage answers, in %d differing layer results (%d unexplained)",
		ErrMismatch, c.EngineWrong, c.CoverageWrong, c.Differing, c.Unexplained)
}

// P50Ratio and P99Ratio are API over PostGIS latency with the first
// client count (1 by default).
func (r *APIReport) P50Ratio() float64 {
	if len(r.Passes) == 0 {
		return 0
	}
	return ratio(ms(r.Passes[0].API.P50), ms(r.Passes[0].PostGIS.P50))
}

func (r *APIReport) P99Ratio() float64 {
	if len(r.Passes) == 0 {
		return 0
	}
	return ratio(ms(r.Passes[0].API.P99), ms(r.Passes[0].PostGIS.P99))
}

// Print writes the report; the last line is
// "api/postgis p50 ratio: R50, p99 ratio: R99".
func (r *APIReport) Print(w io.Writer) {
	c := r.Comparison
	fmt.Fprintf(w, "siteenv bench api: scale %s, seed %d, %d CPUs, load average %s at start, %s at end\n", r.Scale, r.Seed, r.CPUs, r.Load, r.LoadAfter)
	fmt.Fprintf(w, "data: %s features in %d layers; mix: the first %d queries of bench engine's mix (same seed) less its %d line sites (the contract's sites are points and polygons): %d queries\n",
		group(r.Features), r.Layers, r.Queries+r.LineQueries, r.LineQueries, r.Queries)
	fmt.Fprintf(w, "server: api.Server's fasthttp server on a TCP listener in this process (the code path of `siteenv serve`), jobs runner with %d workers, engine preloaded, file store; ledger on PostgreSQL with %s\n",
		r.Workers, settingsString(r.LedgerSettings))
	fmt.Fprintf(w, "client: POST /queries (Idempotency-Key, Prefer: wait=3, include_geometry false, page_size %d), polling on 202, then GET .../results?include_geometry=false&limit=%d until has_more is false\n", apiPageLimit, apiPageLimit)
	fmt.Fprintf(w, "accounts: %d, each with one all-scopes key: %d run the mix (the warm-up and each of the %d passes run query i on an account of their own, whose key made one GET /context before the pass), %d the read pass (at most %d reads each); the server's read limit is raised from the contract's 120 to %s a minute an account, so a query's pages are never throttled\n",
		r.Accounts, r.QueryAccounts, r.PassCount, r.Accounts-r.QueryAccounts, readsPerAccount, group(serverReadsPerMinute))
	fmt.Fprintf(w, "requests: %d (%d result pages, %d polls after 202; %d answers retried after Retry-After, of which %d were 429 rate_limited)\n",
		r.Requests, r.Pages, r.Polls, r.Throttled, r.RateLimited)
	if r.Decode.Bytes > 0 {
		fmt.Fprintf(w, "client JSON decoding of the largest page (%d features, %s bytes): goccy/go-json (the clients' decoder) %.3f ms, encoding/json %.3f ms\n",
			r.Decode.Features, group(int64(r.Decode.Bytes)), ms(r.Decode.Fast), ms(r.Decode.Std))
	}
	fmt.Fprintf(w, "rate-limit waits: %d queries slept %.1f s in all on Retry-After, left out of the latencies (the contract's limit is policy, not speed); queries/s is clients / mean latency on both sides\n",
		r.WaitedQueries, r.Waited.Seconds())
	fmt.Fprintf(w, "check (first pass): %d layer results compared, %s features matched, %d layers failed on a limit (not compared), %d outside coverage (not compared)\n",
		c.Compared, group(c.Matched), c.Failed, c.OutsideCoverage)
	fmt.Fprintf(w, "mismatches: %d layer results differ; %d within 1 cm of the radius (excluded), %d API wrong, %d PostGIS wrong, %d unexplained, %d wrong outside_coverage\n",
		c.Differing, c.Boundary, c.EngineWrong, c.PostGISWrong, c.Unexplained, c.CoverageWrong)
	for i, m := range c.Mismatches {
		if i == maxPrinted {
			fmt.Fprintf(w, "  ... %d more\n", len(c.Mismatches)-maxPrinted)
			break
		}
		if !m.Boundary {
			fmt.Fprintf(w, "  mismatch: %s\n", m)
		}
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tAPI end to end\tPostGIS %s\tAPI/PostGIS\t\n", r.PostGISVersion)
	row := func(name string, a, b float64, unit string) {
		fmt.Fprintf(tw, "%s\t%.3f %s\t%.3f %s\t%.3f\t\n", name, a, unit, b, unit, ratio(a, b))
	}
	for _, p := range r.Passes {
		n := fmt.Sprintf(", %d client", p.Clients)
		if p.Clients > 1 {
			n += "s"
		}
		row("p50"+n, ms(p.API.P50), ms(p.PostGIS.P50), "ms")
		row("p99"+n, ms(p.API.P99), ms(p.PostGIS.P99), "ms")
		row("mean"+n, ms(p.API.Mean), ms(p.PostGIS.Mean), "ms")
		row("queries/s"+n, p.API.QPS, p.PostGIS.QPS, "q/s")
	}
	for _, p := range r.SmallPasses {
		n := fmt.Sprintf(", %d client", p.Clients)
		if p.Clients > 1 {
			n += "s"
		}
		row("small mix p50"+n, ms(p.API.P50), ms(p.PostGIS.P50), "ms")
		row("small mix p99"+n, ms(p.API.P99), ms(p.PostGIS.P99), "ms")
		row("small mix mean"+n, ms(p.API.Mean), ms(p.PostGIS.Mean), "ms")
		row("small mix queries/s"+n, p.API.QPS, p.PostGIS.QPS, "q/s")
	}
	for _, p := range r.FreshPasses {
		n := fmt.Sprintf(", %d client", p.Clients)
		if p.Clients > 1 {
			n += "s"
		}
		row("fresh mix p50"+n, ms(p.API.P50), ms(p.PostGIS.P50), "ms")
		row("fresh mix p99"+n, ms(p.API.P99), ms(p.PostGIS.P99), "ms")
		row("fresh mix mean"+n, ms(p.API.Mean), ms(p.PostGIS.Mean), "ms")
		row("fresh mix queries/s"+n, p.API.QPS, p.PostGIS.QPS, "q/s")
	}
	tw.Flush()
	if r.Subdivided != nil && len(r.Passes) > 0 {
		if p := r.Passes[0]; p.Clients == 1 {
			r.Subdivided.print(w, "API", p.API, latency{})
		}
	}
	fmt.Fprintln(w)
	if r.SmallQueries > 0 {
		sc := r.SmallComparison
		fmt.Fprintf(w, "small mix: %d queries (60%% points, 40%% lots up to about 300 m across, near the clustered features; radius log-uniform 10 m - 10 km; 1, 3 or 5 layers)\n", r.SmallQueries)
		fmt.Fprintf(w, "small mix check (first pass): %d layer results compared, %s features matched; %d differ, %d within 1 cm of the radius, %d API wrong, %d PostGIS wrong, %d unexplained, %d wrong outside_coverage\n",
			sc.Compared, group(sc.Matched), sc.Differing, sc.Boundary, sc.EngineWrong, sc.PostGISWrong, sc.Unexplained, sc.CoverageWrong)
		for _, p := range r.SmallPasses {
			fmt.Fprintf(w, "small mix, %d client(s): POST /queries inside the server p50 %.3f ms, p99 %.3f ms; ledger per query %s; %d answers computed during their admission, %d of them stored with it\n",
				p.Clients, ms(p.CreateServer.P50), ms(p.CreateServer.P99), p.Ledger.perQuery(r.SmallQueries), p.Precomputed, p.AnsweredFirst)
			printStatements(w, p.Statements, r.SmallQueries)
		}
		fmt.Fprintln(w)
	}

	if r.FreshQueries > 0 {
		r.printFresh(w)
	}
	if r.ReadCount > 0 {
		fmt.Fprintf(w, "authenticated reads (GET /context and GET /layers alternately, %d clients, %d requests): %.0f reads/s; client p50 %.3f ms, p99 %.3f ms\n",
			readClients, r.ReadCount, r.Reads.QPS, ms(r.Reads.P50), ms(r.Reads.P99))
		fmt.Fprintf(w, "inside the server: GET /context p50 %.3f ms, p99 %.3f ms; GET /layers p50 %.3f ms, p99 %.3f ms\n",
			ms(r.ContextServer.P50), ms(r.ContextServer.P99), ms(r.LayersServer.P50), ms(r.LayersServer.P99))
		fmt.Fprintf(w, "inside the server, %d reads with 1 client: GET /context p50 %.3f ms, p99 %.3f ms; GET /layers p50 %.3f ms, p99 %.3f ms\n",
			r.SequentialReads, ms(r.ContextServer1.P50), ms(r.ContextServer1.P99), ms(r.LayersServer1.P50), ms(r.LayersServer1.P99))
		fmt.Fprintln(w)
	}
	for _, p := range r.Passes {
		fmt.Fprintf(w, "API pass with %d client(s): POST /queries inside the server p50 %.3f ms, p99 %.3f ms, mean %.3f ms; %d answers computed during their admission, %d of them stored with it\n",
			p.Clients, ms(p.CreateServer.P50), ms(p.CreateServer.P99), ms(p.CreateServer.Mean), p.Precomputed, p.AnsweredFirst)
		fmt.Fprintf(w, "  ledger per query (every request of the pass, runner and background writers included, counted): %s (pg_stat_wal)\n",
			p.Ledger.perQuery(r.Queries))
		fmt.Fprintf(w, "  heap in use (bench process, after a collection): %s before the pass, %s after\n", mib(p.HeapBefore), mib(p.HeapAfter))
		fmt.Fprintf(w, "server-side time per phase, API pass with %d client(s), per query of the mix:\n", p.Clients)
		printPhases(w, p.Phases, r.Queries)
	}
	for _, p := range r.SmallPasses {
		fmt.Fprintf(w, "server-side time per phase, small-query mix with %d client(s), per query (heap in use %s before, %s after):\n",
			p.Clients, mib(p.HeapBefore), mib(p.HeapAfter))
		printPhases(w, p.Phases, r.SmallQueries)
	}
	for _, p := range r.FreshPasses {
		fmt.Fprintf(w, "server-side time per phase, fresh mix with %d client(s), per query:\n", p.Clients)
		printPhases(w, p.Phases, r.FreshQueries)
	}
	if r.ReadCount > 0 {
		fmt.Fprintf(w, "server-side time per phase, read pass, per read:\n")
		printPhases(w, r.ReadPhases, r.ReadCount)
	}
	r.Budget.print(w, r.EngineBudget, r.EngineNeed)
	r.Memory.print(w)
	fmt.Fprintf(w, "latency CDF (1 client, API vs PostGIS): %s\n", r.PlotPath)
	fmt.Fprintf(w, "query by query (first pass, slowest first): %s\n", r.QueriesPath)
	if r.FreshQueriesPath != "" {
		fmt.Fprintf(w, "fresh mix query by query (first pass, slowest first): %s\n", r.FreshQueriesPath)
	}
	fmt.Fprintf(w, "api/postgis p50 ratio: %.3f, p99 ratio: %.3f\n", r.P50Ratio(), r.P99Ratio())
}

func printPhases(w io.Writer, sums []phase.Sum, per int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  phase\tcalls\tmean/call\tper unit\tshare of request time\t\n")
	var total time.Duration
	for _, s := range sums {
		if s.Phase == phase.Total {
			total = s.Total
		}
	}
	for _, s := range sums {
		if s.Count == 0 {
			continue
		}
		share := "-"
		// Runner phases run beside requests (inside "waiting for the runner").
		switch s.Phase {
		case phase.Claim, phase.Engine, phase.ResultWrite, phase.Finish:
			share = "(in wait)"
		default:
			share = fmt.Sprintf("%.1f%%", 100*ratio(float64(s.Total), float64(total)))
		}
		fmt.Fprintf(tw, "  %s\t%d\t%.3f ms\t%.3f ms\t%s\t\n", s.Phase, s.Count,
			ms(s.Total)/float64(s.Count), ms(s.Total)/float64(max(per, 1)), share)
	}
	tw.Flush()
	fmt.Fprintln(w, "  (ledger round trips: every round trip sent with a request's context, one call each, timed by the pool's tracer;"+
		" they overlap authentication, waiting for the runner and the audit record, which include their own)")
}

// cdfSVG plots the latency CDFs of the first pass: API end to end and
// PostGIS, log-scaled milliseconds against cumulative fraction.
func cdfSVG(r *APIReport, apiLat, pgLat []time.Duration) []byte {
	const (
		W, H         = 800, 500
		left, right  = 70, 20
		top, bottom  = 40, 60
		plotW, plotH = W - left - right, H - top - bottom
	)
	a, p := slices.Clone(apiLat), slices.Clone(pgLat)
	slices.Sort(a)
	slices.Sort(p)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range [][]time.Duration{a, p} {
		if len(s) > 0 {
			lo = min(lo, max(ms(s[0]), 0.001))
			hi = max(hi, ms(s[len(s)-1]))
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0.01, 1
	}
	lmin, lmax := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if lmax <= lmin {
		lmax = lmin + 1
	}
	x := func(v float64) float64 {
		return left + (math.Log10(max(v, math.Pow(10, lmin)))-lmin)/(lmax-lmin)*plotW
	}
	y := func(f float64) float64 { return top + (1-f)*plotH }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	clients := 1
	if len(r.Passes) > 0 {
		clients = r.Passes[0].Clients
	}
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="14">siteenv bench api: latency CDF, %d queries, %d client(s), scale %s</text>`+"\n", left, r.Queries, clients, r.Scale)
	for e := lmin; e <= lmax; e++ {
		px := x(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", px, top, px, top+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%g ms</text>`+"\n", px, top+plotH+18, math.Pow(10, e))
	}
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 0.9, 0.99, 1} {
		py := y(f)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, py, left+plotW, py)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", left-6, py+4, f)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">latency (log scale)</text>`+"\n", left+plotW/2, H-15)
	line := func(s []time.Duration, color, name string, row int) {
		if len(s) == 0 {
			return
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, color)
		step := max(len(s)/1000, 1)
		for i := 0; i < len(s); i += step {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(ms(s[i])), y(float64(i+1)/float64(len(s))))
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x(ms(s[len(s)-1])), y(1))
		b.WriteString("\"/>\n")
		ly := top + 20 + 18*row
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s (p50 %.3f ms, p99 %.3f ms)</text>`+"\n",
			left+plotW-330, ly, left+plotW-300, ly, color, left+plotW-295, ly+4, name, ms(percentile(s, 0.5)), ms(percentile(s, 0.99)))
	}
	line(a, "#d62728", "API end to end", 0)
	line(p, "#1f77b4", "PostGIS "+r.PostGISVersion, 1)
	b.WriteString("</svg>\n")
	return b.Bytes()
}
