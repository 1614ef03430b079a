package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// BenchmarkAdmitNewSite is the admission of a query about a new site by an
// account that has asked before, the fresh mix's case in bench api (60
// keys taking turns, every query a new point): the site registered with
// the query, the account's lock, rate count and usage row found. to_run is
// admitted to run, answered stored finished with its response (about 3
// KB) and audit record, as POST /queries stores a small answer computed
// first. Beside BenchmarkAdmitQueryBatch's new_account (a new account too)
// and account_seen (a site it has):
//
//	go test -run '^$' -bench AdmitNewSite -benchtime 2000x ./ledger/
func BenchmarkAdmitNewSite(b *testing.B) {
	for _, answered := range []bool{false, true} {
		name := "to_run"
		if answered {
			name = "answered"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			led := ledgertest.New(b, nil)
			const accounts = 60
			keys := make([]string, accounts)
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
				lon, lat := 151+float64(i%1000)*1e-4, -33.8-float64(i/1000)*1e-4
				site := ledger.Site{Geometry: json.RawMessage(fmt.Sprintf(`{"type":"Point","coordinates":[%g,%g]}`, lon, lat)),
					Fingerprint: "fp" + strconv.Itoa(i), Bounds: [4]float64{lon, lat, lon, lat}}
				ar := ledger.AdmitRequest{IdemKey: "k" + strconv.Itoa(i), Operation: "create_query",
					Fingerprint: []byte("f"), Site: site,
					Auth:  &ledger.AdmitAuth{KeyHash: ledger.HashKey(keys[(i%accounts+accounts)%accounts]), Scopes: []string{"queries:run"}, Datasets: layers, Catalogue: p.Catalogue},
					Query: ledger.Query{RadiusM: 100, LayerIDs: layers, Frozen: frozen},
					Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 1 << 30, MaxRetainedBytes: 1 << 50}, PerMinute: 1 << 30,
						MaxRunning: 4, Lease: time.Minute}}
				if answered {
					ar.Answer = benchAnswer(b, led, &ar, -1)
				}
				res, err := led.Admit(ctx, ar)
				if err != nil || (answered && !res.Answered) {
					b.Fatal(res, err)
				}
			}
			for i := range 2 * accounts { // every account has asked before
				admit(-1 - i)
			}
			b.ResetTimer()
			for i := range b.N {
				admit(i)
			}
		})
	}
}
