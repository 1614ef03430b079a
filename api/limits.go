package api

import (
	"math"
	"strconv"
	"time"

	"siteenv/artifacts"
	"siteenv/ledger"
	"siteenv/report"
)

// The contract's enforced ceilings. Enforcement, GET /context (limits) and
// every message that names a ceiling read these constants, so they cannot
// disagree (TestMessagesNameTheLimits). The engine's and the job runner's
// limits are not here: Server.limits reads them from the engine and the
// runner's configuration, where they are enforced; a few live beside the
// one use that enforces them (MaxRequestBody, mapMaxBytesOut, deliveryTTL,
// maxIdempotencyKey, maxFieldErrors, the ledger's report sizes,
// artifacts.MaxSize).
const (
	maxResponseBytes         = 1 << 20
	maxLayersPerQuery        = 10
	maxSectionsPerPurchase   = 10
	maxVertices              = 10_000 // a site geometry's positions
	maxParcels               = 200    // a cadastre selector's parcels
	maxSiteAreaM2            = 400_000
	listPageDefault          = 100
	listPageMax              = 500
	historyPageDefault       = 20
	historyPageMax           = 100
	maxLocationResults       = 10
	maxRetainedResultBytes   = 2 << 30
	maxQueuedQueries         = 100
	readsPerMinute           = 120
	queryAdmissionsPerMinute = 30
	maxPreferWaitSeconds     = 3
	maxCursorLen             = 4096
)

// maxSiteAreaHa is maxSiteAreaM2 as messages say it.
const maxSiteAreaHa = maxSiteAreaM2 / 10_000

// contextLimits are the ceilings by the names GET /context reports (a new
// map on every call: the caller adds the engine's and the runner's).
func contextLimits() map[string]int64 {
	return map[string]int64{
		"max_request_bytes":           MaxRequestBody,
		"max_response_bytes":          maxResponseBytes,
		"map_image_max_bytes":         mapMaxBytesOut,
		"map_image_width_px":          report.MapWidth,
		"map_image_height_px":         report.MapHeight,
		"max_layers_per_query":        maxLayersPerQuery,
		"max_sections_per_purchase":   maxSectionsPerPurchase,
		"max_geometry_vertices":       maxVertices,
		"max_selected_parcels":        maxParcels,
		"max_new_site_area_m2":        maxSiteAreaM2,
		"list_page_default":           listPageDefault,
		"list_page_max":               listPageMax,
		"history_page_default":        historyPageDefault,
		"history_page_max":            historyPageMax,
		"max_location_search_results": maxLocationResults,
		"max_report_section_bytes":    ledger.MaxSectionBytes,
		"max_report_sections":         ledger.MaxSections,
		"max_report_text_bytes":       ledger.MaxContentBytes,
		"max_retained_result_bytes":   maxRetainedResultBytes,
		"reads_per_minute":            readsPerMinute,
		"query_admissions_per_minute": queryAdmissionsPerMinute,
		"max_queued_queries":          maxQueuedQueries,
		"delivery_link_seconds":       int64(deliveryTTL / time.Second),
		"max_artifact_bytes":          artifacts.MaxSize,
		"max_idempotency_key_length":  maxIdempotencyKey,
		"max_prefer_wait_seconds":     maxPreferWaitSeconds,
		"max_field_errors":            maxFieldErrors,
	}
}

// byteSize says a power-of-two size as messages do: 1 MiB, 2 GiB, 8 KiB.
func byteSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// limitReads counts every authenticated GET (and HEAD) against the
// account's read budget.
func (s *Server) limitReads(r *request) error {
	if m := string(r.http.Method()); m != "GET" && m != "HEAD" {
		return nil
	}
	return s.rateLimit(r, ledger.BucketReads, s.cfg.ReadsPerMinute)
}

// rateLimit counts one event in the account's per-minute bucket.
func (s *Server) rateLimit(r *request, bucket string, perMinute int) error {
	w, err := s.led.Count(r.ctx, r.principal.AccountID, bucket, time.Minute)
	if err != nil {
		return err
	}
	return s.checkRate(r, bucket, perMinute, w)
}

// checkRate refuses a request whose count w exceeds perMinute, and keeps w
// for the RateLimit headers.
func (s *Server) checkRate(r *request, bucket string, perMinute int, w ledger.RateWindow) error {
	r.rate = rateState{set: true, limit: perMinute, w: w}
	if w.Hits <= perMinute {
		return nil
	}
	s.metrics.rateLimited.WithLabelValues(bucket).Inc()
	return &Problem{Code: CodeRateLimited, Detail: "The account's " + bucket + " limit is exhausted; retry after the Retry-After seconds.",
		RetryAfter: int(math.Ceil(w.Reset.Seconds()))}
}
