package faultsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"siteenv/api/openapi/openapitest"
	"siteenv/artifacts"
	"siteenv/ledger"
	"siteenv/store"
	"siteenv/store/s3test"
)

// The production shape, proven together: several `siteenv serve` replicas
// on one PostgreSQL database and one S3 bucket (versitygw), as real
// processes. Everything a replica knows comes from the database and the
// bucket, so what one replica writes, mints or claims the others read,
// accept and finish, and every limit is counted once for the account.
//
// Between the replicas and versitygw sits s3gate, a TCP relay the test can
// pause: a query whose shards a replica has not loaded yet then blocks on
// its first S3 read, which keeps it "running" for as long as the test needs
// (and shows that shard loads are lazy: replicas start with S3 reachable and
// read tiles only when a query needs them).

// s3gate relays TCP connections to an S3 server; while paused it forwards
// nothing in either direction (connections stay open, bytes wait).
type s3gate struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	open     chan struct{} // closed while forwarding
	conns    map[net.Conn]struct{}
	closed   bool
}

func newS3Gate(t *testing.T, upstream string) *s3gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &s3gate{ln: ln, upstream: upstream, open: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(g.open)
	go g.accept()
	t.Cleanup(g.close)
	return g
}

func (g *s3gate) addr() string { return g.ln.Addr().String() }

func (g *s3gate) accept() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", g.upstream)
		if err != nil {
			c.Close()
			continue
		}
		if !g.track(c, u) {
			return
		}
		go g.pipe(u, c)
		go g.pipe(c, u)
	}
}

func (g *s3gate) track(cs ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		g.conns[c] = struct{}{}
	}
	return true
}

func (g *s3gate) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			g.mu.Lock()
			open := g.open
			g.mu.Unlock()
			<-open
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pause holds every byte from now on until resume.
func (g *s3gate) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

func (g *s3gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *s3gate) close() {
	g.resume()
	g.mu.Lock()
	g.closed = true
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.ln.Close()
}

// cluster is one database, one bucket behind the gate, and the catalogue.
type cluster struct {
	t    *testing.T
	e    env // the deployment's environment: database, S3 store, secret
	l    *ledger.Ledger
	gate *s3gate
	v    *openapitest.Validator
	cat  catalogue
	n    int // replicas started
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	endpoint, ak, sk, bucket := s3test.Start(t)
	gate := newS3Gate(t, endpoint)
	dsn := newDatabase(t)
	c := &cluster{t: t, gate: gate, v: openapitest.New(t), l: openLedger(t, dsn)}
	// Exactly what scripts/cluster.sh (and a real deployment) sets on every
	// replica and command, with the store in S3.
	c.e = env{dataDir: scratchDir(t), dsn: dsn, extra: []string{
		"SITEENV_STORE=s3://" + bucket + "/cluster",
		"SITEENV_S3_ENDPOINT=http://" + gate.addr(),
		"SITEENV_S3_ACCESS_KEY=" + ak,
		"SITEENV_S3_SECRET_KEY=" + sk,
		"SITEENV_S3_REGION=us-east-1",
		"SITEENV_ENGINE_MEMORY=64MiB",
	}}
	c.cat = loadCatalogue(t, c.e, c.l)
	return c
}

// noShard is a replica's engine budget under one shard: its warm start
// leaves nothing resident, so each query reads its tiles from S3 (the steps
// that hold S3 to keep a query running start their replicas with it).
const noShard = "SITEENV_ENGINE_MEMORY=1KiB"

// replica starts one more `siteenv serve` on the shared database and bucket,
// with its own scratch data dir (a replica keeps nothing there) and extra
// settings.
func (c *cluster) replica(t *testing.T, extra ...string) *server {
	t.Helper()
	return c.replicaArgs(t, extra)
}

// replicaArgs is replica with args after `siteenv serve`'s own.
func (c *cluster) replicaArgs(t *testing.T, extra []string, args ...string) *server {
	t.Helper()
	c.n++
	e := c.e
	e.dataDir = filepath.Join(scratchDir(t), fmt.Sprintf("replica-%d", c.n))
	e.extra = append(append([]string(nil), c.e.extra...), extra...)
	return startServer(t, e, args...)
}

// client talks to one replica; every response is validated.
func (c *cluster) client(t *testing.T, s *server) *client {
	return &client{t: t, v: c.v, addr: func() string { return s.addr }}
}

func (c *cluster) tenant(t *testing.T, credits int64) tenant {
	t.Helper()
	return newTenant(t, c.l, "cluster "+uuid.NewString()[:8], credits)
}

