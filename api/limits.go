package api

import (
	"math"
	"time"

	"siteenv/ledger"
)

// Limits are the contract's enforced ceilings, by the names GET /context
// reports. Enforcement reads these same values. The engine's and the job
// runner's limits are not here: Server.limits reads them from the engine
// and the runner's configuration, where they are enforced.
var Limits = map[string]int64{
	"max_request_bytes":           MaxRequestBody,
	"max_response_bytes":          1 << 20,
	"map_image_max_bytes":         12 << 20,
	"map_image_width_px":          1280,
	"map_image_height_px":         900,
	"max_layers_per_query":        10,
	"max_sections_per_purchase":   10,
	"max_geometry_vertices":       10_000,
	"max_selected_parcels":        200,
	"max_new_site_area_m2":        400_000,
	"list_page_default":           100,
	"list_page_max":               500,
	"history_page_default":        20,
	"history_page_max":            100,
	"max_location_search_results": 10,
	"max_report_section_bytes":    8 << 10,
	"max_report_sections":         200,
	"max_report_text_bytes":       1 << 20,
	"max_retained_result_bytes":   2 << 30,
	"reads_per_minute":            readsPerMinute,
	"query_admissions_per_minute": queryAdmissionsPerMinute,
	"max_queued_queries":          100,
	"delivery_link_seconds":       300,
	"max_artifact_bytes":          100 << 20,
	"max_idempotency_key_length":  maxIdempotencyKey,
	"max_prefer_wait_seconds":     3,
	"max_field_errors":            maxFieldErrors,
}

const (
	readsPerMinute           = 120
	queryAdmissionsPerMinute = 30
	maxCursorLen             = 4096
)

// limitReads counts every authenticated GET (and HEAD) against the
// account's read budget.
func (s *Server) limitReads(r *request) error {
	if m := string(r.http.Method()); m != "GET" && m != "HEAD" {
		return nil
	}
	return s.rateLimit(r, ledger.BucketReads, readsPerMinute)
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
