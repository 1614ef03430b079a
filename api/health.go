package api

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"siteenv/ledger"
	"siteenv/store"
)

// Probe paths, outside /api/v1: no key, no rate limit, no audit record.
const (
	HealthzPath = "/healthz"
	ReadyzPath  = "/readyz"
)

// probeTimeout bounds each readiness check, so a hung database or store
// answers 503 promptly instead of holding the prober.
const probeTimeout = 2 * time.Second

// readiness remembers the last readiness answer, so a change is logged once
// rather than on every poll.
type readiness struct{ notReady atomic.Bool }

// serveProbe answers /healthz (the process serves HTTP) and /readyz (the
// database answers and is migrated, and the store is readable).
func (s *Server) serveProbe(r *request, path string) error {
	if m := string(r.http.Method()); m != "GET" && m != "HEAD" {
		return &Problem{Code: CodeMethodNotAllowed, Detail: "This path accepts GET, HEAD.", Allow: "GET, HEAD"}
	}
	r.http.Response.Header.Set("Cache-Control", "no-store")
	if path == HealthzPath {
		r.http.SetStatusCode(200)
		r.http.SetContentType("text/plain; charset=utf-8")
		r.http.SetBodyString("ok\n")
		return nil
	}
	dbCheck, storeCheck := "ok", "ok"
	var errs []error
	ctx, cancel := context.WithTimeout(r.ctx, probeTimeout)
	err := s.led.Ready(ctx)
	cancel()
	switch {
	case err == nil:
	case errors.Is(err, ledger.ErrNotMigrated):
		dbCheck = "not_migrated"
	default:
		dbCheck = "unreachable"
	}
	errs = append(errs, err)
	if s.store == nil {
		storeCheck = "not_configured"
	} else {
		ctx, cancel := context.WithTimeout(r.ctx, probeTimeout)
		err := store.Check(ctx, s.store)
		cancel()
		if err != nil {
			storeCheck = "unreadable"
		}
		errs = append(errs, err)
	}
	ready := dbCheck == "ok" && storeCheck != "unreadable"
	if was := !s.ready.notReady.Swap(!ready); was != ready {
		if ready {
			s.log.Info("ready again")
		} else {
			s.log.Warn("not ready", "database", dbCheck, "store", storeCheck, "err", errors.Join(errs...))
		}
	}
	body := readyBody{Status: "ready", Checks: readyChecks{Database: dbCheck, Store: storeCheck}}
	status := 200
	if !ready {
		body.Status, status = "not_ready", 503
		r.http.Response.Header.Set("Retry-After", "1")
	}
	return r.writeJSON(status, body)
}

type readyBody struct {
	Status string      `json:"status"`
	Checks readyChecks `json:"checks"`
}

type readyChecks struct {
	// Database: ok, unreachable or not_migrated.
	Database string `json:"database"`
	// Store: ok, unreadable or not_configured.
	Store string `json:"store"`
}
