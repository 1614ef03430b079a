package ledger_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// BenchmarkAdmitGroup asks whether answered admissions sharing a round
// trip (group commit) would raise POST /queries' throughput with 8
// clients: 8 accounts' answered admissions of new sites (the fresh mix's
// case), sent
//   - separate: by 8 goroutines, one round trip each (as now);
//   - pipelined_8: in groups of 8 on one connection, one round trip a
//     group, each admission its own transaction;
//   - pipelined_4x2: 2 goroutines, groups of 4 (what a batcher collecting
//     the admissions in flight would send with 8 clients).
//
// It reports admissions/s and the CPU an admission cost the cluster's
// processes and this process (the client: pgx and the requests' making);
// ns/op is per admission.
//
//	go test -run '^$' -bench AdmitGroup -benchtime 2000x ./ledger/
func BenchmarkAdmitGroup(b *testing.B) {
	b.Run("separate", func(b *testing.B) { benchAdmitGroup(b, 8, 1, -1, "") })
	b.Run("pipelined_8", func(b *testing.B) { benchAdmitGroup(b, 1, 8, -1, "") })
	b.Run("pipelined_4x2", func(b *testing.B) { benchAdmitGroup(b, 2, 4, -1, "") })
}

// BenchmarkAdmitAnsweredResponse is BenchmarkAdmitGroup's separate case
// with responses of 0, 24, 100 and 400 records of their own (about 0.1, 3,
// 12 and 50 kB): the stored response is a large part of what an answered
// admission costs the cluster (bench api's fresh mix stores about 5 kB on
// average; a first page of 500 records, now answered first too, up to
// about 190 kB). Its client CPU includes making the records.
//
//	go test -run '^$' -bench AdmitAnsweredResponse -benchtime 4000x -count 2 ./ledger/
func BenchmarkAdmitAnsweredResponse(b *testing.B) {
	for _, n := range []int{0, 24, 100, 400} {
		b.Run("records_"+strconv.Itoa(n), func(b *testing.B) { benchAdmitGroup(b, 8, 1, n, "") })
	}
}

// BenchmarkAdmitAnsweredWithout is BenchmarkAdmitGroup's separate case
// with one part of the answered admission taken out (its function as
// migration 0028 wrote it, cut; or the schema's constraints dropped; or
// the usage trigger off), to show what each part costs the cluster. The
// cuts fail when the migration no longer holds what they cut.
//
//	go test -run '^$' -bench AdmitAnsweredWithout -benchtime 8000x -count 2 ./ledger/
func BenchmarkAdmitAnsweredWithout(b *testing.B) {
	raw, err := os.ReadFile("migrations/0028_admit_answered_geometry.sql")
	if err != nil {
		b.Fatal(err)
	}
	fn := string(raw)
	cut := func(from, to, with string) string { return cutSQL(b, "0028", fn, from, to, with) }
	dropConstraints := func(kind string) string {
		return `DO $$ DECLARE r record; BEGIN
			FOR r IN SELECT conrelid::regclass::text AS t, conname FROM pg_constraint
				WHERE contype = '` + kind + `' AND connamespace = 'public'::regnamespace LOOP
				EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname);
			END LOOP; END $$`
	}
	for _, c := range []struct{ name, prep string }{
		{"whole", ""},
		{"usage_trigger", `ALTER TABLE queries DISABLE TRIGGER queries_usage_insert`},
		{"foreign_keys", dropConstraints("f")},
		{"check_constraints", dropConstraints("c")},
		{"audit_record", cut("    INSERT INTO activity (", "END $$;", "")},
		{"account_lock", cut("    PERFORM 1 FROM accounts a WHERE", "    site_created := false;", "")},
		{"usage_read", cut("    SELECT coalesce(max(q.queued), 0)", "    IF (rate & 4294967295)", "    SELECT 0::bigint AS queued, 0::bigint AS retained INTO u;\n")},
		{"plan_cache_mode", cut(", set_config('plan_cache_mode', 'force_generic_plan', true);", "\n", ";")},
	} {
		b.Run(c.name, func(b *testing.B) { benchAdmitGroup(b, 8, 1, -1, c.prep) })
	}
}

// benchAdmitGroup admits b.N answered admissions by workers goroutines in
// groups of group (1: one round trip each), each response with records
// records (-1: benchAnswer's usual one), on a ledger where prep (when not
// empty) ran first.
func benchAdmitGroup(b *testing.B, workers, group, records int, prep string) {
	ctx := context.Background()
	led := ledgertest.New(b, nil)
	if prep != "" {
		if err := ledger.ExecForTest(ctx, led, prep); err != nil {
			b.Fatal(err)
		}
	}
	const accounts = 8
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
	p, err := led.Authenticate(ctx, keys[0])
	if err != nil {
		b.Fatal(err)
	}
	layers, frozen := benchFrozen(3)
	var seq atomic.Int64
	request := func() ledger.AdmitRequest {
		i := seq.Add(1)
		fp := "fp" + strconv.FormatInt(i, 10)
		site := ledger.Site{Geometry: json.RawMessage(`{"type":"Point","coordinates":[151,-33.8]}`), Fingerprint: fp,
			Bounds: [4]float64{151, -33.8, 151, -33.8}}
		ar := ledger.AdmitRequest{IdemKey: "k" + strconv.FormatInt(i, 10), Operation: "create_query",
			Fingerprint: []byte("f"), Site: site,
			Auth:  &ledger.AdmitAuth{KeyHash: ledger.HashKey(keys[i%accounts]), Scopes: []string{"queries:run"}, Datasets: layers, Catalogue: p.Catalogue},
			Query: ledger.Query{RadiusM: 100, LayerIDs: layers, Frozen: frozen},
			Limits: ledger.AdmitLimits{QueryLimits: ledger.QueryLimits{MaxQueued: 1 << 30, MaxRetainedBytes: 1 << 50}, PerMinute: 1 << 30,
				MaxRunning: 4, Lease: time.Minute}}
		ar.Answer = benchAnswer(b, led, &ar, records)
		return ar
	}
	send := func(n int) {
		if group == 1 {
			for range n {
				if res, err := led.Admit(ctx, request()); err != nil || !res.Answered {
					b.Error(res, err)
					return
				}
			}
			return
		}
		for done := 0; done < n; done += group {
			ars := make([]ledger.AdmitRequest, min(group, n-done))
			for i := range ars {
				ars[i] = request()
			}
			errs, err := ledger.AdmitAnsweredPipelinedForTest(ctx, led, ars)
			if err != nil {
				b.Error(err)
				return
			}
			for _, err := range errs {
				if err != nil {
					b.Error(err)
					return
				}
			}
		}
	}
	send(64) // warm every connection's plans
	server0, err := ledger.ServerCPUForTest(ctx, led)
	if err != nil {
		b.Fatal(err)
	}
	client0 := selfCPU()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(b.N/workers + boolInt(w < b.N%workers))
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
	b.StopTimer()
	server1, err := ledger.ServerCPUForTest(ctx, led)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(server1-server0)/1e6/float64(b.N), "server-CPU-ms/admission")
	b.ReportMetric(float64(selfCPU()-client0)/1e6/float64(b.N), "client-CPU-ms/admission")
}

// selfCPU is the CPU this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}
