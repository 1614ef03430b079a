package api

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"siteenv/engine"
	"siteenv/store"
)

// InstallEcho makes create_site a test operation that runs under the generic
// idempotency machinery, decodes a body {"name": string, "n": integer} and
// counts executions; the logical request is the body without "page_size".
// It exercises the shared machinery before the real endpoint lands.
func InstallEcho(s *Server, count *atomic.Int64, gate <-chan struct{}) {
	s.handlers["create_site"] = func(s *Server, r *request) error {
		var body struct {
			Name     string `json:"name"`
			N        int    `json:"n"`
			PageSize int    `json:"page_size"`
		}
		if err := decodeBody(string(r.http.Request.Header.ContentType()), r.http.Request.Body(), &body); err != nil {
			return err
		}
		logical := struct {
			Name string
			N    int
		}{body.Name, body.N}
		return s.idempotent(r, logical, nil, func() error {
			count.Add(1)
			if gate != nil {
				<-gate
			}
			switch body.Name {
			case "fail":
				return invalid("name fail", FieldError{Field: "name", Message: "refused"})
			case "boom":
				return errors.New("pq: relation \"secret_table\" does not exist")
			case "panic":
				panic("boom")
			}
			return r.writeJSON(200, map[string]any{"api_version": "1", "site": map[string]any{
				"site_id": "0190b2a4-0000-7000-8000-000000000001", "name": fmt.Sprintf("%s-%d", body.Name, count.Load()),
				"crs": "OGC:CRS84", "axis_order": []string{"longitude", "latitude"},
				"geometry":    map[string]any{"type": "Point", "coordinates": []float64{151.2, -33.8}},
				"fingerprint": strings.Repeat("ab", 32), "created_at": "2026-11-22T09:00:00Z", "area_m2": 0,
			}})
		})
	}
	s.router = newRouter(s.routerOps(), s.handlers)
}

// SetQueryBackend attaches a store and runner after New (tests build them
// around the harness's ledger).
func SetQueryBackend(s *Server, st store.Store, runner QueryRunner) {
	s.store, s.runner = st, runner
	s.queries.SetRunner(runner)
	s.encodeLimits()
}

// SetMapEngine attaches the engine map images search through.
func SetMapEngine(s *Server, eng *engine.Engine) { s.engine = eng }

// SetIdempotencyWait sets how long a duplicate waits for its first request.
func SetIdempotencyWait(s *Server, d time.Duration) {
	s.cfg.IdempotencyWait = d
	s.queries.SetIdempotencyWait(d)
}

// SetAnswerFirstWait sets how long POST /queries waits for an answer
// computed before its admission (answerFirstWait): a test that counts
// answers stored with their admission waits long enough for every one,
// whatever the machine's load.
func SetAnswerFirstWait(s *Server, d time.Duration) { s.queries.SetAnswerWait(d) }

// InFlightForTest is how many requests the server counts as being served
// (the answer-first wait's load).
func InFlightForTest(s *Server) int64 { return s.inFlight.Load() }
