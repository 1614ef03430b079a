package faultsuite

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestKill9DuringConcurrentPurchases: 20 purchases with distinct
// Idempotency-Keys run at once; the server is killed with SIGKILL while they
// are in flight and restarted on the same database; every request is retried
// with its key and body, as the contract tells a client to. Every retry must
// complete (2xx) within a bounded time, and no purchase may be charged twice:
// the debits equal the price times the distinct purchases, the balance and
// the integration's spend agree, and `siteenv admin ledger check` passes.
func TestKill9DuringConcurrentPurchases(t *testing.T) {
	t.Parallel()
	const n = 20
	dsn := newDatabase(t)
	e := env{dataDir: scratchDir(t), dsn: dsn}
	l := openLedger(t, dsn)
	loadCatalogue(t, e, l)
	tn := newTenant(t, l, "Crash buyer", tenantCredits)
	srv := startServer(t, e)
	var addrMu sync.Mutex
	addr := srv.addr
	c := newClient(t, func() string { addrMu.Lock(); defer addrMu.Unlock(); return addr })

	sites := make([]string, n)
	for i := range n {
		sites[i] = createSite(t, c, tn.key, 100+i, nil)
	}
	body := func(i int) map[string]any {
		return map[string]any{"site_id": sites[i], "section_keys": []string{pricedSection}}
	}
	key := func(i int) string { return "crash-buy-" + strconv.Itoa(i) }

	// Round 1: all at once; kill -9 as soon as the first answer arrives, so
	// the others are mid-flight (claimed, debiting or committing).
	first := make([]*result, n)
	var wg sync.WaitGroup
	answered := make(chan struct{}, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := c.try("POST", "/access/acquisitions", tn.key, body(i), "Idempotency-Key", key(i))
			if err == nil {
				first[i] = &res
			}
			answered <- struct{}{}
		}()
	}
	close(start)
	<-answered
	srv.kill9()
	wg.Wait()
	var before int
	for i := range n {
		if first[i] != nil {
			before++
			if first[i].status >= 500 {
				// Answered before the kill; a 5xx is never acceptable here.
				t.Errorf("purchase %d before the kill: %d %s", i, first[i].status, first[i].body)
			}
		}
	}
	t.Logf("%d of %d purchases answered before kill -9; %d were cut off", before, n, n-before)

	srv2 := startServer(t, e)
	addrMu.Lock()
	addr = srv2.addr
	addrMu.Unlock()

	// Round 2: retry every request with its key until it completes; a
	// retryable answer is retried after Retry-After, anything else ends it.
	final := make([]result, n)
	done := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				res, err := c.try("POST", "/access/acquisitions", tn.key, body(i), "Idempotency-Key", key(i))
				if err != nil {
					final[i] = result{body: []byte(err.Error())}
					time.Sleep(200 * time.Millisecond)
					continue
				}
				final[i] = res
				if res.status/100 == 2 {
					done[i] = true
					return
				}
				if !res.problem().Retryable {
					return
				}
				wait, _ := strconv.Atoi(res.header.Get("Retry-After"))
				time.Sleep(time.Duration(min(max(wait, 0), 2))*time.Second + 100*time.Millisecond)
			}
		}()
	}
	wg.Wait()

	purchases := map[string]int{} // purchase id -> request
	for i := range n {
		if !done[i] {
			p := final[i].problem()
			t.Errorf("retry of %s did not complete within 30s: last answer %d %s (retryable %v, Retry-After %q): %s",
				key(i), final[i].status, p.Code, p.Retryable, final[i].header.Get("Retry-After"), final[i].body)
			continue
		}
		m := final[i].json(t)
		if m["credits_charged"] != float64(sectionPrice) || m["site_id"] != sites[i] {
			t.Errorf("%s: %s", key(i), final[i].body)
		}
		id, _ := m["purchase_id"].(string)
		if j, dup := purchases[id]; dup {
			t.Errorf("requests %d and %d got the same purchase %s", j, i, id)
		}
		purchases[id] = i
		if first[i] != nil && first[i].status == 200 {
			// Answered before the kill: the retry replays it byte for byte.
			if !bytes.Equal(first[i].body, final[i].body) || final[i].header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("%s: the retry is not a replay of the first answer:\nfirst %s\nretry %s (Idempotent-Replayed %q)",
					key(i), first[i].body, final[i].body, final[i].header.Get("Idempotent-Replayed"))
			}
		}
	}

	// The books: one debit per distinct purchase, whatever the retries did.
	hist := c.do("GET", "/purchases?limit=100&kind=site_access", tn.key, nil).json(t)
	items, _ := hist["purchases"].([]any)
	perSite := map[string]int{}
	var charged float64
	for _, it := range items {
		p := it.(map[string]any)
		perSite[fmt.Sprint(p["site_id"])]++
		cc, _ := p["credits_charged"].(float64)
		charged += cc
	}
	for s, k := range perSite {
		if k > 1 {
			t.Errorf("site %s was purchased %d times", s, k)
		}
	}
	distinct := len(items)
	if charged != float64(distinct*sectionPrice) {
		t.Errorf("purchase history charges %v credits for %d purchases at %d", charged, distinct, sectionPrice)
	}
	for id := range purchases {
		if r := c.do("GET", "/purchases/"+id, tn.key, nil); r.status != 200 {
			t.Errorf("purchase %s answered to a client is not in the books: %d", id, r.status)
		}
	}
	if distinct != len(purchases) && len(purchases) == n {
		t.Errorf("%d purchases in the history, %d answered", distinct, len(purchases))
	}
	u := c.do("GET", "/usage", tn.key, nil).json(t)["credits"].(map[string]any)
	if u["account_balance"] != float64(tenantCredits-distinct*sectionPrice) || u["integration_used"] != float64(distinct*sectionPrice) {
		t.Errorf("usage after %d purchases at %d: %v", distinct, sectionPrice, u)
	}
	if out := cli(t, e, "admin", "ledger", "check"); out["ok"] != true {
		t.Errorf("siteenv admin ledger check: %v", out)
	}
	t.Logf("%d purchases, %d credits debited, %d of %d retries completed", distinct, int(charged), len(purchases), n)
}
