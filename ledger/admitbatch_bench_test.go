package ledger_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// BenchmarkAdmitQueryBatch is POST /queries' admission alone, one round
// trip a query on the test cluster (fsync off: the admission's commit is
// relaxed in production too), with the key authenticated by the admission
// and the site registered once and then found:
//
//	go test -run '^$' -bench AdmitQueryBatch -benchtime 2000x ./ledger/
func BenchmarkAdmitQueryBatch(b *testing.B) {
	ctx := context.Background()
	led := ledgertest.New(b, nil)
	a, err := led.CreateAccount(ctx, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	k, err := led.CreateKey(ctx, ledger.KeyParams{Account: a.ID, Scopes: []string{"queries:run", "sites:write"}})
	if err != nil {
		b.Fatal(err)
	}
	p, err := led.Authenticate(ctx, k.Secret) // for the catalogue's version
	if err != nil {
		b.Fatal(err)
	}
	site := ledger.Site{Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: "fp",
		Bounds: [4]float64{151, -33.8, 151, -33.8}}
	admit := func(i int) {
		_, err := led.AdmitQueryBatch(ctx, ledger.AdmitRequest{IdemKey: "k" + strconv.Itoa(i), Operation: "create_query",
			Fingerprint: []byte("f"), Site: site,
			Auth:  &ledger.AdmitAuth{KeyHash: ledger.HashKey(k.Secret), Scopes: []string{"queries:run"}, Datasets: []string{"l"}, Catalogue: p.Catalogue},
			Query: ledger.Query{RadiusM: 100, LayerIDs: []string{"l"}, Frozen: []ledger.FrozenLayer{{LayerID: "l"}}},
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 1 << 30, MaxRetainedBytes: 1 << 50}, PerMinute: 1 << 30,
				RunNow: false, MaxRunning: 4, Lease: time.Minute}})
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range 50 {
		admit(-1 - i)
	}
	b.ResetTimer()
	for i := range b.N {
		admit(i)
	}
}