// queryStatus reads a query's status from the database (the test's view,
// independent of any replica).
func (c *cluster) queryStatus(t *testing.T, id string) string {
	t.Helper()
	s, err := c.l.QueryStatus(context.Background(), uuid.MustParse(id))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitStatus polls the database until query id has status want.
func (c *cluster) waitStatus(t *testing.T, id, want string, timeout time.Duration) {
	t.Helper()
	var got string
	if !pollUntil(timeout, 50*time.Millisecond, func() bool { got = c.queryStatus(t, id); return got == want }) {
		t.Fatalf("query %s is %s after %v, want %s", id, got, timeout, want)
	}
}

// postQuery posts a query of the free layer around site with Prefer: wait=N.
func postQuery(t *testing.T, cl *client, key, site string, wait int, idem string) result {
	t.Helper()
	return cl.do("POST", "/queries", key, map[string]any{
		"site": map[string]any{"kind": "saved_site", "site_id": site}, "layer_ids": []string{freeLayer}, "radius_m": 2000, "page_size": 7,
	}, "Idempotency-Key", idem, "Prefer", fmt.Sprintf("wait=%d", wait))
}

// awaitQuery polls GET /queries/{id} on cl until the query finished.
func awaitQuery(t *testing.T, cl *client, key, id string) map[string]any {
	t.Helper()
	var last map[string]any
	ok := pollUntil(90*time.Second, 100*time.Millisecond, func() bool {
		r := cl.do("GET", "/queries/"+id+"?limit=1", key, nil)
		if r.status != 200 {
			t.Fatalf("GET query %s: %d %s", id, r.status, r.body)
		}
		last = r.json(t)
		s, _ := last["status"].(string)
		return s == "succeeded" || s == "partial" || s == "failed"
	})
	if !ok {
		t.Fatalf("query %s did not finish: %v", id, last)
	}
	if last["status"] != "succeeded" {
		t.Fatalf("query %s finished %v", id, last["status"])
	}
	return last
}

// feature is one record of a paged result.
type feature struct {
	LayerID   string         `json:"layer_id"`
	FeatureID string         `json:"feature_id"`
	DistanceM float64        `json:"distance_m"`
	Props     map[string]any `json:"properties"`
}

// pageResults reads a query's whole result, page by page, each page from
// the next client in turn (a cursor minted by one replica used on another).
// It fails on a feature seen twice.
func pageResults(t *testing.T, clients []*client, key, id string) []feature {
	t.Helper()
	var out []feature
	seen := map[string]bool{}
	target := "/queries/" + id + "/results?limit=4&include_geometry=false"
	for i := 0; ; i++ {
		r := clients[i%len(clients)].do("GET", target, key, nil)
		if r.status != 200 {
			t.Fatalf("page %d of %s: %d %s", i, id, r.status, r.body)
		}
		var body struct {
			Features []feature `json:"features"`
			Page     page      `json:"page"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		for _, f := range body.Features {
			k := f.LayerID + "/" + f.FeatureID
			if seen[k] {
				t.Fatalf("query %s: feature %s paged twice", id, k)
			}
			seen[k] = true
			out = append(out, f)
		}
		if !body.Page.HasMore {
			return out
		}
		if body.Page.NextCursor == nil {
			t.Fatalf("has_more without next_cursor")
		}
		target = "/queries/" + id + "/results?limit=4&include_geometry=false&cursor=" + url.QueryEscape(*body.Page.NextCursor)
	}
}

type page struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

func featureIDs(fs []feature) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.FeatureID)
	}
	sort.Strings(ids)
	return ids
}

// sameWindow runs burst inside one rate-limit minute: a burst that
// straddled a minute boundary (the windows are fixed minutes of the shared
// clock) is run again, with a fresh account, in the next minute.
func sameWindow(t *testing.T, burst func() (check func())) {
	t.Helper()
	for attempt := 0; attempt < 2; attempt++ {
		before := time.Now().Truncate(time.Minute)
		check := burst()
		if time.Now().Truncate(time.Minute).Equal(before) {
			check()
			return
		}
		t.Logf("the burst straddled a minute boundary; running it again")
	}
	t.Fatal("two bursts in a row straddled a minute boundary")
}

// hammer runs n requests over the clients from `workers` goroutines, each
// request sent to clients[i%len(clients)], and counts the answers by
// status code and Problem code.
func hammer(t *testing.T, clients []*client, n, workers int, req func(i int, c *client) (result, error)) map[string]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, err := req(i, clients[i%len(clients)])
				k := ""
				switch {
				case err != nil:
					k = "error: " + err.Error()
				case r.status >= 400:
					k = fmt.Sprintf("%d %s", r.status, r.problem().Code)
				default:
					k = fmt.Sprint(r.status)
				}
				mu.Lock()
				counts[k]++
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return counts
}

func TestCluster(t *testing.T) {
	t0 := time.Now()
	c := newCluster(t)
	t.Logf("setup (versitygw, database, 2 layers ingested into S3): %v", time.Since(t0).Round(time.Millisecond))
	a := c.replica(t)
	b := c.replica(t)
	ca, cb := c.client(t, a), c.client(t, b)
	both := []*client{ca, cb}
	t.Logf("replicas A %s and B %s up: %v", a.addr, b.addr, time.Since(t0).Round(time.Millisecond))

	var doneQuery struct{ id, key string }
	var doneFeatures []feature
	step := func(name string, f func(t *testing.T)) {
		start := time.Now()
		ok := t.Run(name, f)
		t.Logf("%-28s %v", name, time.Since(start).Round(time.Millisecond))
		if !ok {
			t.FailNow()
		}
	}

	step("SharedState", func(t *testing.T) {
		tn := c.tenant(t, 0)
		site := createSite(t, ca, tn.key, 1, nil)
		r := cb.do("GET", "/sites/"+site, tn.key, nil)
		if r.status != 200 || r.json(t)["site"].(map[string]any)["site_id"] != site {
			t.Fatalf("B reading A's site: %d %s", r.status, r.body)
		}
		// A list cursor minted on A is accepted on B.
		createSite(t, cb, tn.key, 2, nil)
		r = ca.do("GET", "/sites?limit=1", tn.key, nil)
		var list struct {
			Page page `json:"page"`
		}
		_ = json.Unmarshal(r.body, &list)
		if r.status != 200 || list.Page.NextCursor == nil {
			t.Fatalf("sites page 1 on A: %d %s", r.status, r.body)
		}
		if r = cb.do("GET", "/sites?limit=1&cursor="+url.QueryEscape(*list.Page.NextCursor), tn.key, nil); r.status != 200 {
			t.Fatalf("A's cursor on B: %d %s", r.status, r.body)
		}
		// A query posted to A (executed by whichever worker claims it) is
		// read and paged on B, alternating replicas page by page.
		q := postQuery(t, ca, tn.key, site, 0, "q-"+uuid.NewString())
		if q.status != 202 && q.status != 200 {
			t.Fatalf("POST /queries on A: %d %s", q.status, q.body)
		}
		id := q.json(t)["query_id"].(string)
		awaitQuery(t, cb, tn.key, id)
		got := pageResults(t, []*client{cb, ca}, tn.key, id)
		if len(got) != 25 {
			t.Fatalf("paged %d features across A and B, want the layer's 25", len(got))
		}
		doneQuery.id, doneQuery.key, doneFeatures = id, tn.key, got
	})

	step("ReadLimitAcrossReplicas", func(t *testing.T) {
		// 160 reads of one account from 8 clients on A and B at once:
		// exactly 120 answered, 40 refused (the 121st read of the minute is
		// refused whichever replica receives it).
		sameWindow(t, func() func() {
			tn := c.tenant(t, 0)
			counts := hammer(t, both, 160, 8, func(i int, cl *client) (result, error) {
				return cl.try("GET", "/context", tn.key, nil)
			})
			return func() {
				if counts["200"] != 120 || counts["429 rate_limited"] != 40 || len(counts) != 2 {
					t.Fatalf("160 reads split over A and B: %v, want 120 x 200 and 40 x 429 rate_limited", counts)
				}
			}
		})
		// Strictly sequential, alternating: reads 1..120 pass, the 121st
		// (on B) is refused.
		sameWindow(t, func() func() {
			tn := c.tenant(t, 0)
			var statuses []int
			for i := 0; i < 121; i++ {
				statuses = append(statuses, both[i%2].do("GET", "/context", tn.key, nil).status)
			}
			return func() {
				for i, s := range statuses[:120] {
					if s != 200 {
						t.Fatalf("read %d: %d", i+1, s)
					}
				}
				if statuses[120] != 429 {
					t.Fatalf("the 121st read (on B): %d, want 429", statuses[120])
				}
			}
		})
	})

	step("AdmissionLimitAcrossReplicas", func(t *testing.T) {
		sameWindow(t, func() func() {
			tn := c.tenant(t, 0)
			site := createSite(t, ca, tn.key, 3, nil)
			counts := hammer(t, both, 40, 8, func(i int, cl *client) (result, error) {
				return cl.try("POST", "/queries", tn.key, map[string]any{
					"site": map[string]any{"kind": "saved_site", "site_id": site}, "layer_ids": []string{freeLayer}, "radius_m": float64(100 + i),
				}, "Idempotency-Key", fmt.Sprintf("adm-%d", i), "Prefer", "wait=0")
			})
			return func() {
				if counts["200"]+counts["202"] != 30 || counts["429 rate_limited"] != 10 {
					t.Fatalf("40 admissions split over A and B: %v, want 30 admitted and 10 x 429 rate_limited", counts)
				}
			}
		})
	})

	step("MoneyAcrossReplicas", func(t *testing.T) {
		// 100 identical purchases (one Idempotency-Key) split over A and B
		// charge once and all answer the same receipt.
		tn := c.tenant(t, 1000)
		site := createSite(t, ca, tn.key, 5, nil)
		var mu sync.Mutex
		bodies := map[string]int{}
		counts := hammer(t, both, 100, 10, func(i int, cl *client) (result, error) {
			r, err := cl.try("POST", "/access/acquisitions", tn.key, map[string]any{"site_id": site, "section_keys": []string{pricedSection}},
				"Idempotency-Key", "same-purchase")
			if err == nil && r.status == 200 {
				mu.Lock()
				bodies[string(r.body)]++
				mu.Unlock()
			}
			return r, err
		})
		if counts["200"] != 100 || len(bodies) != 1 {
			t.Fatalf("100 identical purchases: %v, %d distinct bodies; want 100 x 200 with one body", counts, len(bodies))
		}
		if bal := balance(t, ca, tn.key); bal != 1000-sectionPrice {
			t.Fatalf("balance %d after one charge of %d from 1000", bal, sectionPrice)
		}
		// 10N distinct purchases on an account holding N x price: exactly
		// N succeed, the rest are refused for credits.
		const n = 4
		tn = c.tenant(t, n*sectionPrice)
		var sites []string
		for i := 0; i < 10*n; i++ {
			sites = append(sites, createSite(t, both[i%2], tn.key, 10+i, nil))
		}
		counts = hammer(t, both, 10*n, 10, func(i int, cl *client) (result, error) {
			return cl.try("POST", "/access/acquisitions", tn.key, map[string]any{"site_id": sites[i], "section_keys": []string{pricedSection}},
				"Idempotency-Key", fmt.Sprintf("buy-%d", i))
		})
		if counts["200"] != n || counts["402 insufficient_credits"] != 9*n {
			t.Fatalf("%d distinct purchases on %d credits: %v, want %d x 200 and %d x 402", 10*n, n*sectionPrice, counts, n, 9*n)
		}
		if bal := balance(t, cb, tn.key); bal != 0 {
			t.Fatalf("balance %d, want 0", bal)
		}
		if out := cli(t, c.e, "admin", "ledger", "check"); out["ok"] != true {
			t.Fatalf("admin ledger check: %v", out)
		}
	})

	step("DeliveryAcrossReplicas", func(t *testing.T) {
		// An artifact written to the shared bucket (as a report build would,
		// through artifacts.Put), a link minted on A, downloaded from B with
		// no key, whole and by range.
		tn := c.tenant(t, 0)
		ctx := context.Background()
		st, err := store.OpenStore(ctx, envValue(c.e.extra, "SITEENV_STORE"), store.S3Config{
			Endpoint: envValue(c.e.extra, "SITEENV_S3_ENDPOINT"), AccessKey: envValue(c.e.extra, "SITEENV_S3_ACCESS_KEY"),
			SecretKey: envValue(c.e.extra, "SITEENV_S3_SECRET_KEY"), Region: envValue(c.e.extra, "SITEENV_S3_REGION")})
		if err != nil {
			t.Fatal(err)
		}
		content := bytes.Repeat([]byte("%PDF-1.7 cluster delivery\n"), 4096)
		art, err := artifacts.Put(ctx, st, c.l, artifacts.Params{Account: tn.account, Filename: "cluster.pdf", MediaType: ledger.MediaPDF},
			bytes.NewReader(content), int64(len(content)))
		if err != nil {
			t.Fatal(err)
		}
		r := ca.do("POST", "/artifacts/"+art.ID.String()+"/deliveries", tn.key, map[string]any{})
		if r.status != 201 {
			t.Fatalf("minting on A: %d %s", r.status, r.body)
		}
		link := strings.TrimPrefix(r.json(t)["url"].(string), "/api/v1")
		whole := cb.do("GET", link, "", nil)
		if whole.status != 200 || !bytes.Equal(whole.body, content) {
			t.Fatalf("A's link on B: %d, %d bytes (want %d)", whole.status, len(whole.body), len(content))
		}
		part := cb.do("GET", link, "", nil, "Range", "bytes=100-199")
		if part.status != 206 || !bytes.Equal(part.body, content[100:200]) || part.header.Get("Repr-Digest") != whole.header.Get("Repr-Digest") {
			t.Fatalf("A's link on B, ranged: %d %q", part.status, part.header.Get("Content-Range"))
		}
	})

	step("ShardLoadsPerReplica", func(t *testing.T) {
		// Each replica loads shards from S3 lazily and keeps them within its
		// own budget: with a budget smaller than one shard, a shard is evicted
		// once its query ends, and the next query loads it again. Seen in each
		// replica's metrics.
		// A and B are paused meanwhile so that only these replicas' workers
		// claim the step's queries.
		for _, s := range []*server{a, b} {
			if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			defer s.cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck
		}
		e := c.e
		e.extra = append(append([]string(nil), c.e.extra...), "SITEENV_ENGINE_MEMORY=1KiB")
		var reps []*server
		var scrapes []string
		for i := range 2 {
			e.dataDir = filepath.Join(scratchDir(t), fmt.Sprintf("metrics-%d", i))
			s := startServer(t, e, "--metrics-addr", "127.0.0.1:0")
			m := metricsRE.FindStringSubmatch(s.stderr.String())
			if m == nil {
				t.Fatalf("no metrics listener in the log:\n%s", s.stderr.String())
			}
			reps, scrapes = append(reps, s), append(scrapes, "http://"+m[1]+"/metrics")
		}
		metric := func(url, name string) float64 {
			t.Helper()
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			for _, line := range strings.Split(string(body), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == name {
					v, err := strconv.ParseFloat(f[1], 64)
					if err != nil {
						t.Fatal(err)
					}
					return v
				}
			}
			t.Fatalf("%s has no %s", url, name)
			return 0
		}
		tn := c.tenant(t, 0)
		site := createSite(t, c.client(t, reps[0]), tn.key, 1, nil)
		// Each replica warms its engine at start (within its budget, so a
		// budget under one shard ends its warm start with nothing resident):
		// the queries' loads and evictions are counted from after it.
		base := map[int][2]float64{}
		for i, s := range reps {
			if !pollUntil(30*time.Second, 20*time.Millisecond, func() bool { return strings.Contains(s.stderr.String(), "engine warmed") }) {
				t.Fatalf("replica %d did not end its warm start", i)
			}
			base[i] = [2]float64{metric(scrapes[i], "siteenv_engine_shard_loads_total"), metric(scrapes[i], "siteenv_engine_shard_evictions_total")}
			if b := metric(scrapes[i], "siteenv_engine_shard_cache_bytes"); b > 1024 {
				t.Fatalf("replica %d holds %v shard bytes after its warm start, over its 1 KiB budget", i, b)
			}
		}
		for i, s := range reps {
			cl := c.client(t, s)
			for round := range 2 {
				// Either replica's worker may claim it: loads and evictions are
				// summed over both below.
				q := postQuery(t, cl, tn.key, site, 3, fmt.Sprintf("m-%d-%d", i, round))
				awaitQuery(t, cl, tn.key, q.json(t)["query_id"].(string))
			}
		}
		var loads, evictions float64
		for i := range reps {
			l, ev := metric(scrapes[i], "siteenv_engine_shard_loads_total")-base[i][0], metric(scrapes[i], "siteenv_engine_shard_evictions_total")-base[i][1]
			if b := metric(scrapes[i], "siteenv_engine_shard_cache_bytes"); b > 1024 {
				t.Fatalf("replica %d holds %v shard bytes between queries, over its 1 KiB budget", i, b)
			}
			t.Logf("replica %d: %v shard loads, %v evictions", i, l, ev)
			loads, evictions = loads+l, evictions+ev
		}
		if loads < 4 || evictions < 4 {
			t.Fatalf("4 queries over a budget smaller than a shard: %v loads and %v evictions in all, want at least 4 of each", loads, evictions)
		}
		for _, s := range reps {
			s.terminate()
		}
	})

	// The steps below hold S3 to keep a query running: only the replicas
	// they start may be alive (A and B would claim the work, and finish it
	// from shards they have already loaded).
	a.terminate()
	b.terminate()

	step("RunningAndQueuedLimits", func(t *testing.T) {
		// Three fresh replicas (six workers, none with a shard loaded: a
		// budget under one shard leaves their warm start nothing resident)
		// and S3 held: claimed queries block on their first tile read, so
		// the account's running count shows what the claim enforces.
		rs := []*server{c.replica(t, noShard), c.replica(t, noShard), c.replica(t, noShard)}
		var cls []*client
		for _, s := range rs {
			cls = append(cls, c.client(t, s))
		}
		tn := c.tenant(t, 0)
		site := createSite(t, cls[0], tn.key, 4, nil)
		c.gate.pause()
		defer c.gate.resume()
		counts := hammer(t, cls, 8, 8, func(i int, cl *client) (result, error) {
			return cl.try("POST", "/queries", tn.key, map[string]any{
				"site": map[string]any{"kind": "saved_site", "site_id": site}, "layer_ids": []string{freeLayer}, "radius_m": float64(200 + i),
			}, "Idempotency-Key", fmt.Sprintf("run-%d", i), "Prefer", "wait=0")
		})
		if counts["202"] != 8 {
			t.Fatalf("8 queries with S3 held: %v, want 8 x 202", counts)
		}
		usage := func() (queued, running int64) {
			u, err := c.l.QueryUsage(context.Background(), tn.account)
			if err != nil {
				t.Fatal(err)
			}
			return u.Queued, u.Running
		}
		if !pollUntil(30*time.Second, 50*time.Millisecond, func() bool { _, r := usage(); return r == 4 }) {
			q, r := usage()
			t.Fatalf("running %d, queued %d; want 4 running", r, q)
		}
		// Six workers poll every 500 ms: for several of their rounds the
		// count must stay at 4 (a claim that ignored the limit would take a
		// fifth at once).
		for i := 0; i < 8; i++ {
			if q, r := usage(); r != 4 || q != 4 {
				t.Fatalf("round %d: running %d, queued %d; want 4 and 4", i, r, q)
			}
			time.Sleep(250 * time.Millisecond)
		}
		// GET /context on each replica reports the same counts.
		for i, cl := range cls {
			r := cl.do("GET", "/context", tn.key, nil)
			u := r.json(t)["usage"].(map[string]any)
			if u["running_queries"] != float64(4) || u["queued_queries"] != float64(4) {
				t.Fatalf("replica %d GET /context usage: %v", i, u)
			}
		}
		// Fill the queue to 99 through the ledger (the API admits only 30
		// a minute), then race 6 posts over the three replicas for the
		// last place: exactly one is admitted.
		like, err := c.l.ListQueries(context.Background(), tn.account, ledger.QueryFilter{Limit: 1, Snapshot: time.Now().Add(time.Hour)})
		if err != nil || len(like) == 0 {
			t.Fatalf("list queries: %v", err)
		}
		tmpl := like[0]
		for q, _ := usage(); q < 99; q++ {
			nq := ledger.Query{AccountID: tmpl.AccountID, IntegrationID: tmpl.IntegrationID, SiteID: tmpl.SiteID, SiteGeometry: tmpl.SiteGeometry,
				RadiusM: tmpl.RadiusM, LayerIDs: tmpl.LayerIDs, IncludeGeometry: tmpl.IncludeGeometry, Frozen: tmpl.Frozen}
			if _, err := c.l.CreateQuery(context.Background(), nq, ledger.QueryLimits{MaxQueued: 100, MaxRetainedBytes: 1 << 40}); err != nil {
				t.Fatal(err)
			}
		}
		counts = hammer(t, cls, 6, 6, func(i int, cl *client) (result, error) {
			return cl.try("POST", "/queries", tn.key, map[string]any{
				"site": map[string]any{"kind": "saved_site", "site_id": site}, "layer_ids": []string{freeLayer}, "radius_m": float64(300 + i),
			}, "Idempotency-Key", fmt.Sprintf("cap-%d", i), "Prefer", "wait=0")
		})
		if counts["202"] != 1 || counts["429 capacity_exceeded"] != 5 {
			t.Fatalf("6 posts for the last queue place: %v, want 1 x 202 and 5 x 429 capacity_exceeded", counts)
		}
		if q, r := usage(); q != 100 || r != 4 {
			t.Fatalf("queued %d, running %d; want 100 and 4", q, r)
		}
		// Let S3 answer: every admitted query completes.
		c.gate.resume()
		if !pollUntil(90*time.Second, 200*time.Millisecond, func() bool { q, r := usage(); return q == 0 && r == 0 }) {
			q, r := usage()
			t.Fatalf("after S3 resumed: queued %d, running %d", q, r)
		}
		for _, s := range rs {
			s.terminate()
		}
	})

	step("KillNineMidQueryAndReport", func(t *testing.T) {
		// A fresh replica A2, alone, claims a query and a report build, both
		// held on S3; A2 is killed with SIGKILL and B2 (default settings)
		// starts. A2's claims are no longer renewed, so B2 takes both over
		// within about 1.5 job leases (SITEENV_JOB_LEASE, default 5s) - not
		// after the whole attempt (120 s for a query, 10 min for a report) -
		// and finishes them: within 15 s of the kill, the report charged once.
		const price = 30
		cli(t, c.e, "admin", "config", "set", "report-price", fmt.Sprint(price))
		a2 := c.replica(t, noShard) // its query waits on S3 for a tile
		ca2 := c.client(t, a2)
		tn := c.tenant(t, 1000)
		site := createSite(t, ca2, tn.key, 1, nil)
		c.gate.pause()
		defer c.gate.resume()
		q := postQuery(t, ca2, tn.key, site, 0, "kill-"+uuid.NewString())
		if q.status != 202 {
			t.Fatalf("POST /queries with S3 held: %d %s", q.status, q.body)
		}
		id := q.json(t)["query_id"].(string)
		rr := ca2.do("POST", "/reports", tn.key, map[string]any{"site_id": site}, "Idempotency-Key", "kill-report-"+uuid.NewString())
		if rr.status != 202 || rr.json(t)["credits_charged"] != float64(price) {
			t.Fatalf("POST /reports with S3 held: %d %s", rr.status, rr.body)
		}
		reportID := rr.json(t)["report_id"].(string)
		reportStatus := func() string {
			r, err := c.l.Report(context.Background(), tn.account, uuid.MustParse(reportID))
			if err != nil {
				t.Fatal(err)
			}
			return r.Status
		}
		c.waitStatus(t, id, "running", 30*time.Second) // claimed by A2, the only replica
		if !pollUntil(30*time.Second, 50*time.Millisecond, func() bool { return reportStatus() == ledger.ReportRunning }) {
			t.Fatalf("the report build was not claimed: %s", reportStatus())
		}
		// Tiles load lazily, per query: the held S3 read stalls only the
		// query; A2 serves what needs no tile meanwhile.
		if r := ca2.do("GET", "/sites/"+site, tn.key, nil); r.status != 200 {
			t.Fatalf("GET /sites on A2 while its query waits on S3: %d %s", r.status, r.body)
		}
		// (A replica starts only with S3 answering, so B2 starts after the
		// kill: its start-up counts in the 15 s.)
		a2.kill9()
		killed := time.Now()
		c.gate.resume()
		b2 := c.replica(t)
		cb2 := c.client(t, b2)
		var qs, rs string
		if !pollUntil(15*time.Second, 100*time.Millisecond, func() bool {
			qs, rs = c.queryStatus(t, id), reportStatus()
			return qs == ledger.QuerySucceeded && rs == ledger.ReportCompleted
		}) {
			t.Fatalf("15 s after A2's kill -9: query %s, report %s; want both finished on B2", qs, rs)
		}
		t.Logf("query and report finished on B2 %v after A2 was killed", time.Since(killed).Round(time.Millisecond))
		awaitQuery(t, cb2, tn.key, id)
		got := pageResults(t, []*client{cb2}, tn.key, id)
		if strings.Join(featureIDs(got), ",") != strings.Join(featureIDs(doneFeatures), ",") {
			t.Fatalf("after kill -9 and takeover: %v, want %v", featureIDs(got), featureIDs(doneFeatures))
		}
		list, err := c.l.ListQueries(context.Background(), tn.account, ledger.QueryFilter{Limit: 10, Snapshot: time.Now().Add(time.Hour)})
		if err != nil || len(list) != 1 {
			t.Fatalf("the account has %d queries (%v), want exactly the one", len(list), err)
		}
		// Two attempts: A2's, which died with A2, and B2's, which completed.
		if list[0].Attempts != 2 {
			t.Fatalf("the query took %d attempts, want 2 (A2's, then B2's)", list[0].Attempts)
		}
		rep := cb2.do("GET", "/reports/"+reportID, tn.key, nil).json(t)["report"].(map[string]any)
		if revs := rep["revisions"].(map[string]any); revs["count"] != float64(1) {
			t.Fatalf("report after takeover: %v", rep)
		}
		// Charged once, never refunded.
		hist := cb2.do("GET", "/purchases?limit=100&kind=report", tn.key, nil).json(t)
		items, _ := hist["purchases"].([]any)
		if len(items) != 1 {
			t.Fatalf("%d report purchases, want 1", len(items))
		}
		if p := items[0].(map[string]any); p["credits_charged"] != float64(price) || p["credits_refunded"] != float64(0) {
			t.Fatalf("purchase charged %v, refunded %v", p["credits_charged"], p["credits_refunded"])
		}
		if got := balance(t, cb2, tn.key); got != 1000-price {
			t.Fatalf("balance %d, want %d", got, 1000-price)
		}
		if out := cli(t, c.e, "admin", "ledger", "check"); out["ok"] != true {
			t.Fatalf("siteenv admin ledger check: %v", out)
		}
		b2.terminate()
	})

	step("SigtermHandsWorkBack", func(t *testing.T) {
		// Its query waits on S3 for a tile. Its drain is 6 s, not the
		// default 25: room for the POST's 3 s wait, then the held attempt
		// is requeued when the drain ends.
		a3 := c.replicaArgs(t, []string{noShard}, "--shutdown-timeout", "6s")
		ca3 := c.client(t, a3)
		tn := c.tenant(t, 0)
		site := createSite(t, ca3, tn.key, 1, nil)
		c.gate.pause()
		defer c.gate.resume()
		// A request in flight at SIGTERM: POST /queries waiting up to 3 s
		// for its result while the worker is held on S3.
		idem := "term-" + uuid.NewString()
		type answer struct {
			r   result
			err error
		}
		inflight := make(chan answer, 1)
		go func() {
			r, err := ca3.try("POST", "/queries", tn.key, map[string]any{
				"site": map[string]any{"kind": "saved_site", "site_id": site}, "layer_ids": []string{freeLayer}, "radius_m": 2000,
			}, "Idempotency-Key", idem, "Prefer", "wait=3")
			inflight <- answer{r, err}
		}()
		var id string
		if !pollUntil(30*time.Second, 20*time.Millisecond, func() bool {
			list, err := c.l.ListQueries(context.Background(), tn.account, ledger.QueryFilter{Limit: 1, Snapshot: time.Now().Add(time.Hour)})
			if err != nil || len(list) == 0 || list[0].Status != ledger.QueryRunning {
				return false
			}
			id = list[0].ID.String()
			return true
		}) {
			t.Fatal("the query was not claimed")
		}
		var ans answer
		answered := false
		select {
		case ans = <-inflight:
			// Only on a machine too loaded to poll within the request's 3 s.
			answered = true
			t.Logf("the POST answered before SIGTERM was sent: not a request in flight")
		default:
		}
		if err := a3.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if !answered {
			ans = <-inflight
		}
		if ans.err != nil || ans.r.status != 202 || ans.r.json(t)["query_id"] != id {
			t.Fatalf("the request in flight at SIGTERM: %v %d %s", ans.err, ans.r.status, ans.r.body)
		}
		a3.terminate() // waits for the exit: the runner's drain ends with the held attempt requeued
		if s := c.queryStatus(t, id); s != ledger.QueryQueued {
			t.Fatalf("after A's SIGTERM the query is %s, want queued (handed back)", s)
		}
		c.gate.resume()
		b3 := c.replica(t)
		cb3 := c.client(t, b3)
		awaitQuery(t, cb3, tn.key, id)
		if got := pageResults(t, []*client{cb3}, tn.key, id); len(got) != 25 {
			t.Fatalf("requeued query paged %d features, want 25", len(got))
		}
		b3.terminate()
	})

	step("NewReleaseWhileServing", func(t *testing.T) {
		a, b := c.replica(t), c.replica(t)
		ca, cb := c.client(t, a), c.client(t, b)
		both := []*client{ca, cb}
		// Publish a second release of the free layer while A and B serve.
		oldRelease := c.cat.releases[freeLayer]
		dir := scratchDir(t)
		layer := filepath.Join(dir, "layer.json")
		if err := writeFile(layer, fmt.Sprintf(layerJSONShape, freeLayer, freeSection, freeLayer)); err != nil {
			t.Fatal(err)
		}
		var fs []string
		for i := 0; i < 6; i++ {
			fs = append(fs, fmt.Sprintf(`{"type":"Feature","id":"r2-%d","geometry":{"type":"Point","coordinates":[%.4f,%.4f]},"properties":{"depth_m":%d,"status":"new"}}`,
				i, centreLon+0.001*float64(i), centreLat+0.001, i))
		}
		src := filepath.Join(dir, "r2.geojson")
		if err := writeFile(src, `{"type":"FeatureCollection","features":[`+strings.Join(fs, ",")+`]}`); err != nil {
			t.Fatal(err)
		}
		out := cli(t, c.e, "ingest", "--json", "--publish", "--layer", layer, "--rejects", filepath.Join(dir, "rejects.csv"), src)
		newRelease, _ := out["release_id"].(string)
		if newRelease == "" || newRelease == oldRelease {
			t.Fatalf("ingest: %v", out)
		}
		tn := c.tenant(t, 0)
		site := createSite(t, ca, tn.key, 1, nil)
		for i, cl := range both {
			r := postQuery(t, cl, tn.key, site, 3, fmt.Sprintf("new-%d", i))
			id := r.json(t)["query_id"].(string)
			q := awaitQuery(t, cl, tn.key, id)
			layers := q["layers"].([]any)
			prov := layers[0].(map[string]any)["provenance"].([]any)
			if rel := prov[0].(map[string]any)["release_id"]; rel != newRelease {
				t.Fatalf("new query on replica %d used release %v, want %s", i, rel, newRelease)
			}
			if got := featureIDs(pageResults(t, both, tn.key, id)); len(got) != 6 || got[0] != "r2-0" {
				t.Fatalf("new query on replica %d: %v, want the new release's 6 features", i, got)
			}
		}
		// The earlier query keeps its frozen release and its results.
		for i, cl := range both {
			again := pageResults(t, []*client{cl}, doneQuery.key, doneQuery.id)
			if fmt.Sprint(again) != fmt.Sprint(doneFeatures) {
				t.Fatalf("the earlier query's results changed on replica %d", i)
			}
			r := cl.do("GET", "/queries/"+doneQuery.id+"?limit=1", doneQuery.key, nil)
			prov := r.json(t)["layers"].([]any)[0].(map[string]any)["provenance"].([]any)
			if rel := prov[0].(map[string]any)["release_id"]; rel != oldRelease {
				t.Fatalf("the earlier query now names release %v, want %s", rel, oldRelease)
			}
		}
		a.terminate()
		b.terminate()
	})
	t.Logf("TestCluster total: %v", time.Since(t0).Round(time.Millisecond))
}

// balance reads the account's credit balance from GET /context.
func balance(t *testing.T, cl *client, key string) int64 {
	t.Helper()
	r := cl.do("GET", "/context", key, nil)
	v, ok := r.json(t)["credit_balance"].(float64)
	if r.status != 200 || !ok {
		t.Fatalf("GET /context: %d %s", r.status, r.body)
	}
	return int64(v)
}

func writeFile(path, s string) error {
	return os.WriteFile(path, []byte(s), 0o644)
}

// envValue is the value of KEY in a list of KEY=value settings.
func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
